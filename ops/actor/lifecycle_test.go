package actor

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actorkv"
	"github.com/berthhq/berth/ops/internal/opstest"
	oprunner "github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Create → start command → Running → sleep intent → stop command → Stopped(ERROR) sleeps
// (runner 2.2.1's sleep stop) → wake starts generation 1.
func TestCreateRunSleepWake(t *testing.T) {
	w := newWorld(t)
	rid := w.runner("r1", 2)
	aid, eff := w.create(CrashSleep, nil)
	if got := commandsFor(eff, rid); !slices.Equal(got, []string{"start@0/0"}) {
		t.Fatalf("create commands %v, want start@0/0", got)
	}
	start := eff.Commands[0].Start
	if start == nil || start.Name != "counter" || string(start.Input) != "in" || start.CreateTs != w.now {
		t.Fatalf("start %+v", start)
	}
	if st := w.state(aid); st.Phase != keys.PhaseStarting || *st.RunnerID != rid || w.remaining(rid) != 1 {
		t.Fatalf("after create: %+v, remaining %d", st, w.remaining(rid))
	}
	w.now += 5
	out := w.events(rid, ev(aid, 0, 0, running))
	if st := w.state(aid); st.Phase != keys.PhaseRunning || *st.ConnectableTs != w.now || *st.StartTs != w.now || !slices.Equal(out.Effects.Ready, []id.ID{aid}) {
		t.Fatalf("after running: %+v, effects %+v", st, out.Effects)
	}
	if len(out.Acks) != 1 || out.Acks[0].Index != 0 {
		t.Fatalf("acks %+v", out.Acks)
	}
	// The same event again (resent after a reconnect) changes nothing.
	if again := w.events(rid, ev(aid, 0, 0, running)); len(again.Effects.Ready) != 0 {
		t.Fatal("a resent Running event applied twice")
	}
	out = w.events(rid, ev(aid, 0, 1, wantSleep))
	if got := commandsFor(out.Effects, rid); !slices.Equal(got, []string{"stop@0/1"}) {
		t.Fatalf("sleep intent commands %v", got)
	}
	w.now += 5
	w.events(rid, ev(aid, 0, 2, stoppedErr))
	st := w.state(aid)
	if st.Phase != keys.PhaseSleeping || st.SleepTs == nil || st.Error != nil || st.RunnerID != nil || w.remaining(rid) != 2 {
		t.Fatalf("after the sleep stop: %+v (remaining %d); want sleeping, no error, slot freed", st, w.remaining(rid))
	}
	eff = w.do(func(tx udb.Transaction, in Input) (Effects, error) { return Wake(ctx, tx, in) }, aid)
	if got := commandsFor(eff, rid); !slices.Equal(got, []string{"start@1/0"}) {
		t.Fatalf("wake commands %v, want start@1/0", got)
	}
	if st := w.state(aid); st.Phase != keys.PhaseStarting || st.SleepTs != nil || st.Generation != 1 {
		t.Fatalf("after wake: %+v", st)
	}
	// An event of the old generation is ignored.
	w.events(rid, ev(aid, 0, 9, stoppedErr))
	if st := w.state(aid); st.Phase != keys.PhaseStarting {
		t.Fatalf("a stale-generation event applied: %+v", st)
	}
}

func TestCrashPolicies(t *testing.T) {
	t.Run("restart", func(t *testing.T) {
		w := newWorld(t)
		rid := w.runner("r1", 4)
		aid, _ := w.create(CrashRestart, nil)
		w.events(rid, ev(aid, 0, 0, running), ev(aid, 0, 1, stoppedErr))
		st := w.state(aid)
		if st.Phase != keys.PhaseStarting || st.Generation != 1 || st.Error != nil {
			t.Fatalf("first crash: %+v; want restarted at once (gen 1)", st)
		}
		w.events(rid, ev(aid, 1, 0, running), ev(aid, 1, 1, stoppedErr))
		st = w.state(aid)
		if st.Phase != keys.PhaseRescheduling || st.RescheduleTs == nil || *st.RescheduleTs != w.now+2000 || st.Error == nil {
			t.Fatalf("second crash: %+v; want a 2 s backoff with the error kept", st)
		}
		w.now += 2000
		eff := w.do(func(tx udb.Transaction, in Input) (Effects, error) { return Timer(ctx, tx, in) }, aid)
		if got := commandsFor(eff, rid); !slices.Equal(got, []string{"start@2/0"}) {
			t.Fatalf("after the backoff: %v", got)
		}
	})
	t.Run("sleep", func(t *testing.T) {
		w := newWorld(t)
		rid := w.runner("r1", 4)
		aid, _ := w.create(CrashSleep, nil)
		msg := "boom"
		w.events(rid, ev(aid, 0, 0, running), ev(aid, 0, 1, Event{Kind: EventStopped, Crashed: true, Message: &msg}))
		if st := w.state(aid); st.Phase != keys.PhaseSleeping || string(st.Error) != `{"crashed":{"message":"boom"}}` {
			t.Fatalf("crash: %+v %s", st, st.Error)
		}
	})
	t.Run("destroy", func(t *testing.T) {
		w := newWorld(t)
		rid := w.runner("r1", 4)
		aid, _ := w.create(CrashDestroy, strp("k"))
		out := w.events(rid, ev(aid, 0, 0, running), ev(aid, 0, 1, stoppedErr))
		if st := w.state(aid); st.Phase != keys.PhaseDestroyed || st.DestroyTs == nil || !slices.Equal(out.Effects.Destroyed, []id.ID{aid}) {
			t.Fatalf("crash: %+v", st)
		}
		// The key is free again.
		w.create(CrashDestroy, strp("k"))
	})
	t.Run("graceful exit destroys", func(t *testing.T) {
		w := newWorld(t)
		rid := w.runner("r1", 4)
		aid, _ := w.create(CrashRestart, nil)
		w.events(rid, ev(aid, 0, 0, running), ev(aid, 0, 1, wantStop))
		w.events(rid, ev(aid, 0, 2, stoppedOK))
		if st := w.state(aid); st.Phase != keys.PhaseDestroyed {
			t.Fatalf("after a stop intent: %+v", st)
		}
	})
}

// With no capacity, a restart-policy actor waits in the queue and is placed, in creation
// order, when a runner appears; a sleep-policy one sleeps with no_capacity.
func TestPendingQueue(t *testing.T) {
	w := newWorld(t)
	first, _ := w.create(CrashRestart, nil)
	w.now++
	second, _ := w.create(CrashRestart, nil)
	sleeper, _ := w.create(CrashSleep, nil)
	if st := w.state(sleeper); st.Phase != keys.PhaseSleeping || string(st.Error) != `"no_capacity"` {
		t.Fatalf("sleep policy without capacity: %+v", st)
	}
	for _, aid := range []id.ID{first, second} {
		if st := w.state(aid); st.Phase != keys.PhasePending || st.PendingTs == nil {
			t.Fatalf("restart policy without capacity: %+v", st)
		}
	}
	rid := w.runner("r1", 1)
	out := opstest.Write(t, w.db, func(tx udb.Transaction) (PlacePendingOutput, error) {
		return PlacePending(ctx, tx, PlacePendingInput{Pool: Pool{Namespace: w.ns, Selector: "pool"}, Limit: 16, NowMs: w.now, Config: w.cfg})
	})
	if len(out.Effects.Commands) != 1 || out.Effects.Commands[0].Checkpoint.ActorID != first || out.More {
		t.Fatalf("queue moved %+v; want the first actor placed, the second waiting", out)
	}
	if st := w.state(second); st.Phase != keys.PhasePending {
		t.Fatalf("second: %+v", st)
	}
	// A new actor queues behind the waiting one, even with capacity (fairness).
	w.runner("r2", 1)
	third, _ := w.create(CrashRestart, nil)
	if st := w.state(third); st.Phase != keys.PhasePending {
		t.Fatalf("third jumped the queue: %+v", st)
	}
	_ = rid
}

// API destroy of a running actor stops it first and destroys it once stopped; a live key
// is taken; GetOrCreate returns the holder.
func TestDestroyAndKeys(t *testing.T) {
	w := newWorld(t)
	rid := w.runner("r1", 4)
	aid, _ := w.create(CrashSleep, strp("k"))
	if _, err := opstest.Transact(w.db, func(tx udb.Transaction) (CreateOutput, error) {
		return Create(ctx, tx, CreateInput{Namespace: w.ns, ActorID: id.New(1), Name: "counter", Key: strp("k"), Selector: "pool",
			CrashPolicy: CrashSleep, NowMs: w.now, Config: w.cfg})
	}); !rerr.Is(err, rerr.CodeActorDuplicateKey) {
		t.Fatalf("second create with the key: %v", err)
	}
	goc := opstest.Write(t, w.db, func(tx udb.Transaction) (GetOrCreateOutput, error) {
		return GetOrCreate(ctx, tx, CreateInput{Namespace: w.ns, ActorID: id.New(1), Name: "counter", Key: strp("k"), Selector: "pool",
			CrashPolicy: CrashSleep, NowMs: w.now, Config: w.cfg})
	})
	if goc.Created || goc.Actor.ActorID != aid {
		t.Fatalf("GetOrCreate = %+v, want the existing actor", goc)
	}
	w.events(rid, ev(aid, 0, 0, running))
	d := opstest.Write(t, w.db, func(tx udb.Transaction) (DestroyOutput, error) {
		return Destroy(ctx, tx, Input{ActorID: aid, NowMs: w.now, Config: w.cfg})
	})
	if d.Done || !slices.Equal(commandsFor(d.Effects, rid), []string{"stop@0/1"}) {
		t.Fatalf("destroy of a running actor: %+v", d)
	}
	w.events(rid, ev(aid, 0, 1, stoppedErr)) // runner 2.2.1 reports ERROR for an API destroy
	if st := w.state(aid); st.Phase != keys.PhaseDestroyed {
		t.Fatalf("after the stop: %+v", st)
	}
	d = opstest.Write(t, w.db, func(tx udb.Transaction) (DestroyOutput, error) {
		return Destroy(ctx, tx, Input{ActorID: aid, NowMs: w.now, Config: w.cfg})
	})
	if !d.Done || len(d.Effects.Commands) != 0 {
		t.Fatalf("second destroy: %+v", d)
	}
}

// A drain stops every actor of the runner; once stopped each goes by its crash policy, as
// on Rivet (a stop while going away): sleep-policy actors sleep without an error even with
// another runner free, restart-policy ones are placed on another runner, destroy-policy ones
// are destroyed. The drained runner stops when its last actor has left. Lost actors follow
// their policy.
func TestDrainAndLoss(t *testing.T) {
	w := newWorld(t)
	r1 := w.runner("r1", 4)
	a, _ := w.create(CrashSleep, nil)
	restart, _ := w.create(CrashRestart, nil)
	destroy, _ := w.create(CrashDestroy, nil)
	w.events(r1, ev(a, 0, 0, running), ev(restart, 0, 0, running), ev(destroy, 0, 0, running))
	r2 := w.runner("r2", 4)
	eff := opstest.Write(t, w.db, func(tx udb.Transaction) (Effects, error) {
		if _, err := oprunner.Drain(ctx, tx, oprunner.DrainInput{RunnerID: r1, NowMs: w.now}); err != nil {
			return Effects{}, err
		}
		return GoingAway(ctx, tx, RunnerHost(r1), []id.ID{a, restart, destroy}, w.now, w.cfg)
	})
	if got := commandsFor(eff, r1); !slices.Equal(got, []string{"stop@0/1", "stop@0/1", "stop@0/1"}) {
		t.Fatalf("going away: %v", got)
	}
	// A draining runner 2.2.1 reports OK.
	w.events(r1, ev(destroy, 0, 1, stoppedOK))
	if st := w.state(destroy); st.Phase != keys.PhaseDestroyed || st.Error != nil {
		t.Fatalf("destroy policy after the drain: %+v", st)
	}
	out := w.events(r1, ev(restart, 0, 1, stoppedOK))
	if got := commandsFor(out.Effects, r2); !slices.Equal(got, []string{"start@1/0"}) {
		t.Fatalf("restart policy after the drain: %+v; want a start on r2", out.Effects)
	}
	out = w.events(r1, ev(a, 0, 1, stoppedOK))
	if st := w.state(a); st.Phase != keys.PhaseSleeping || st.Error != nil || st.SleepTs == nil {
		t.Fatalf("sleep policy after the drain: %+v", st)
	}
	if !slices.Equal(out.Effects.StoppedRunners, []id.ID{r1}) {
		t.Fatalf("after the last stop: %+v; want r1 stopped", out.Effects)
	}
	// The next request wakes it, on r2.
	wake := opstest.Write(t, w.db, func(tx udb.Transaction) (Effects, error) {
		return Wake(ctx, tx, Input{ActorID: a, NowMs: w.now, Config: w.cfg})
	})
	if got := commandsFor(wake, r2); !slices.Equal(got, []string{"start@1/0"}) {
		t.Fatalf("wake after the drain: %v", got)
	}
	w.events(r2, ev(a, 1, 0, running))
	// r2 is lost: the sleep-policy actor sleeps with runner_connection_lost.
	lost := opstest.Write(t, w.db, func(tx udb.Transaction) (Effects, error) {
		exp, err := oprunner.Expire(ctx, tx, oprunner.ExpireInput{RunnerID: r2, NowMs: w.now})
		if err != nil {
			return Effects{}, err
		}
		return Lost(ctx, tx, RunnerHost(r2), exp.Lost, LostRunnerConnection, w.now, w.cfg)
	})
	_ = lost
	if st := w.state(a); st.Phase != keys.PhaseSleeping || string(st.Error) != `{"runner_connection_lost":{"runner_id":"`+r2.String()+`"}}` {
		t.Fatalf("after the loss: %+v %s", st, st.Error)
	}
}

// Commands are stored until acknowledged; a reconnect replays the start of an actor not
// yet running, never the start of a running one.
func TestCommandsReplayAndAck(t *testing.T) {
	w := newWorld(t)
	rid := w.runner("r1", 4)
	starting, _ := w.create(CrashSleep, nil)
	running1, _ := w.create(CrashSleep, nil)
	w.events(rid, ev(running1, 0, 0, running))
	replay := func() []Command {
		return opstest.Read(t, w.db, func(r udb.ReadTransaction) ([]Command, error) { return Replay(ctx, r, RunnerHost(rid)) })
	}
	got := replay()
	if len(got) != 1 || got[0].Checkpoint.ActorID != starting {
		t.Fatalf("replay %+v; want only the starting actor's start", got)
	}
	if s := got[0].Start; s == nil || string(s.Input) != "in" {
		t.Fatalf("replayed %+v", got[0])
	}
	opstest.Write(t, w.db, func(tx udb.Transaction) (any, error) {
		return nil, AckCommands(ctx, tx, AckCommandsInput{Host: RunnerHost(rid), Checkpoints: []Checkpoint{got[0].Checkpoint}})
	})
	if got := replay(); len(got) != 0 {
		t.Fatalf("replay after ack %+v", got)
	}
}

// A start that takes longer than the start threshold is lost (runner_no_response); an
// alarm wakes a sleeping actor.
func TestTimers(t *testing.T) {
	w := newWorld(t)
	rid := w.runner("r1", 4)
	aid, _ := w.create(CrashSleep, nil)
	due := func() []id.ID {
		return opstest.Read(t, w.db, func(r udb.ReadTransaction) ([]id.ID, error) { return DueTimers(ctx, r, w.now+1, 10) })
	}
	if got := due(); len(got) != 0 {
		t.Fatalf("due before the threshold: %v", got)
	}
	w.now += w.cfg.ActorStartThreshold.Milliseconds()
	if got := due(); !slices.Equal(got, []id.ID{aid}) {
		t.Fatalf("due = %v", got)
	}
	w.do(func(tx udb.Transaction, in Input) (Effects, error) { return Timer(ctx, tx, in) }, aid)
	st := w.state(aid)
	if st.Phase != keys.PhaseSleeping || string(st.Error) != `{"runner_no_response":{"runner_id":"`+rid.String()+`"}}` {
		t.Fatalf("after the start timeout: %+v %s", st, st.Error)
	}
	// Wake (the runner reconnects, so it is eligible again), run, set an alarm, sleep:
	// the alarm wakes it.
	w.runner("r1", 4)
	w.do(func(tx udb.Transaction, in Input) (Effects, error) { return Wake(ctx, tx, in) }, aid)
	alarm := w.now + 500
	w.events(rid, ev(aid, 1, 0, running), ev(aid, 1, 1, Event{Kind: EventSetAlarm, AlarmTs: &alarm}), ev(aid, 1, 2, wantSleep))
	w.events(rid, ev(aid, 1, 3, stoppedErr))
	if st := w.state(aid); st.Phase != keys.PhaseSleeping || st.AlarmTs == nil {
		t.Fatalf("asleep with an alarm: %+v", st)
	}
	w.now = alarm
	w.runner("r1", 4)
	if got := due(); !slices.Equal(got, []id.ID{aid}) {
		t.Fatalf("alarm not due: %v", got)
	}
	eff := w.do(func(tx udb.Transaction, in Input) (Effects, error) { return Timer(ctx, tx, in) }, aid)
	if got := commandsFor(eff, rid); !slices.Equal(got, []string{"start@2/0"}) {
		t.Fatalf("alarm wake: %v", got)
	}
}

// Two get-or-creates of one key racing create exactly one actor; two creates racing for a
// runner's last slot place exactly one there.
func TestConcurrentCreates(t *testing.T) {
	w := newWorld(t)
	w.runner("r1", 1)
	in := func() CreateInput {
		return CreateInput{Namespace: w.ns, ActorID: id.New(1), Name: "counter", Key: strp("k"), Selector: "pool",
			CrashPolicy: CrashRestart, NowMs: w.now, Config: w.cfg}
	}
	a, b := opstest.Begin(t, w.db), opstest.Begin(t, w.db)
	outA, errA := GetOrCreate(ctx, a.Tx(), in())
	outB, errB := GetOrCreate(ctx, b.Tx(), in())
	if errA != nil || errB != nil || !outA.Created || !outB.Created {
		t.Fatalf("both see no holder at first: %v %v", errA, errB)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	err := b.Retry(b.Commit(), func(tx udb.Transaction) error {
		var err error
		outB, err = GetOrCreate(ctx, tx, in())
		return err
	})
	if err != nil || outB.Created || outB.Actor.ActorID != outA.Actor.ActorID {
		t.Fatalf("the second get-or-create, retried: %+v, %v; want the first's actor", outB, err)
	}
	// The single slot went to the first actor; a second one waits.
	other, _ := w.create(CrashRestart, nil)
	if st := w.state(other); st.Phase != keys.PhasePending {
		t.Fatalf("second actor with no slot left: %+v", st)
	}
}

// Destroying an actor drops its KV.
func TestDestroyDropsKV(t *testing.T) {
	w := newWorld(t)
	w.runner("r1", 4)
	aid, _ := w.create(CrashSleep, nil)
	opstest.Write(t, w.db, func(tx udb.Transaction) (any, error) {
		return nil, actorkv.Put(ctx, tx, actorkv.PutInput{ActorID: aid, Keys: [][]byte{[]byte("k")}, Values: [][]byte{[]byte("v")}, NowMs: w.now})
	})
	w.do(func(tx udb.Transaction, in Input) (Effects, error) { return Sleep(ctx, tx, in) }, aid)
	d := opstest.Write(t, w.db, func(tx udb.Transaction) (DestroyOutput, error) {
		return Destroy(ctx, tx, Input{ActorID: aid, NowMs: w.now, Config: w.cfg})
	})
	if d.Done {
		t.Fatal("a stopping actor destroyed before it stopped")
	}
	// Sleep sent a stop; the destroy takes it over. Once stopped, it is destroyed and its KV gone.
	st := w.state(aid)
	w.events(*st.RunnerID, ev(aid, 0, 0, stoppedErr))
	if st := w.state(aid); st.Phase != keys.PhaseDestroyed {
		t.Fatalf("phase %s", st.Phase)
	}
	left := opstest.Read(t, w.db, func(r udb.ReadTransaction) ([]actorkv.Entry, error) {
		return actorkv.Get(ctx, r, actorkv.GetInput{ActorID: aid, Keys: [][]byte{[]byte("k")}})
	})
	if len(left) != 0 {
		t.Fatalf("KV after destroy: %+v", left)
	}
}

// sleep_ts is set exactly while the actor sleeps.
func TestSleepTsClearedWhenNotSleeping(t *testing.T) {
	w := newWorld(t)
	aid, _ := w.create(CrashRestart, nil) // no runner: pending
	w.do(func(tx udb.Transaction, in Input) (Effects, error) { return Sleep(ctx, tx, in) }, aid)
	if st := w.state(aid); st.Phase != keys.PhaseSleeping || st.SleepTs == nil {
		t.Fatalf("asleep: phase %s, sleep_ts %v", st.Phase, st.SleepTs)
	}
	w.do(func(tx udb.Transaction, in Input) (Effects, error) { return Wake(ctx, tx, in) }, aid)
	if st := w.state(aid); st.Phase != keys.PhasePending || st.SleepTs != nil {
		t.Errorf("woken into the queue: phase %s, sleep_ts %v", st.Phase, st.SleepTs)
	}
	opstest.Write(t, w.db, func(tx udb.Transaction) (DestroyOutput, error) {
		return Destroy(ctx, tx, Input{ActorID: aid, NowMs: w.now, Config: w.cfg})
	})
	if st := w.state(aid); st.Phase != keys.PhaseDestroyed || st.SleepTs != nil {
		t.Errorf("destroyed: phase %s, sleep_ts %v", st.Phase, st.SleepTs)
	}
}

// The hibernating WebSockets of an actor kept alive recently are restored at its start;
// stale ones are dropped.
func TestStartRestoresHibernatingRequests(t *testing.T) {
	w := newWorld(t)
	rid := w.runner("r1", 4)
	aid, _ := w.create(CrashSleep, nil)
	w.events(rid, ev(aid, 0, 0, running), ev(aid, 0, 1, wantSleep))
	fresh := HibernatingInput{ActorID: aid, GatewayID: [4]byte{1, 2, 3, 4}, RequestID: [4]byte{5, 6, 7, 8}, NowMs: w.now}
	stale := HibernatingInput{ActorID: aid, GatewayID: [4]byte{9}, RequestID: [4]byte{9}, NowMs: w.now - w.cfg.HibernatingRequestEligibleThreshold.Milliseconds() - 1}
	opstest.Write(t, w.db, func(tx udb.Transaction) (any, error) {
		SetHibernating(tx, fresh)
		SetHibernating(tx, stale)
		return nil, nil
	})
	w.events(rid, ev(aid, 0, 2, stoppedErr))
	eff := w.do(func(tx udb.Transaction, in Input) (Effects, error) { return Wake(ctx, tx, in) }, aid)
	start := eff.Commands[0].Start
	want := []HibernatingRequest{{GatewayID: fresh.GatewayID, RequestID: fresh.RequestID}}
	if !slices.Equal(start.Hibernating, want) {
		t.Fatalf("hibernating requests %+v, want %+v", start.Hibernating, want)
	}
	left := opstest.Read(t, w.db, func(r udb.ReadTransaction) ([]HibernatingRequest, error) {
		return HibernatingRequests(ctx, r, aid, 0)
	})
	if !slices.Equal(left, want) {
		t.Fatalf("stored after the start: %+v (the stale one must be gone)", left)
	}
}

// A create that starts its actor at once takes the start command's input from the create
// and knows it has no hibernating WebSocket: it reads neither back from the store (two
// round trips per create on PostgreSQL). An empty input starts as none, as one read back
// from the store does.
func TestCreateStartReadsNoPayload(t *testing.T) {
	w := newWorld(t)
	rid := w.runner("r1", 4)
	for _, input := range [][]byte{[]byte("in"), {}, nil} {
		aid := id.New(1)
		var reads readLog
		out := opstest.Write(t, w.db, func(tx udb.Transaction) (CreateOutput, error) {
			reads = readLog{}
			return Create(ctx, readRecorder{tx, &reads}, CreateInput{Namespace: w.ns, NamespaceName: "default", ActorID: aid, Name: "counter",
				Input: input, Selector: "pool", CrashPolicy: CrashSleep, NowMs: w.now, Datacenter: "dc", Config: w.cfg})
		})
		start := out.Effects.Commands[0].Start
		if len(out.Effects.Commands) != 1 || start == nil || !bytes.Equal(start.Input, input) || (len(input) == 0) != (start.Input == nil) ||
			start.Hibernating == nil || len(start.Hibernating) != 0 {
			t.Fatalf("input %q: commands %+v", input, out.Effects.Commands)
		}
		inputKeys := keys.ActorInputKey{ActorID: aid}.Pack()
		hibernating, _ := keys.HibernatingRequestRange(aid)
		for _, r := range reads.ranges {
			if bytes.HasPrefix(r.Begin, inputKeys) || bytes.Equal(r.Begin, hibernating) {
				t.Errorf("input %q: the create read %x back from the store", input, r.Begin)
			}
		}
	}
	if w.remaining(rid) != 1 {
		t.Fatalf("remaining %d, want 1: the three actors were not placed", w.remaining(rid))
	}
}

// readLog is what a readRecorder saw read: point reads and range reads, through the
// transaction or its snapshot view.
type readLog struct {
	keys       [][]byte
	ranges     []udb.KeyRange
	prefetched [][][]byte // the keys of each Prefetch
}

// readRecorder records the reads through it and its snapshot view in log.
type readRecorder struct {
	udb.Transaction
	log *readLog
}

type snapshotRecorder struct {
	udb.ReadTransaction
	log *readLog
}

func (l *readLog) get(key []byte) { l.keys = append(l.keys, bytes.Clone(key)) }

func (l *readLog) rng(begin, end udb.KeySelector) {
	l.ranges = append(l.ranges, udb.KeyRange{Begin: bytes.Clone(begin.Key), End: bytes.Clone(end.Key)})
}

func (r readRecorder) Get(ctx context.Context, key []byte) ([]byte, error) {
	r.log.get(key)
	return r.Transaction.Get(ctx, key)
}

func (r readRecorder) GetRange(begin, end udb.KeySelector, opt udb.RangeOptions) udb.RangeIterator {
	r.log.rng(begin, end)
	return r.Transaction.GetRange(begin, end, opt)
}

func (r readRecorder) Prefetch(ctx context.Context, keys [][]byte, ranges []udb.KeyRange) {
	r.log.prefetched = append(r.log.prefetched, keys)
	r.Transaction.Prefetch(ctx, keys, ranges)
}

func (r snapshotRecorder) Prefetch(ctx context.Context, keys [][]byte, ranges []udb.KeyRange) {
	r.log.prefetched = append(r.log.prefetched, keys)
	r.ReadTransaction.Prefetch(ctx, keys, ranges)
}

func (r readRecorder) Snapshot() udb.ReadTransaction {
	return snapshotRecorder{r.Transaction.Snapshot(), r.log}
}

func (r snapshotRecorder) Get(ctx context.Context, key []byte) ([]byte, error) {
	r.log.get(key)
	return r.ReadTransaction.Get(ctx, key)
}

func (r snapshotRecorder) GetRange(begin, end udb.KeySelector, opt udb.RangeOptions) udb.RangeIterator {
	r.log.rng(begin, end)
	return r.ReadTransaction.GetRange(begin, end, opt)
}

// CreateReads names reads that Create makes (so that a batch prefetching them fetches
// nothing for nothing), with and without a key and a key reservation.
func TestCreateReadsAreRead(t *testing.T) {
	w := newWorld(t)
	w.runner("r1", 8)
	key := "k"
	for _, in := range []CreateInput{
		{Name: "counter"},
		{Name: "counter", Key: &key},
		{Name: "other", Key: &key, Reserved: true},
	} {
		in.Namespace, in.NamespaceName, in.ActorID, in.Selector = w.ns, "default", id.New(1), "pool"
		in.CrashPolicy, in.NowMs, in.Datacenter, in.Config = CrashSleep, w.now, "dc", w.cfg
		var log readLog
		opstest.Write(t, w.db, func(tx udb.Transaction) (CreateOutput, error) {
			log = readLog{}
			return Create(ctx, readRecorder{tx, &log}, in)
		})
		reads := CreateReads(in)
		for _, k := range reads.Keys {
			if !slices.ContainsFunc(log.keys, func(got []byte) bool { return bytes.Equal(got, k) }) {
				t.Errorf("key %v, reserved %v: CreateReads names %x, which Create did not read", in.Key != nil, in.Reserved, k)
			}
		}
		for _, r := range reads.Ranges {
			if !slices.ContainsFunc(log.ranges, func(got udb.KeyRange) bool {
				return bytes.Equal(got.Begin, r.Begin) && bytes.Equal(got.End, r.End)
			}) {
				t.Errorf("key %v: CreateReads names the range %x-%x, which Create did not read", in.Key != nil, r.Begin, r.End)
			}
		}
	}
}
