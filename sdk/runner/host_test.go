package runner_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
	"github.com/berthhq/berth/sdk/runner"
	"github.com/berthhq/berth/sdk/runner/runnertest"
)

// These tests host actors against the scripted engine, which sees every frame the runner
// sends.

// hostRunner starts a runner hosting p's actors and returns the engine's side of its
// socket, initialised.
func hostRunner(t *testing.T, p *runnertest.Probe, change func(*runner.Config)) (*fakeEngine, *runner.Runner, *fakeSock) {
	t.Helper()
	return hostRunnerLost(t, p, change, 0)
}

// hostRunnerLost is hostRunner with the runner-lost threshold lostMs in ToClientInit.
func hostRunnerLost(t *testing.T, p *runnertest.Probe, change func(*runner.Config), lostMs int64) (*fakeEngine, *runner.Runner, *fakeSock) {
	t.Helper()
	f := newFakeEngine(t)
	cfg := runnertest.HostConfig(f.url(), p)
	if change != nil {
		change(&cfg)
	}
	r := runnertest.NewRunner(t, cfg)
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), runnertest.Wait)
		defer cancel()
		errc <- r.Start(ctx)
	}()
	s := f.accept()
	s.initRunner("runner-1", lostMs)
	if err := runnertest.Next(t, errc, "Start"); err != nil {
		t.Fatal(err)
	}
	return f, r, s
}

func TestHostLifecycle(t *testing.T) {
	p := runnertest.NewProbe()
	_, _, s := hostRunner(t, p, nil)
	var names []string
	for _, n := range s.init.PrepopulateActorNames {
		names = append(names, n.Name)
	}
	if !slices.Equal(names, []string{"plain", "probe"}) {
		t.Fatalf("prepopulated actor names %v, want Config.Actors' names", names)
	}

	s.send(proto.ToClientCommands{startCmd("a1", "probe", 0)})
	ac := runnertest.Next(t, p.Starts, "Start")
	key, hasKey := ac.Key()
	if ac.ID() != "a1" || ac.Name() != "probe" || !hasKey || key != "key-a1" || ac.Generation() != 0 ||
		string(ac.Input()) != "input-a1" || ac.CreateTs().UnixMilli() != 1700000000000 {
		t.Fatalf("actor context: id %q name %q key %q/%v gen %d input %q", ac.ID(), ac.Name(), key, hasKey, ac.Generation(), ac.Input())
	}
	expectEvent(s, "a1", 0, 0, running)

	// A replayed start of the running generation is ignored (hooks run in order, so by the
	// time the stop is handled the replay was).
	s.send(proto.ToClientCommands{startCmd("a1", "probe", 0)})
	if err := ac.SetAlarm(time.UnixMilli(1800000000000)); err != nil {
		t.Fatal(err)
	}
	alarm := int64(1800000000000)
	expectEvent(s, "a1", 0, 1, proto.EventActorSetAlarm{AlarmTs: &alarm})
	if err := ac.Sleep(); err != nil {
		t.Fatal(err)
	}
	expectEvent(s, "a1", 0, 2, sleepInt)
	if ac.Context().Err() != nil {
		t.Fatal("the actor's context ended before the stop")
	}
	s.send(proto.ToClientCommands{stopCmd("a1", 0, 1)})
	if got := runnertest.Next(t, p.Stops, "Stop"); got != ac {
		t.Fatal("Stop got another actor context")
	}
	// Not draining, no Destroy: ERROR, as runner 2.2.1 reports a sleep.
	expectEvent(s, "a1", 0, 3, stoppedER)
	runnertest.None(t, p.Starts, "a second Start of generation 0")
	if ac.Context().Err() == nil {
		t.Fatal("the actor's context did not end")
	}
	if err := ac.Sleep(); !errors.Is(err, runner.ErrActorStopped) {
		t.Fatalf("Sleep after the stop: %v", err)
	}

	// Woken: generation 1, a new instance, event indexes from 0 again.
	s.send(proto.ToClientCommands{startCmd("a1", "probe", 1)})
	ac1 := runnertest.Next(t, p.Starts, "Start of generation 1")
	if ac1 == ac || ac1.Generation() != 1 {
		t.Fatalf("generation %d", ac1.Generation())
	}
	expectEvent(s, "a1", 1, 0, running)
	if err := ac1.ClearAlarm(); err != nil {
		t.Fatal(err)
	}
	expectEvent(s, "a1", 1, 1, proto.EventActorSetAlarm{})
	if err := ac1.Destroy(); err != nil {
		t.Fatal(err)
	}
	expectEvent(s, "a1", 1, 2, stopInt)
	s.send(proto.ToClientCommands{stopCmd("a1", 1, 1)})
	runnertest.Next(t, p.Stops, "Stop of generation 1")
	expectEvent(s, "a1", 1, 3, stoppedOK)

	// A start replayed after the stop (its generation is done) is ignored too.
	s.send(proto.ToClientCommands{startCmd("a1", "probe", 1), startCmd("a2", "probe", 0)})
	if got := runnertest.Next(t, p.Starts, "Start of a2"); got.ID() != "a2" {
		t.Fatalf("started %s, want a2 only", got.ID())
	}
	expectEvent(s, "a2", 0, 0, running)
}

func TestHostStartFailures(t *testing.T) {
	p := runnertest.NewProbe()
	p.StartErr = errors.New("no state")
	_, _, s := hostRunner(t, p, nil)

	s.send(proto.ToClientCommands{startCmd("a1", "probe", 0)})
	runnertest.Next(t, p.Starts, "Start")
	// No Running, no Stop: Stopped ERROR with Start's error, so the crash policy applies.
	expectEvent(s, "a1", 0, 0, stoppedWith(proto.StopCodeError, "no state"))
	runnertest.None(t, p.Stops, "Stop after a failed Start")

	s.send(proto.ToClientCommands{startCmd("a2", "nobody", 0)})
	expectEvent(s, "a2", 0, 0, stoppedWith(proto.StopCodeError, `runner: no actor named "nobody"`))
}

func TestHostStopDuringStart(t *testing.T) {
	p := runnertest.NewProbe()
	p.Hold = make(chan struct{}) // Start waits for its ctx
	_, _, s := hostRunner(t, p, nil)
	s.send(proto.ToClientCommands{startCmd("a1", "probe", 0)})
	runnertest.Next(t, p.Starts, "Start")
	// The engine stops it before it is ready: Start's ctx ends, it is never reported Running.
	s.send(proto.ToClientCommands{stopCmd("a1", 0, 1)})
	expectEvent(s, "a1", 0, 0, stoppedWith(proto.StopCodeError, "context canceled"))
}

func TestHostNewGenerationReplaces(t *testing.T) {
	p := runnertest.NewProbe()
	_, _, s := hostRunner(t, p, nil)
	s.send(proto.ToClientCommands{startCmd("a1", "probe", 0)})
	old := runnertest.Next(t, p.Starts, "Start")
	expectEvent(s, "a1", 0, 0, running)

	// The engine moved on to generation 1 (it resent a start after losing track): the old
	// instance is stopped, without a report, before the new one starts.
	s.send(proto.ToClientCommands{startCmd("a1", "probe", 1)})
	if got := runnertest.Next(t, p.Stops, "Stop of generation 0"); got != old {
		t.Fatal("Stop of another instance")
	}
	if got := runnertest.Next(t, p.Starts, "Start of generation 1"); got.Generation() != 1 {
		t.Fatalf("generation %d", got.Generation())
	}
	expectEvent(s, "a1", 1, 0, running)
	// An older generation's start now is stale.
	s.send(proto.ToClientCommands{startCmd("a1", "probe", 0), stopCmd("a1", 1, 1)})
	runnertest.Next(t, p.Stops, "Stop of generation 1")
	expectEvent(s, "a1", 1, 1, stoppedER)
	runnertest.None(t, p.Starts, "Start of a stale generation")
}

func TestHostDrainReportsStoppedOK(t *testing.T) {
	p := runnertest.NewProbe()
	_, r, s := hostRunner(t, p, nil)
	s.send(proto.ToClientCommands{startCmd("a1", "probe", 0)})
	runnertest.Next(t, p.Starts, "Start")
	expectEvent(s, "a1", 0, 0, running)

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), runnertest.Wait)
		defer cancel()
		done <- r.Shutdown(ctx, false)
	}()
	expect[proto.ToServerStopping](s)
	// The engine stops the runner's actors; the runner waits for them (ActiveActors).
	s.send(proto.ToClientCommands{stopCmd("a1", 0, 1)})
	runnertest.Next(t, p.Stops, "Stop")
	expectEvent(s, "a1", 0, 1, stoppedOK)
	s.expectClose(websocket.StatusNormalClosure, "pegboard.runner_shutdown")
	if err := runnertest.Next(t, done, "Shutdown"); err != nil {
		t.Fatal(err)
	}
}

func TestHostRunnerLostStopsActorsWithoutReport(t *testing.T) {
	p := runnertest.NewProbe()
	f, r, s := hostRunnerLost(t, p, func(c *runner.Config) { c.KVTimeout = runnertest.Wait }, 50)
	s.send(proto.ToClientCommands{startCmd("a1", "probe", 0)})
	ac := runnertest.Next(t, p.Starts, "Start")
	expectEvent(s, "a1", 0, 0, running)
	kvErr := make(chan error, 1)
	go func() {
		_, _, err := ac.KV().Get(context.Background(), []byte("k"))
		kvErr <- err
	}()
	expect[proto.ToServerKvRequest](s) // never answered

	// The engine goes away for longer than the runner-lost threshold (50 ms here).
	f.refuse.Store(true)
	s.closeWith(websocket.StatusInternalError, "ws.going_away#x")

	if got := runnertest.Next(t, p.Stops, "Stop after the runner was lost"); got != ac {
		t.Fatal("Stop of another instance")
	}
	if err := runnertest.Next(t, kvErr, "the pending KV request to fail"); !errors.Is(err, runner.ErrActorStopped) {
		t.Fatalf("KV Get: %v", err)
	}
	if _, _, err := ac.KV().Get(context.Background(), []byte("k")); !errors.Is(err, runner.ErrActorStopped) {
		t.Fatalf("KV Get after the loss: %v", err)
	}

	// Back again: only the never-acked Running is resent; no Stopped for a lost actor, and
	// the dead KV request is not sent again.
	f.refuse.Store(false)
	s3 := f.accept()
	s3.initRunner("runner-1", 50)
	got := barrier(s3, 42)
	if len(got) != 1 {
		t.Fatalf("after reconnect the runner sent %+v, want only the unacked Running", got)
	}
	if evs, ok := got[0].(proto.ToServerEvents); !ok || len(evs) != 1 || evs[0].Inner != running {
		t.Fatalf("resent %+v", got[0])
	}
	if n := r.UnackedEvents(); n != 1 {
		t.Fatalf("%d unacked events", n)
	}
}

func TestHostShutdownStopsActors(t *testing.T) {
	p := runnertest.NewProbe()
	_, r, s := hostRunner(t, p, nil)
	s.send(proto.ToClientCommands{startCmd("a1", "probe", 0)})
	ac := runnertest.Next(t, p.Starts, "Start")
	expectEvent(s, "a1", 0, 0, running)
	ctx, cancel := context.WithTimeout(context.Background(), runnertest.Wait)
	defer cancel()
	if err := r.Shutdown(ctx, true); err != nil {
		t.Fatal(err)
	}
	// Done is closed only after the actor's Stop returned.
	select {
	case <-p.Stops:
	default:
		t.Fatal("Shutdown returned before the actor's Stop ran")
	}
	if err := ac.Sleep(); err == nil {
		t.Fatal("Sleep after the runner stopped succeeded")
	}
}

func TestHostConfigErrors(t *testing.T) {
	cfg := runnertest.Config("http://127.0.0.1:1", nil)
	cfg.Actors = map[string]func() runner.Actor{"": func() runner.Actor { return runnertest.PlainActor{} }, "nil": nil,
		strings.Repeat("n", 129): func() runner.Actor { return runnertest.PlainActor{} }}
	cfg.Hooks.OnCommands = func([]proto.CommandWrapper) {}
	cfg.Hooks.ActiveActors = func() int { return 0 }
	_, err := runner.New(cfg)
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *runner.ConfigError
		if !errors.As(e, &ce) {
			t.Fatalf("%v is not a *ConfigError", e)
		}
		fields = append(fields, ce.Field)
	}
	want := []string{`Actors[""]`, `Actors["nil"]`, `Actors["` + strings.Repeat("n", 129) + `"]`, "Hooks.OnCommands", "Hooks.ActiveActors"}
	if !slices.Equal(fields, want) {
		t.Fatalf("errors for %q, want %q", fields, want)
	}
}
