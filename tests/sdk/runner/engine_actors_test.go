package runner_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/engine/hostsock/hostsocktest"
	"github.com/berthhq/berth/engine/pegboard"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/sdk/runner"
	"github.com/berthhq/berth/sdk/runner/runnertest"
)

// Hosted actors against the real engine in process: its host sockets and control plane
// (engine/hostsock/hostsocktest) on httptest over a mem:// store.

type actorEnv struct {
	*socketEnv
	actors *pegboard.Actors
	ns     id.ID
}

func startActorEnv(t *testing.T) *actorEnv {
	t.Helper()
	e := &actorEnv{socketEnv: startSocket(t, hostsocktest.Config{})}
	e.actors = e.cur.Load().Lifecycle.Actors
	ctx := context.Background()
	res, err := e.db.ReadTransact(ctx, func(tx udb.ReadTransaction) (any, error) {
		return namespace.ResolveByName(ctx, tx, namespace.ResolveByNameInput{Name: "default"})
	})
	if err != nil {
		t.Fatal(err)
	}
	e.ns = res.(namespace.Namespace).NamespaceID
	return e
}

// create creates an actor of the pool "pool" (testConfig's runner name); the pool exists once
// a runner of it has connected.
func (e *actorEnv) create(t *testing.T, name, policy string, input []byte) id.ID {
	t.Helper()
	key := "key-" + t.Name()
	a, err := e.actors.Create(context.Background(), actor.CreateInput{
		Namespace: e.ns, NamespaceName: "default", Name: name, Key: &key, Input: input, Selector: "pool", CrashPolicy: policy,
	})
	if err != nil {
		t.Fatal(err)
	}
	return a.ActorID
}

func (e *actorEnv) state(t *testing.T, aid id.ID) keys.ActorState {
	t.Helper()
	res, err := e.db.ReadTransact(context.Background(), func(tx udb.ReadTransaction) (any, error) {
		st, _, err := keys.Get(context.Background(), tx.Snapshot(), keys.ActorStateKey{ActorID: aid})
		return st, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.(keys.ActorState)
}

// waitPhase polls the engine until the actor is in phase.
func (e *actorEnv) waitPhase(t *testing.T, aid id.ID, phase keys.ActorPhase) keys.ActorState {
	t.Helper()
	var st keys.ActorState
	eventually(t, fmt.Sprintf("actor %s to be %s", aid, phase), func() bool {
		st = e.state(t, aid)
		return st.Phase == phase
	})
	return st
}

// hostOnEngine starts a runner hosting p's actors on e.
func hostOnEngine(t *testing.T, e *actorEnv, p *runnertest.Probe, key string) *runner.Runner {
	t.Helper()
	cfg := runnertest.HostConfig(e.hs.URL, p)
	cfg.Key = key
	r := runnertest.NewRunner(t, cfg)
	runnertest.Start(t, r)
	return r
}

func TestActorLifecycleOnTheEngine(t *testing.T) {
	e := startActorEnv(t)
	p := runnertest.NewProbe()
	hostOnEngine(t, e, p, "k1")

	aid := e.create(t, "probe", actor.CrashSleep, []byte("hi"))
	ac := runnertest.Next(t, p.Starts, "Start")
	if ac.ID() != aid.String() || ac.Generation() != 0 || string(ac.Input()) != "hi" || ac.Name() != "probe" {
		t.Fatalf("started %s gen %d input %q", ac.ID(), ac.Generation(), ac.Input())
	}
	if key, ok := ac.Key(); !ok || key != "key-"+t.Name() {
		t.Fatalf("key %q %v", key, ok)
	}
	e.waitPhase(t, aid, keys.PhaseRunning)

	// Sleep from inside: intent, the engine's stop, Stop, Stopped: the engine shows it asleep.
	if err := ac.Sleep(); err != nil {
		t.Fatal(err)
	}
	if got := runnertest.Next(t, p.Stops, "Stop"); got != ac {
		t.Fatal("Stop of another instance")
	}
	if st := e.waitPhase(t, aid, keys.PhaseSleeping); st.SleepTs == nil {
		t.Fatalf("sleeping without sleep_ts: %+v", st)
	}

	// Woken: Start again, generation 1, running.
	if err := e.actors.Wake(context.Background(), aid); err != nil {
		t.Fatal(err)
	}
	ac1 := runnertest.Next(t, p.Starts, "Start after the wake")
	if ac1.Generation() != 1 || string(ac1.Input()) != "hi" {
		t.Fatalf("woken as generation %d, input %q", ac1.Generation(), ac1.Input())
	}
	e.waitPhase(t, aid, keys.PhaseRunning)

	// Destroy from inside: Stop, then destroyed.
	if err := ac1.Destroy(); err != nil {
		t.Fatal(err)
	}
	runnertest.Next(t, p.Stops, "Stop after Destroy")
	if st := e.waitPhase(t, aid, keys.PhaseDestroyed); st.Error != nil {
		t.Fatalf("destroyed with error %s", st.Error)
	}
	runnertest.None(t, p.Starts, "Start after destroy")
}

func TestActorAlarmWakesOnTheEngine(t *testing.T) {
	e := startActorEnv(t)
	p := runnertest.NewProbe()
	hostOnEngine(t, e, p, "k1")
	aid := e.create(t, "probe", actor.CrashSleep, nil)
	ac := runnertest.Next(t, p.Starts, "Start")
	e.waitPhase(t, aid, keys.PhaseRunning)

	alarm := time.Now().Add(time.Second)
	if err := ac.SetAlarm(alarm); err != nil {
		t.Fatal(err)
	}
	if err := ac.Sleep(); err != nil {
		t.Fatal(err)
	}
	runnertest.Next(t, p.Stops, "Stop")
	// The engine starts generation 1 at the alarm, not before.
	ac1 := runnertest.Next(t, p.Starts, "Start at the alarm")
	if now := time.Now(); ac1.Generation() != 1 || now.Before(alarm.Truncate(time.Millisecond)) {
		t.Fatalf("generation %d started at %s, alarm %s", ac1.Generation(), now, alarm)
	}
	e.waitPhase(t, aid, keys.PhaseRunning)
}

func TestActorStartFailureCrashesOnTheEngine(t *testing.T) {
	e := startActorEnv(t)
	p := runnertest.NewProbe()
	p.StartErr = errors.New("cannot load state")
	hostOnEngine(t, e, p, "k1")
	aid := e.create(t, "probe", actor.CrashSleep, nil)
	runnertest.Next(t, p.Starts, "Start")
	// Stopped ERROR with Start's error: crash policy sleep, with the message in the error.
	st := e.waitPhase(t, aid, keys.PhaseSleeping)
	if !bytes.Contains(st.Error, []byte("cannot load state")) {
		t.Fatalf("error %s", st.Error)
	}
	runnertest.None(t, p.Stops, "Stop after a failed Start")
}

func TestActorDrainMovesItOnTheEngine(t *testing.T) {
	e := startActorEnv(t)
	p1, p2 := runnertest.NewProbe(), runnertest.NewProbe()
	r1 := hostOnEngine(t, e, p1, "k1")
	aid := e.create(t, "probe", actor.CrashRestart, nil)
	runnertest.Next(t, p1.Starts, "Start on the first runner")
	e.waitPhase(t, aid, keys.PhaseRunning)
	hostOnEngine(t, e, p2, "k2")

	// A graceful shutdown: the engine stops the actor (going away), the runner reports it
	// Stopped OK, the engine starts the restart-policy actor on the other runner, and the
	// first runner closes.
	ctx, cancel := context.WithTimeout(context.Background(), runnertest.Wait)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r1.Shutdown(ctx, false) }()
	runnertest.Next(t, p1.Stops, "Stop on the draining runner")
	if ac := runnertest.Next(t, p2.Starts, "Start on the second runner"); ac.Generation() != 1 {
		t.Fatalf("generation %d", ac.Generation())
	}
	if err := runnertest.Next(t, done, "Shutdown"); err != nil {
		t.Fatal(err)
	}
	e.waitPhase(t, aid, keys.PhaseRunning)
}

func TestActorKVOnTheEngine(t *testing.T) {
	e := startActorEnv(t)
	p := runnertest.NewProbe()
	rec := runnertest.NewRecorder()
	cfg := runnertest.HostConfig(e.hs.URL, p)
	cfg.Hooks.OnConnected = func(id string) { rec.Connected <- id }
	cfg.Hooks.OnDisconnected = func(err error) { rec.Disconnected <- err }
	runnertest.Start(t, runnertest.NewRunner(t, cfg))
	runnertest.Next(t, rec.Connected, "OnConnected")
	e.create(t, "probe", actor.CrashSleep, nil)
	ac := runnertest.Next(t, p.Starts, "Start")
	kv := ac.KV()
	ctx := context.Background()

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	keysOf := func(es []runner.Entry) string {
		var s []string
		for _, e := range es {
			s = append(s, string(e.Key)+"="+string(e.Value))
		}
		return strings.Join(s, ",")
	}
	must(kv.PutMany(ctx, []runner.Entry{
		{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b/1"), Value: []byte("2")},
		{Key: []byte("b/2"), Value: []byte("3")}, {Key: []byte("c"), Value: []byte("4")},
	}))
	if v, ok, err := kv.Get(ctx, []byte("b/1")); err != nil || !ok || string(v) != "2" {
		t.Fatalf("Get: %q %v %v", v, ok, err)
	}
	if _, ok, err := kv.Get(ctx, []byte("nope")); err != nil || ok {
		t.Fatalf("Get of a missing key: %v %v", ok, err)
	}
	es, err := kv.GetMany(ctx, [][]byte{[]byte("c"), []byte("nope"), []byte("a")})
	must(err)
	if got := keysOf(es); got != "c=4,a=1" {
		t.Fatalf("GetMany: %s", got)
	}
	if es[0].UpdatedAt.IsZero() || len(es[0].Version) == 0 {
		t.Fatalf("no metadata: %+v", es[0])
	}
	for _, tc := range []struct {
		o    runner.ListOptions
		want string
	}{
		{runner.ListOptions{}, "a=1,b/1=2,b/2=3,c=4"},
		{runner.ListOptions{Prefix: []byte("b/")}, "b/1=2,b/2=3"},
		{runner.ListOptions{Start: []byte("a"), End: []byte("c")}, "a=1,b/1=2,b/2=3,c=4"},
		{runner.ListOptions{Start: []byte("a"), End: []byte("c"), Exclusive: true}, "a=1,b/1=2,b/2=3"},
		{runner.ListOptions{Reverse: true, Limit: 2}, "c=4,b/2=3"},
	} {
		es, err := kv.List(ctx, tc.o)
		must(err)
		if got := keysOf(es); got != tc.want {
			t.Errorf("List(%+v) = %s, want %s", tc.o, got, tc.want)
		}
	}
	must(kv.Delete(ctx, []byte("a"), []byte("nope")))
	must(kv.DeleteRange(ctx, []byte("b/"), []byte("b/2")))
	es, err = kv.List(ctx, runner.ListOptions{})
	must(err)
	if got := keysOf(es); got != "b/2=3,c=4" {
		t.Fatalf("after deletes: %s", got)
	}
	// A limit breach is the engine's KvErrorResponse, naming it; nothing is written.
	var ke *runner.KVError
	if err := kv.Put(ctx, bytes.Repeat([]byte("k"), 3000), []byte("v")); !errors.As(err, &ke) || !strings.Contains(ke.Message, "key") {
		t.Fatalf("Put of a 3000-byte key: %v", err)
	}

	// Made while the engine is down: queued, sent after the reconnect.
	e.down.Store(true)
	e.restart()
	runnertest.Next(t, rec.Disconnected, "OnDisconnected")
	put := make(chan error, 1)
	go func() { put <- kv.Put(ctx, []byte("later"), []byte("5")) }()
	e.down.Store(false)
	runnertest.Next(t, rec.Connected, "OnConnected after the restart")
	must(runnertest.Next(t, put, "the queued Put"))

	must(kv.Drop(ctx))
	es, err = kv.List(ctx, runner.ListOptions{})
	must(err)
	if len(es) != 0 {
		t.Fatalf("after Drop: %s", keysOf(es))
	}
}

// KV works in Stop: during the stop of a sleep, and of a drain, before Stopped is reported.
func TestActorKVInStopOnTheEngine(t *testing.T) {
	e := startActorEnv(t)
	p1, p2 := runnertest.NewProbe(), runnertest.NewProbe()
	p1.StopKV = true
	r1 := hostOnEngine(t, e, p1, "k1")
	aid := e.create(t, "probe", actor.CrashSleep, nil)
	ac := runnertest.Next(t, p1.Starts, "Start")
	e.waitPhase(t, aid, keys.PhaseRunning)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ac.Sleep())
	must(runnertest.Next(t, p1.StopKVErr, "the KV write in Stop (sleep)"))
	e.waitPhase(t, aid, keys.PhaseSleeping)
	must(e.actors.Wake(context.Background(), aid))
	ac1 := runnertest.Next(t, p1.Starts, "Start after the wake")
	if _, ok, err := ac1.KV().Get(context.Background(), []byte("stopped-0")); err != nil || !ok {
		t.Fatalf("generation 0's write in Stop: found %v, %v", ok, err)
	}

	hostOnEngine(t, e, p2, "k2")
	ctx, cancel := context.WithTimeout(context.Background(), runnertest.Wait)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r1.Shutdown(ctx, false) }()
	must(runnertest.Next(t, p1.StopKVErr, "the KV write in Stop (drain)"))
	must(runnertest.Next(t, done, "Shutdown"))
	// A sleep-policy actor sleeps after its runner's drain, as on Rivet; the next wake places
	// it on the second runner.
	e.waitPhase(t, aid, keys.PhaseSleeping)
	must(e.actors.Wake(context.Background(), aid))
	ac2 := runnertest.Next(t, p2.Starts, "Start on the second runner")
	if _, ok, err := ac2.KV().Get(context.Background(), []byte("stopped-1")); err != nil || !ok {
		t.Fatalf("generation 1's write in Stop: found %v, %v", ok, err)
	}
}
