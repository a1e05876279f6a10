package actor

import (
	"context"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	oprunner "github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

var ctx = context.Background()

// world is a store with a namespace, a pool "pool" with its config, and a clock.
type world struct {
	t   *testing.T
	db  udb.Database
	ns  id.ID
	now int64
	cfg Config
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, db: opstest.Open(t), ns: id.New(1), now: 1_000_000, cfg: DefaultConfig()}
	w.cfg.Jitter = func(int64) int64 { return 0 }
	opstest.Write(t, w.db, func(tx udb.Transaction) (keys.RunnerConfig, error) {
		return runnerconfig.Ensure(ctx, tx, runnerconfig.EnsureInput{Namespace: w.ns, Name: "pool"})
	})
	return w
}

// runner registers a runner of the pool with slots slots, pinged now.
func (w *world) runner(key string, slots uint32) id.ID {
	w.t.Helper()
	in := oprunner.RegisterInput{Namespace: w.ns, Name: "pool", Key: key, Version: 1, TotalSlots: slots, ProtocolVersion: 7,
		ConnID: id.New(1), NewRunnerID: id.New(1), NowMs: w.now}
	return opstest.Write(w.t, w.db, func(tx udb.Transaction) (oprunner.RegisterOutput, error) {
		return oprunner.Register(ctx, tx, in)
	}).RunnerID
}

func (w *world) create(policy string, key *string) (id.ID, Effects) {
	w.t.Helper()
	aid := id.New(1)
	out := opstest.Write(w.t, w.db, func(tx udb.Transaction) (CreateOutput, error) {
		return Create(ctx, tx, CreateInput{Namespace: w.ns, NamespaceName: "default", ActorID: aid, Name: "counter", Key: key,
			Input: []byte("in"), Selector: "pool", CrashPolicy: policy, NowMs: w.now, Datacenter: "dc", Config: w.cfg})
	})
	return aid, out.Effects
}

func (w *world) state(aid id.ID) keys.ActorState {
	w.t.Helper()
	return opstest.Read(w.t, w.db, func(r udb.ReadTransaction) (keys.ActorState, error) {
		st, _, err := state(ctx, r, aid)
		return st, err
	})
}

func (w *world) events(rid id.ID, evs ...Event) EventsOutput {
	w.t.Helper()
	return w.eventsOn(RunnerHost(rid), evs...)
}

func (w *world) eventsOn(h Host, evs ...Event) EventsOutput {
	w.t.Helper()
	return opstest.Write(w.t, w.db, func(tx udb.Transaction) (EventsOutput, error) {
		return ApplyEvents(ctx, tx, EventsInput{Host: h, Events: evs, NowMs: w.now, Config: w.cfg})
	})
}

func (w *world) do(f func(tx udb.Transaction, in Input) (Effects, error), aid id.ID) Effects {
	w.t.Helper()
	return opstest.Write(w.t, w.db, func(tx udb.Transaction) (Effects, error) {
		return f(tx, Input{ActorID: aid, NowMs: w.now, Config: w.cfg})
	})
}

func (w *world) remaining(rid id.ID) uint32 {
	w.t.Helper()
	return opstest.Read(w.t, w.db, func(r udb.ReadTransaction) (uint32, error) {
		v, _, err := keys.Get(ctx, r, keys.RunnerRemainingSlotsKey{RunnerID: rid})
		return v, err
	})
}

func ev(aid id.ID, gen uint32, idx int64, e Event) Event {
	e.Checkpoint = Checkpoint{ActorID: aid, Generation: gen, Index: idx}
	return e
}

var (
	running    = Event{Kind: EventRunning}
	stoppedOK  = Event{Kind: EventStopped}
	stoppedErr = Event{Kind: EventStopped, Crashed: true}
	wantSleep  = Event{Kind: EventSleepIntent}
	wantStop   = Event{Kind: EventStopIntent}
)

// commandsFor returns the kinds of the commands in eff for runner rid: "start@gen/idx".
func commandsFor(eff Effects, rid id.ID) []string { return commandsOn(eff, RunnerHost(rid)) }

// commandsOn is commandsFor for any host.
func commandsOn(eff Effects, h Host) []string {
	var out []string
	for _, c := range eff.Commands {
		if c.Host != h {
			continue
		}
		kind := "stop"
		if c.Start != nil {
			kind = "start"
		}
		out = append(out, kind+"@"+itoa(int64(c.Checkpoint.Generation))+"/"+itoa(c.Checkpoint.Index))
	}
	return out
}

func itoa(v int64) string {
	if v < 0 {
		return "-" + itoa(-v)
	}
	if v < 10 {
		return string(rune('0' + v))
	}
	return itoa(v/10) + string(rune('0'+v%10))
}

func strp(s string) *string { return &s }
