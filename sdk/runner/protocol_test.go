package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/signal"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/sdk/client"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
	"github.com/berthhq/berth/sdk/runner"
	"github.com/berthhq/berth/sdk/runner/runnertest"
)

// These tests run the runner against a scripted engine (fakeEngine), to see the exact frames.

// connect starts r against f, answers its ToServerInit with runnerID, and returns the socket
// once Start has returned and OnConnected has run.
func connect(t *testing.T, f *fakeEngine, r *runner.Runner, rec *runnertest.Recorder, runnerID string, lostMs int64) *fakeSock {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), runnertest.Wait)
		defer cancel()
		errc <- r.Start(ctx)
	}()
	s := f.accept()
	s.initRunner(runnerID, lostMs)
	if err := runnertest.Next(t, errc, "Start"); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if got := runnertest.Next(t, rec.Connected, "OnConnected"); got != runnerID {
		t.Fatalf("OnConnected(%q), want %q", got, runnerID)
	}
	return s
}

// sync makes sure the runner has handled every frame sent before it: it answers pings in
// order, after the frames before them.
func (s *fakeSock) sync(ts int64) {
	s.t.Helper()
	s.send(proto.ToClientPing{Ts: ts})
	if p := expect[proto.ToServerPong](s); p.Ts != ts {
		s.t.Fatalf("pong %d, want %d", p.Ts, ts)
	}
}

func TestHandshake(t *testing.T) {
	f := newFakeEngine(t)
	rec := runnertest.NewRecorder()
	cfg := runnertest.Config(f.url()+"/base/", rec)
	cfg.Key = "key-1"
	cfg.Token = "s3cret"
	cfg.Metadata = json.RawMessage(`{"zone":"a"}`)
	cfg.PrepopulateActorNames = map[string]json.RawMessage{"b": nil, "a": json.RawMessage(`{"x":1}`)}
	r := runnertest.NewRunner(t, cfg)
	if got := r.State(); got != runner.StateNew {
		t.Fatalf("State before Start = %v", got)
	}
	s := connect(t, f, r, rec, "rid-1", 15000)

	if s.path != "/base/runners/connect" {
		t.Errorf("path %q", s.path)
	}
	wantQuery := url.Values{"protocol_version": {"7"}, "namespace": {"default"}, "runner_key": {"key-1"}}
	if !reflect.DeepEqual(s.query, wantQuery) {
		t.Errorf("query %v, want %v", s.query, wantQuery)
	}
	if s.proto != "rivet,rivet_token.s3cret" {
		t.Errorf("subprotocols %q", s.proto)
	}
	md := `{"zone":"a"}`
	want := proto.ToServerInit{Name: "pool", Version: 3, TotalSlots: 8, Metadata: &md,
		PrepopulateActorNames: []proto.ActorName{{Name: "a", Metadata: `{"x":1}`}, {Name: "b", Metadata: "{}"}}}
	if !reflect.DeepEqual(s.init, want) {
		t.Errorf("init %+v, want %+v", s.init, want)
	}
	if r.RunnerID() != "rid-1" || r.State() != runner.StateConnected {
		t.Errorf("RunnerID %q, State %v", r.RunnerID(), r.State())
	}
	// Commands sent right after init reach OnCommands in order.
	cmds := proto.ToClientCommands{
		{Checkpoint: proto.ActorCheckpoint{ActorID: "a1", Index: 0}, Inner: proto.CommandStartActor{Config: proto.ActorConfig{Name: "counter", CreateTs: 1, Input: []byte{1}},
			HibernatingRequests: []proto.HibernatingRequest{}}},
		{Checkpoint: proto.ActorCheckpoint{ActorID: "a1", Index: 1}, Inner: proto.CommandStopActor{}},
	}
	s.send(cmds)
	if got := runnertest.Next(t, rec.Commands, "OnCommands"); !reflect.DeepEqual(got, []proto.CommandWrapper(cmds)) {
		t.Errorf("OnCommands %+v, want %+v", got, cmds)
	}
}

func TestAnswersPings(t *testing.T) {
	f := newFakeEngine(t)
	rec := runnertest.NewRecorder()
	r := runnertest.NewRunner(t, runnertest.Config(f.url(), rec))
	s := connect(t, f, r, rec, "rid", 15000)
	for _, ts := range []int64{1767225600000, 1767225603000, -1} {
		s.sync(ts) // ToClientPing{ts} is answered ToServerPong{ts}
	}
}

func TestResendsUnackedEventsAfterReconnect(t *testing.T) {
	f := newFakeEngine(t)
	rec := runnertest.NewRecorder()
	r := runnertest.NewRunner(t, runnertest.Config(f.url(), rec))
	s := connect(t, f, r, rec, "rid", 0)

	first := []proto.EventWrapper{event("a", 0, 0), event("a", 0, 1), event("b", 1, 0)}
	if err := r.SendEvents(first...); err != nil {
		t.Fatal(err)
	}
	if got := expect[proto.ToServerEvents](s); !reflect.DeepEqual([]proto.EventWrapper(got), first) {
		t.Fatalf("events %+v, want %+v", got, first)
	}
	// The engine acknowledges a's first event; the others stay unacked.
	s.send(proto.ToClientAckEvents{LastEventCheckpoints: []proto.ActorCheckpoint{{ActorID: "a", Generation: 0, Index: 0}}})
	s.sync(1)
	if n := r.UnackedEvents(); n != 2 {
		t.Fatalf("UnackedEvents = %d after the ack, want 2", n)
	}

	s.closeWith(websocket.StatusInternalError, "ws.going_away#ray1")
	err := runnertest.Next(t, rec.Disconnected, "OnDisconnected")
	var ce *runner.CloseError
	if !errors.As(err, &ce) || ce.CloseCode != 1011 || ce.RayID != "ray1" || !errors.Is(err, &client.APIError{Group: "ws", Code: "going_away"}) || !ce.Retryable() {
		t.Fatalf("OnDisconnected(%v), want a retryable 1011 ws.going_away#ray1 CloseError", err)
	}

	// The runner reconnects with the same key; after the engine's init it sends the unacked
	// events again, in order, before anything new.
	s2 := f.accept()
	if s2.query.Get("runner_key") != r.Key() {
		t.Fatalf("reconnected with key %q, want %q", s2.query.Get("runner_key"), r.Key())
	}
	s2.initRunner("rid", 0)
	want := first[1:]
	if got := expect[proto.ToServerEvents](s2); !reflect.DeepEqual([]proto.EventWrapper(got), want) {
		t.Fatalf("resent %+v, want %+v", checkpoints(got), checkpoints(want))
	}
	if got := runnertest.Next(t, rec.Connected, "OnConnected"); got != "rid" {
		t.Fatalf("OnConnected(%q)", got)
	}
	if err := r.SendEvents(event("a", 0, 2)); err != nil {
		t.Fatal(err)
	}
	if got := expect[proto.ToServerEvents](s2); !reflect.DeepEqual(checkpoints(got), checkpoints([]proto.EventWrapper{event("a", 0, 2)})) {
		t.Fatalf("new event %+v", checkpoints(got))
	}
	// An ack of a later generation covers every event of the earlier ones.
	s2.send(proto.ToClientAckEvents{LastEventCheckpoints: []proto.ActorCheckpoint{{ActorID: "a", Generation: 1, Index: 0}, {ActorID: "b", Generation: 1, Index: 0}}})
	s2.sync(2)
	if n := r.UnackedEvents(); n != 0 {
		t.Fatalf("UnackedEvents = %d, want 0", n)
	}
	runnertest.None(t, rec.ForceStop, "OnForceStopActors")
}

func TestRunnerLostTimer(t *testing.T) {
	f := newFakeEngine(t)
	rec := runnertest.NewRecorder()
	r := runnertest.NewRunner(t, runnertest.Config(f.url(), rec))
	s := connect(t, f, r, rec, "rid-1", 50) // runnerLostThreshold 50 ms
	if err := r.SendEvents(event("a", 0, 0)); err != nil {
		t.Fatal(err)
	}
	expect[proto.ToServerEvents](s)

	// The engine goes away and stays away: the timer fires and the host is told to stop its
	// actors, while the runner keeps trying.
	f.refuse.Store(true)
	s.closeWith(websocket.StatusInternalError, "ws.going_away#r")
	runnertest.Next(t, rec.Disconnected, "OnDisconnected")
	if got := runnertest.Next(t, rec.ForceStop, "OnForceStopActors"); got != runner.RunnerLost {
		t.Fatalf("OnForceStopActors(%v), want RunnerLost", got)
	}
	if st := r.State(); st != runner.StateReconnecting {
		t.Fatalf("State %v", st)
	}
	runnertest.Next(t, f.refused, "a reconnect attempt after the runner-lost timer")

	// The engine is back and has expired the runner: a new id. The old runner's events are
	// dropped and the host is told (again) to stop the old actors, before OnConnected.
	f.refuse.Store(false)
	s2 := f.accept()
	s2.initRunner("rid-2", 50)
	if got := runnertest.Next(t, rec.ForceStop, "OnForceStopActors"); got != runner.RunnerIDChanged {
		t.Fatalf("OnForceStopActors(%v), want RunnerIDChanged", got)
	}
	if got := runnertest.Next(t, rec.Connected, "OnConnected"); got != "rid-2" {
		t.Fatalf("OnConnected(%q)", got)
	}
	s2.sync(1) // a pong, not the old events, is the first frame
	if r.RunnerID() != "rid-2" || r.UnackedEvents() != 0 {
		t.Fatalf("RunnerID %q, UnackedEvents %d", r.RunnerID(), r.UnackedEvents())
	}
}

func TestRunnerLostTimerDisabled(t *testing.T) {
	f := newFakeEngine(t)
	rec := runnertest.NewRecorder()
	r := runnertest.NewRunner(t, runnertest.Config(f.url(), rec))
	s := connect(t, f, r, rec, "rid", 0) // 0 disables the timer
	f.refuse.Store(true)
	s.closeWith(websocket.StatusInternalError, "ws.going_away#r")
	runnertest.Next(t, rec.Disconnected, "OnDisconnected")
	// A timer armed with 0 would fire at once; five backoff rounds later it still has not.
	for range 5 {
		runnertest.Next(t, f.refused, "a reconnect attempt")
	}
	runnertest.None(t, rec.ForceStop, "OnForceStopActors")
}

func TestPingTimeoutReconnects(t *testing.T) {
	f := newFakeEngine(t)
	rec := runnertest.NewRecorder()
	cfg := runnertest.Config(f.url(), rec)
	cfg.PingTimeout = 100 * time.Millisecond
	r := runnertest.NewRunner(t, cfg)
	connect(t, f, r, rec, "rid", 0) // the engine says nothing more
	err := runnertest.Next(t, rec.Disconnected, "OnDisconnected")
	var ce *runner.CloseError
	if err == nil || errors.As(err, &ce) {
		t.Fatalf("OnDisconnected(%v), want a silence error", err)
	}
	f.accept().initRunner("rid", 0)
	runnertest.Next(t, rec.Connected, "OnConnected after the silent socket")
}

func TestCommandAcks(t *testing.T) {
	f := newFakeEngine(t)
	rec := runnertest.NewRecorder()
	cfg := runnertest.Config(f.url(), rec)
	cfg.CommandAckInterval = 20 * time.Millisecond
	r := runnertest.NewRunner(t, cfg)
	s := connect(t, f, r, rec, "rid", 0)
	start := func(a string, gen uint32, idx int64) proto.CommandWrapper {
		return proto.CommandWrapper{Checkpoint: proto.ActorCheckpoint{ActorID: a, Generation: gen, Index: idx},
			Inner: proto.CommandStartActor{Config: proto.ActorConfig{Name: "n"}}}
	}
	s.send(proto.ToClientCommands{start("b", 0, 0), start("a", 1, 0), start("a", 1, 1)})
	s.send(proto.ToClientCommands{start("a", 0, 7)}) // older generation: not the last
	runnertest.Next(t, rec.Commands, "OnCommands")
	runnertest.Next(t, rec.Commands, "OnCommands")
	got := expect[proto.ToServerAckCommands](s)
	want := []proto.ActorCheckpoint{{ActorID: "a", Generation: 1, Index: 1}, {ActorID: "b", Generation: 0, Index: 0}}
	if !reflect.DeepEqual(got.LastCommandCheckpoints, want) {
		t.Fatalf("ack %+v, want %+v", got.LastCommandCheckpoints, want)
	}
	// Acknowledged once; a new command gives a new ack with only that actor.
	s.send(proto.ToClientCommands{start("c", 0, 0)})
	got = expect[proto.ToServerAckCommands](s)
	if want := []proto.ActorCheckpoint{{ActorID: "c"}}; !reflect.DeepEqual(got.LastCommandCheckpoints, want) {
		t.Fatalf("ack %+v, want %+v", got.LastCommandCheckpoints, want)
	}
}

func TestGracefulShutdown(t *testing.T) {
	f := newFakeEngine(t)
	rec := runnertest.NewRecorder()
	r := runnertest.NewRunner(t, runnertest.Config(f.url(), rec))
	s := connect(t, f, r, rec, "rid", 15000)
	rec.Actors.Store(2)

	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), runnertest.Wait)
		defer cancel()
		errc <- r.Shutdown(ctx, false)
	}()
	expect[proto.ToServerStopping](s)
	if st := r.State(); st != runner.StateStopping {
		t.Fatalf("State %v while draining", st)
	}
	// While draining, the socket still answers pings and carries the actors' last events.
	s.sync(1)
	stopped := proto.EventWrapper{Checkpoint: proto.ActorCheckpoint{ActorID: "a", Index: 3},
		Inner: proto.EventActorStateUpdate{State: proto.ActorStateStopped{Code: proto.StopCodeOK}}}
	if err := r.SendEvents(stopped); err != nil {
		t.Fatal(err)
	}
	if got := expect[proto.ToServerEvents](s); !reflect.DeepEqual([]proto.EventWrapper(got), []proto.EventWrapper{stopped}) {
		t.Fatalf("events %+v", got)
	}
	runnertest.None(t, errc, "Shutdown's return while actors run")

	rec.Actors.Store(0)
	s.expectClose(websocket.StatusNormalClosure, "pegboard.runner_shutdown")
	if err := runnertest.Next(t, errc, "Shutdown"); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	<-r.Done() // Shutdown returned nil: Done is closed
	if err := runnertest.Next(t, rec.Shutdown, "OnShutdown"); err != nil || r.Err() != nil {
		t.Fatalf("OnShutdown(%v), Err %v; want nil", err, r.Err())
	}
	if err := runnertest.Next(t, rec.Disconnected, "OnDisconnected"); err != nil {
		t.Fatalf("OnDisconnected(%v), want nil for the runner's own close", err)
	}
	if st := r.State(); st != runner.StateStopped {
		t.Fatalf("State %v", st)
	}
	if err := r.SendEvents(event("a", 0, 4)); !errors.Is(err, runner.ErrStopped) {
		t.Fatalf("SendEvents after stop: %v", err)
	}
	if d := f.dials.Load(); d != 1 {
		t.Fatalf("%d dials, want 1 (no reconnect after shutdown)", d)
	}
}

func TestGracefulShutdownTimeout(t *testing.T) {
	f := newFakeEngine(t)
	rec := runnertest.NewRecorder()
	cfg := runnertest.Config(f.url(), rec)
	cfg.ShutdownTimeout = 50 * time.Millisecond
	cfg.ShutdownPollInterval = 5 * time.Millisecond
	r := runnertest.NewRunner(t, cfg)
	s := connect(t, f, r, rec, "rid", 15000)
	rec.Actors.Store(1) // never stops
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), runnertest.Wait)
		defer cancel()
		errc <- r.Shutdown(ctx, false)
	}()
	expect[proto.ToServerStopping](s)
	s.expectClose(websocket.StatusNormalClosure, "pegboard.runner_shutdown")
	if err := runnertest.Next(t, errc, "Shutdown"); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func TestImmediateShutdown(t *testing.T) {
	f := newFakeEngine(t)
	rec := runnertest.NewRecorder()
	r := runnertest.NewRunner(t, runnertest.Config(f.url(), rec))
	s := connect(t, f, r, rec, "rid", 15000)
	rec.Actors.Store(3)
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), runnertest.Wait)
		defer cancel()
		errc <- r.Shutdown(ctx, true)
	}()
	s.expectClose(websocket.StatusNormalClosure, "pegboard.runner_shutdown") // no ToServerStopping
	if err := runnertest.Next(t, errc, "Shutdown"); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := runnertest.Next(t, rec.Shutdown, "OnShutdown"); err != nil {
		t.Fatalf("OnShutdown(%v)", err)
	}
}

func TestShutdownWhileDisconnected(t *testing.T) {
	f := newFakeEngine(t)
	rec := runnertest.NewRecorder()
	r := runnertest.NewRunner(t, runnertest.Config(f.url(), rec))
	s := connect(t, f, r, rec, "rid", 15000)
	rec.Actors.Store(1)
	f.refuse.Store(true)
	s.closeWith(websocket.StatusInternalError, "ws.going_away#r")
	runnertest.Next(t, f.refused, "a reconnect attempt")
	ctx, cancel := context.WithTimeout(context.Background(), runnertest.Wait)
	defer cancel()
	// No socket to drain on: Shutdown stops the runner without waiting for actors.
	if err := r.Shutdown(ctx, false); err != nil {
		t.Fatal(err)
	}
	if err := runnertest.Next(t, rec.Shutdown, "OnShutdown"); err != nil {
		t.Fatalf("OnShutdown(%v)", err)
	}
}

func TestEvictionStopsWithoutReconnect(t *testing.T) {
	f := newFakeEngine(t)
	rec := runnertest.NewRecorder()
	r := runnertest.NewRunner(t, runnertest.Config(f.url(), rec))
	s := connect(t, f, r, rec, "rid", 15000)
	s.closeWith(websocket.StatusNormalClosure, "ws.eviction#ray9")
	<-r.Done()
	var ce *runner.CloseError
	if err := r.Err(); !errors.As(err, &ce) || !ce.Evicted() || ce.Retryable() || !errors.Is(err, &client.APIError{Group: "ws", Code: "eviction"}) {
		t.Fatalf("Err() = %v, want the ws.eviction CloseError", err)
	}
	if err := runnertest.Next(t, rec.Disconnected, "OnDisconnected"); !errors.Is(err, &client.APIError{Group: "ws", Code: "eviction"}) {
		t.Fatalf("OnDisconnected(%v)", err)
	}
	if err := runnertest.Next(t, rec.Shutdown, "OnShutdown"); !errors.Is(err, &client.APIError{Group: "ws", Code: "eviction"}) {
		t.Fatalf("OnShutdown(%v)", err)
	}
	// Done means the supervisor has returned: there is no later dial.
	if d := f.dials.Load(); d != 1 {
		t.Fatalf("%d dials, want 1", d)
	}
	if st := r.State(); st != runner.StateStopped {
		t.Fatalf("State %v", st)
	}
}

func TestStartRetriesUntilTheEngineAnswers(t *testing.T) {
	f := newFakeEngine(t)
	f.refuse.Store(true)
	rec := runnertest.NewRecorder()
	r := runnertest.NewRunner(t, runnertest.Config(f.url(), rec))
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), runnertest.Wait)
		defer cancel()
		errc <- r.Start(ctx)
	}()
	for range 3 {
		runnertest.Next(t, f.refused, "a refused attempt") // 503: retried
	}
	if st := r.State(); st != runner.StateConnecting {
		t.Fatalf("State %v", st)
	}
	f.refuse.Store(false)
	f.accept().initRunner("rid", 0)
	if err := runnertest.Next(t, errc, "Start"); err != nil {
		t.Fatal(err)
	}
}

func TestStartContextEnds(t *testing.T) {
	f := newFakeEngine(t)
	f.refuse.Store(true)
	r := runnertest.NewRunner(t, runnertest.Config(f.url(), nil))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Start(ctx) }()
	// The second attempt means the first has been judged: its error is the last one.
	runnertest.Next(t, f.refused, "a refused attempt")
	runnertest.Next(t, f.refused, "a second refused attempt")
	cancel()
	err := runnertest.Next(t, errc, "Start")
	var he *runner.HandshakeError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &he) || he.Status != 503 || !errors.Is(err, &client.APIError{Group: "guard", Code: "service_unavailable"}) {
		t.Fatalf("Start: %v, want context.Canceled and the last attempt's 503", err)
	}
	<-r.Done()
	if !errors.Is(r.Err(), context.Canceled) {
		t.Fatalf("Err() = %v", r.Err())
	}
}

func TestStartFailsOnAnswersNoRetryChanges(t *testing.T) {
	for _, reason := range []string{"namespace.not_found#r1", "ws.invalid_packet#r2"} {
		t.Run(reason, func(t *testing.T) {
			f := newFakeEngine(t)
			rec := runnertest.NewRecorder()
			r := runnertest.NewRunner(t, runnertest.Config(f.url(), rec))
			errc := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), runnertest.Wait)
				defer cancel()
				errc <- r.Start(ctx)
			}()
			f.accept().closeWith(websocket.StatusInternalError, reason)
			err := runnertest.Next(t, errc, "Start")
			var ce *runner.CloseError
			if !errors.As(err, &ce) || ce.Reason != reason {
				t.Fatalf("Start: %v, want the close %q", err, reason)
			}
			<-r.Done()
			if d := f.dials.Load(); d != 1 {
				t.Fatalf("%d dials, want 1", d)
			}
			if err := runnertest.Next(t, rec.Shutdown, "OnShutdown"); !errors.Is(err, ce) {
				t.Fatalf("OnShutdown(%v)", err)
			}
			runnertest.None(t, rec.Disconnected, "OnDisconnected before any init")
		})
	}
}

func TestShutdownBeforeStart(t *testing.T) {
	rec := runnertest.NewRecorder()
	r := runnertest.NewRunner(t, runnertest.Config("http://127.0.0.1:1", rec))
	if err := r.SendEvents(event("a", 0, 0)); err != nil { // buffered for the first init
		t.Fatal(err)
	}
	if err := r.Shutdown(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	<-r.Done()
	if err := r.Start(context.Background()); !errors.Is(err, runner.ErrStopped) {
		t.Fatalf("Start after Shutdown: %v", err)
	}
	if err := runnertest.Next(t, rec.Shutdown, "OnShutdown"); err != nil {
		t.Fatalf("OnShutdown(%v)", err)
	}
}

func TestSendEventsRefusesWhatTheProtocolCannotCarry(t *testing.T) {
	r := runnertest.NewRunner(t, runnertest.Config("http://127.0.0.1:1", nil))
	bad := []proto.EventWrapper{
		{Checkpoint: proto.ActorCheckpoint{ActorID: "a"}},                                    // no event
		{Checkpoint: proto.ActorCheckpoint{ActorID: "a\xff"}, Inner: event("a", 0, 0).Inner}, // not UTF-8
	}
	for _, e := range bad {
		var ee *proto.EncodeError
		if err := r.SendEvents(event("ok", 0, 0), e); !errors.As(err, &ee) {
			t.Errorf("SendEvents(%+v) = %v, want an *EncodeError", e, err)
		}
	}
	if n := r.UnackedEvents(); n != 0 {
		t.Fatalf("UnackedEvents = %d after refused calls", n)
	}
}

func TestRunDrainsOnSIGTERM(t *testing.T) {
	f := newFakeEngine(t)
	rec := runnertest.NewRecorder()
	r := runnertest.NewRunner(t, runnertest.Config(f.url(), rec))
	rec.Actors.Store(1)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx) }()
	s := f.accept()
	s.initRunner("rid", 15000)
	runnertest.Next(t, rec.Connected, "OnConnected")

	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	expect[proto.ToServerStopping](s)
	runnertest.None(t, errc, "Run's return while an actor runs")
	rec.Actors.Store(0)
	s.expectClose(websocket.StatusNormalClosure, "pegboard.runner_shutdown")
	if err := runnertest.Next(t, errc, "Run"); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestStartConnectedAsContextEnds: a context that ends just as the runner connects leaves
// Start's wait with both of its cases ready; the connection must win, so that Run's graceful
// shutdown (ToServerStopping, the drain) follows rather than a stop without one. Start's
// context here hands out its Done channel only once OnConnected has cancelled it; a random
// pick between the two would pass a round only half the time.
func TestStartConnectedAsContextEnds(t *testing.T) {
	for round := range 8 {
		f := newFakeEngine(t)
		ctx, cancel := context.WithCancel(context.Background())
		connected := make(chan struct{})
		cfg := runnertest.Config(f.url(), nil)
		cfg.Hooks.OnConnected = func(string) { cancel(); close(connected) }
		r := runnertest.NewRunner(t, cfg)
		errc := make(chan error, 1)
		go func() { errc <- r.Start(doneAfter{ctx, connected}) }()
		s := f.accept()
		s.initRunner("rid", 15000)
		if err := runnertest.Next(t, errc, "Start"); err != nil {
			t.Fatalf("round %d: Start: %v, want nil (connected)", round, err)
		}
		go func() { errc <- r.Shutdown(context.Background(), false) }()
		expect[proto.ToServerStopping](s)
		s.expectClose(websocket.StatusNormalClosure, "pegboard.runner_shutdown")
		if err := runnertest.Next(t, errc, "Shutdown"); err != nil {
			t.Fatalf("round %d: Shutdown: %v", round, err)
		}
	}
}

// doneAfter is a context whose Done blocks until after is closed.
type doneAfter struct {
	context.Context
	after <-chan struct{}
}

func (c doneAfter) Done() <-chan struct{} {
	<-c.after
	return c.Context.Done()
}

func TestRunReturnsWhenEvicted(t *testing.T) {
	f := newFakeEngine(t)
	r := runnertest.NewRunner(t, runnertest.Config(f.url(), nil))
	errc := make(chan error, 1)
	go func() { errc <- r.Run(context.Background()) }()
	s := f.accept()
	s.initRunner("rid", 15000)
	s.closeWith(websocket.StatusNormalClosure, "ws.eviction#x")
	if err := runnertest.Next(t, errc, "Run"); !errors.Is(err, &client.APIError{Group: "ws", Code: "eviction"}) {
		t.Fatalf("Run: %v, want ws.eviction", err)
	}
}

func TestShutdownContextEnds(t *testing.T) {
	f := newFakeEngine(t)
	rec := runnertest.NewRecorder()
	r := runnertest.NewRunner(t, runnertest.Config(f.url(), rec))
	s := connect(t, f, r, rec, "rid", 15000)
	rec.Actors.Store(1) // never stops; ShutdownTimeout is the default 120 s
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Shutdown(ctx, false) }()
	expect[proto.ToServerStopping](s)
	cancel()
	if err := runnertest.Next(t, errc, "Shutdown"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown: %v, want context.Canceled", err)
	}
	// The socket is dropped without a close handshake, and the runner still stops.
	if m, err := s.recv(); err == nil || websocket.CloseStatus(err) != -1 {
		t.Fatalf("socket ended with %v %v, want a drop", m, err)
	}
	select {
	case <-r.Done():
	case <-time.After(runnertest.Wait):
		t.Fatal("runner not done")
	}
	if err := runnertest.Next(t, rec.Shutdown, "OnShutdown"); err != nil {
		t.Fatalf("OnShutdown(%v)", err)
	}
}
