package actor

import (
	"context"
	"slices"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// serverless makes w's pool a serverless envoy pool with max_concurrent_actors limit.
func (w *world) serverless(limit uint64) {
	w.t.Helper()
	opstest.Write(w.t, w.db, func(tx udb.Transaction) (struct{}, error) {
		cfg := keys.RunnerConfig{Serverless: &keys.ServerlessRunnerConfig{URL: "http://app/api", RequestLifespan: 3600,
			MaxConcurrentActors: limit, DrainGracePeriod: 1800, SlotsPerRunner: 1, MaxRunners: 1000}}
		keys.Set(tx, keys.RunnerConfigDataKey{Namespace: w.ns, Name: "pool"}, cfg)
		keys.Set(tx, keys.RunnerConfigProtocolVersionKey{Namespace: w.ns, Name: "pool"}, 8)
		return struct{}{}, nil
	})
}

func (w *world) poolActors() int64 {
	w.t.Helper()
	return opstest.Read(w.t, w.db, func(r udb.ReadTransaction) (int64, error) {
		n, _, err := keys.Get(ctx, r, keys.PoolActorsKey{Namespace: w.ns, Name: "pool"})
		return n, err
	})
}

// TestPoolLimit: allocations beyond max_concurrent_actors sleep with
// concurrent_actor_limit_reached and a reschedule_ts 4, 8, 16… s later; a freed slot lets
// the retry start; retries end 5 minutes after the first refusal.
func TestPoolLimit(t *testing.T) {
	w := newWorld(t)
	w.serverless(2)
	var aids []id.ID
	for range 3 {
		aid, _ := w.create(CrashSleep, nil)
		aids = append(aids, aid)
	}
	if n := w.poolActors(); n != 2 {
		t.Fatalf("pool actors = %d, want 2", n)
	}
	for _, aid := range aids[:2] {
		if st := w.state(aid); st.Phase != keys.PhaseStarting || !st.PoolSlot {
			t.Fatalf("%s: phase %s pool_slot %v, want starting and counted", aid, st.Phase, st.PoolSlot)
		}
	}
	third := aids[2]
	st := w.state(third)
	if st.Phase != keys.PhaseSleeping || string(st.Error) != `"concurrent_actor_limit_reached"` || st.RescheduleTs == nil || *st.RescheduleTs != w.now+4000 || st.PoolSlot {
		t.Fatalf("third actor: %+v", st)
	}
	// Still full at the retry: the next one is 8 s later.
	w.now += 4000
	w.run(Timer, third)
	if st := w.state(third); st.Phase != keys.PhaseSleeping || st.RescheduleTs == nil || *st.RescheduleTs != w.now+8000 {
		t.Fatalf("after the first retry: %+v", st)
	}
	// A slot frees (the first actor is destroyed before it started): the retry starts.
	opstest.Write(t, w.db, func(tx udb.Transaction) (DestroyOutput, error) {
		return Destroy(ctx, tx, Input{ActorID: aids[0], NowMs: w.now, Config: w.cfg})
	})
	w.eventsOn(ServerlessHost(w.ns, aids[0], 0), ev(aids[0], 0, 0, stoppedOK))
	if st := w.state(aids[0]); st.Phase != keys.PhaseDestroyed {
		t.Fatalf("first actor: %s", st.Phase)
	}
	if n := w.poolActors(); n != 1 {
		t.Fatalf("pool actors after a free = %d, want 1", n)
	}
	w.now += 8000
	w.run(Timer, third)
	if st := w.state(third); st.Phase != keys.PhaseStarting || st.Error != nil || st.RescheduleTs != nil || st.LimitRetries != 0 {
		t.Fatalf("after the slot freed: %+v", st)
	}
	if n := w.poolActors(); n != 2 {
		t.Fatalf("pool actors = %d, want 2", n)
	}

	// A fourth actor refused until 5 minutes have passed: then it sleeps with no retry.
	fourth, _ := w.create(CrashSleep, nil)
	first := w.now
	var waits []int64
	for {
		st := w.state(fourth)
		if st.RescheduleTs == nil {
			break
		}
		waits = append(waits, (*st.RescheduleTs-w.now)/1000)
		w.now = *st.RescheduleTs
		w.run(Timer, fourth)
	}
	if want := []int64{4, 8, 16, 32, 64, 128, 256}; !slices.Equal(waits, want) {
		t.Fatalf("waits %v s, want %v", waits, want)
	}
	if st := w.state(fourth); st.Phase != keys.PhaseSleeping || string(st.Error) != `"concurrent_actor_limit_reached"` || w.now-first < 300_000 {
		t.Fatalf("after giving up: %+v, %d ms", st, w.now-first)
	}
	// A wake still tries (and is refused again, starting a new series of retries).
	w.run(Wake, fourth)
	if st := w.state(fourth); st.RescheduleTs == nil || *st.RescheduleTs != w.now+4000 {
		t.Fatalf("wake after giving up: %+v", st)
	}
	// Sleep cancels the retries.
	w.run(Sleep, fourth)
	if st := w.state(fourth); st.RescheduleTs != nil || st.TimerTs() != nil {
		t.Fatalf("after sleep: %+v", st)
	}
}

// run runs transition f on aid now.
func (w *world) run(f func(context.Context, udb.Transaction, Input) (Effects, error), aid id.ID) Effects {
	w.t.Helper()
	return w.do(func(tx udb.Transaction, in Input) (Effects, error) { return f(ctx, tx, in) }, aid)
}
