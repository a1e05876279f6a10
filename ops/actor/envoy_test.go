package actor

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/berthhq/berth/keys"
	openvoy "github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// envoy registers an envoy of the pool, pinged now, and returns it as a host.
func (w *world) envoy(key string, version uint32) Host {
	w.t.Helper()
	opstest.Write(w.t, w.db, func(tx udb.Transaction) (openvoy.RegisterOutput, error) {
		return openvoy.Register(ctx, tx, openvoy.RegisterInput{Namespace: w.ns, EnvoyKey: key, PoolName: "pool", Version: version,
			ProtocolVersion: 8, ConnID: id.New(1), NowMs: w.now})
	})
	return EnvoyHost(w.ns, key)
}

func (w *world) ping(h Host) {
	w.t.Helper()
	opstest.Write(w.t, w.db, func(tx udb.Transaction) (keys.Empty, error) {
		keys.Set(tx, keys.EnvoyLastPingTsKey{Namespace: h.Namespace, EnvoyKey: h.EnvoyKey}, w.now)
		return keys.Empty{}, nil
	})
}

func (w *world) slots(h Host) int64 {
	w.t.Helper()
	return opstest.Read(w.t, w.db, func(r udb.ReadTransaction) (int64, error) {
		v, _, err := keys.Get(ctx, r, keys.EnvoySlotsKey{Namespace: h.Namespace, EnvoyKey: h.EnvoyKey})
		return v, err
	})
}

// A pool with envoys places on an envoy: the start command goes to it, the actor records
// its envoy, events from it apply, the stop carries the envoy reason, and the actor's
// sleep frees its slot.
func TestEnvoyHostedLifecycle(t *testing.T) {
	w := newWorld(t)
	h := w.envoy("envoy-a", 1)
	aid, eff := w.create(CrashRestart, nil)
	if got := commandsOn(eff, h); !slices.Equal(got, []string{"start@0/0"}) {
		t.Fatalf("create commands %v, want start@0/0 to the envoy", got)
	}
	st := w.state(aid)
	if st.Phase != keys.PhaseStarting || st.EnvoyKey == nil || *st.EnvoyKey != "envoy-a" || st.RunnerID != nil || w.slots(h) != 1 {
		t.Fatalf("after create: %+v, slots %d", st, w.slots(h))
	}
	// An event from a runner (or another envoy) does not apply.
	if out := w.eventsOn(EnvoyHost(w.ns, "envoy-b"), ev(aid, 0, 0, running)); len(out.Effects.Ready) != 0 {
		t.Fatal("an event from another host applied")
	}
	out := w.eventsOn(h, ev(aid, 0, 0, running))
	st = w.state(aid)
	if st.Phase != keys.PhaseRunning || st.LivenessTs == nil || *st.LivenessTs != w.now+w.cfg.EnvoyLostThreshold.Milliseconds() || len(out.Effects.Ready) != 1 {
		t.Fatalf("after running: %+v; want running with a liveness check due", st)
	}
	out = w.eventsOn(h, ev(aid, 0, 1, wantSleep))
	if len(out.Effects.Commands) != 1 || out.Effects.Commands[0].StopReason != StopReasonSleep {
		t.Fatalf("sleep intent commands %+v", out.Effects.Commands)
	}
	replay := opstest.Read(t, w.db, func(r udb.ReadTransaction) ([]Command, error) { return Replay(ctx, r, h) })
	if len(replay) != 1 || replay[0].StopReason != StopReasonSleep {
		t.Fatalf("replay %+v; want the stored stop with its reason", replay)
	}
	w.eventsOn(h, ev(aid, 0, 2, stoppedOK))
	if st := w.state(aid); st.Phase != keys.PhaseSleeping || st.EnvoyKey != nil || w.slots(h) != 0 {
		t.Fatalf("after the stop: %+v, slots %d", st, w.slots(h))
	}
}

// A running actor whose envoy stops pinging is lost at its liveness check: told to stop
// (reason lost) and asleep with envoy_connection_lost, whatever its crash policy; the next
// wake places it on a live envoy.
func TestEnvoyLostActorSleeps(t *testing.T) {
	w := newWorld(t)
	a := w.envoy("envoy-a", 1)
	aid, _ := w.create(CrashRestart, nil)
	w.eventsOn(a, ev(aid, 0, 0, running))
	timer := func() Effects {
		return w.do(func(tx udb.Transaction, in Input) (Effects, error) { return Timer(ctx, tx, in) }, aid)
	}
	w.now += w.cfg.EnvoyLostThreshold.Milliseconds()
	w.ping(a)
	timer()
	if st := w.state(aid); st.Phase != keys.PhaseRunning || *st.LivenessTs != w.now+w.cfg.EnvoyLostThreshold.Milliseconds() {
		t.Fatalf("after a check with a fresh ping: %+v", st)
	}
	w.now += w.cfg.EnvoyLostThreshold.Milliseconds() + 1
	eff := timer()
	st := w.state(aid)
	var e map[string]map[string]string
	_ = json.Unmarshal(st.Error, &e)
	if st.Phase != keys.PhaseSleeping || e["envoy_connection_lost"]["envoy_key"] != "envoy-a" {
		t.Fatalf("after the envoy went quiet: %+v (error %s)", st, st.Error)
	}
	if len(eff.Commands) != 1 || eff.Commands[0].StopReason != StopReasonLost || eff.Commands[0].Host != a {
		t.Fatalf("loss commands %+v; want a lost stop to the old envoy", eff.Commands)
	}
	b := w.envoy("envoy-b", 1)
	eff = w.do(func(tx udb.Transaction, in Input) (Effects, error) { return Wake(ctx, tx, in) }, aid)
	if got := commandsOn(eff, b); !slices.Equal(got, []string{"start@1/0"}) {
		t.Fatalf("wake commands %+v; want a start on envoy-b", eff.Commands)
	}
}

// Going away (the envoy stops): the actor is stopped with reason going_away and placed on
// another envoy once stopped; the last actor leaving a stopping envoy stops it.
func TestEnvoyGoingAway(t *testing.T) {
	w := newWorld(t)
	a := w.envoy("envoy-a", 1)
	aid, _ := w.create(CrashSleep, nil)
	w.eventsOn(a, ev(aid, 0, 0, running))
	b := w.envoy("envoy-b", 1)
	opstest.Write(t, w.db, func(tx udb.Transaction) (openvoy.DrainOutput, error) {
		return openvoy.Drain(ctx, tx, openvoy.DrainInput{Namespace: w.ns, EnvoyKey: "envoy-a", NowMs: w.now})
	})
	eff := opstest.Write(t, w.db, func(tx udb.Transaction) (Effects, error) {
		return GoingAway(ctx, tx, a, []id.ID{aid}, w.now, w.cfg)
	})
	if len(eff.Commands) != 1 || eff.Commands[0].StopReason != StopReasonGoingAway {
		t.Fatalf("going away commands %+v", eff.Commands)
	}
	out := w.eventsOn(a, ev(aid, 0, 1, stoppedOK))
	if got := commandsOn(out.Effects, b); !slices.Equal(got, []string{"start@1/0"}) {
		t.Fatalf("after the stop: %+v; want a start on envoy-b", out.Effects.Commands)
	}
	if !slices.Equal(out.Effects.StoppedEnvoys, []Host{a}) {
		t.Fatalf("stopped envoys %v; want envoy-a (stopping, now empty)", out.Effects.StoppedEnvoys)
	}
}

// Placement spread: 1,000 actors over 10 envoys, none above 1.5× the mean, with both
// strategies; an older version gets none.
func TestEnvoyPlacementSpread(t *testing.T) {
	for _, strategy := range openvoy.Strategies {
		t.Run(strategy, func(t *testing.T) {
			w := newWorld(t)
			r := rand.New(rand.NewPCG(1, 2))
			w.cfg.Jitter = func(n int64) int64 { return r.Int64N(n) }
			w.cfg.EnvoyPlacement = strategy
			var hosts []Host
			for i := range 10 {
				hosts = append(hosts, w.envoy(fmt.Sprintf("envoy-%02d", i), 2))
			}
			old := w.envoy("envoy-old", 1)
			for range 1000 {
				w.create(CrashSleep, nil)
			}
			for _, h := range hosts {
				if n := w.slots(h); n > 150 || n < 50 {
					t.Errorf("%s has %d actors; want 50..150 (mean 100)", h.EnvoyKey, n)
				}
			}
			if n := w.slots(old); n != 0 {
				t.Errorf("the older version got %d actors", n)
			}
		})
	}
}

// An envoy lost while its actor is stopping (a sleep under way): the liveness check does not
// wait for the 30-minute stop threshold; the actor sleeps at once, as it asked, without error.
func TestEnvoyLostWhileStopping(t *testing.T) {
	w := newWorld(t)
	a := w.envoy("envoy-a", 1)
	aid, _ := w.create(CrashRestart, nil)
	w.eventsOn(a, ev(aid, 0, 0, running))
	w.eventsOn(a, ev(aid, 0, 1, wantSleep))
	st := w.state(aid)
	if st.Phase != keys.PhaseStopping || st.TimerTs() == nil || *st.TimerTs() != w.now+w.cfg.EnvoyLostThreshold.Milliseconds() {
		t.Fatalf("stopping: %+v; want the liveness check as its timer", st)
	}
	w.now += w.cfg.EnvoyLostThreshold.Milliseconds() + 1
	w.do(func(tx udb.Transaction, in Input) (Effects, error) { return Timer(ctx, tx, in) }, aid)
	if st := w.state(aid); st.Phase != keys.PhaseSleeping || st.Error != nil || st.LivenessTs != nil || w.slots(a) != 0 {
		t.Fatalf("after the envoy went quiet: %+v", st)
	}
}

// A pool of envoys with none alive: a sleep-policy actor sleeps with no_envoys (Rivet's
// error), not no_capacity.
func TestNoEnvoys(t *testing.T) {
	w := newWorld(t)
	w.envoy("envoy-a", 1)
	w.now += w.cfg.EnvoyEligibleThreshold.Milliseconds() + 1
	aid, _ := w.create(CrashSleep, nil)
	if st := w.state(aid); st.Phase != keys.PhaseSleeping || string(st.Error) != `"no_envoys"` {
		t.Fatalf("%+v (error %s); want sleeping with no_envoys", st, st.Error)
	}
}
