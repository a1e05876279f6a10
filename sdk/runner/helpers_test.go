package runner_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
	"github.com/berthhq/berth/sdk/runner"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait of these tests: generous, so a loaded machine never fails them,
// while a real hang still does.
const wait = 20 * time.Second

// testLogger discards logs unless RUNNER_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("RUNNER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// recorder records the hooks on buffered channels, so hooks never block.
type recorder struct {
	connected    chan string
	disconnected chan error
	commands     chan []proto.CommandWrapper
	forceStop    chan runner.ForceStopReason
	shutdown     chan error
	actors       atomic.Int64 // what ActiveActors reports
}

func newRecorder() *recorder {
	return &recorder{
		connected:    make(chan string, 64),
		disconnected: make(chan error, 64),
		commands:     make(chan []proto.CommandWrapper, 64),
		forceStop:    make(chan runner.ForceStopReason, 64),
		shutdown:     make(chan error, 64),
	}
}

func (rec *recorder) hooks() runner.Hooks {
	return runner.Hooks{
		OnConnected:       func(id string) { rec.connected <- id },
		OnDisconnected:    func(err error) { rec.disconnected <- err },
		OnCommands:        func(c []proto.CommandWrapper) { rec.commands <- c },
		OnForceStopActors: func(r runner.ForceStopReason) { rec.forceStop <- r },
		OnShutdown:        func(err error) { rec.shutdown <- err },
		ActiveActors:      func() int { return int(rec.actors.Load()) },
	}
}

// next receives from ch, failing the test after wait.
func next[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// none checks that nothing has been received on ch.
func none[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("unexpected %s: %v", what, v)
	default:
	}
}

// testConfig is a valid config with test timings: reconnects within milliseconds.
func testConfig(endpoint string, rec *recorder) runner.Config {
	cfg := runner.Config{
		Endpoint:       endpoint,
		Namespace:      "default",
		Name:           "pool",
		Version:        3,
		TotalSlots:     8,
		Logger:         testLogger(),
		BackoffInitial: 5 * time.Millisecond,
		BackoffMax:     50 * time.Millisecond,
	}
	if rec != nil {
		cfg.Hooks = rec.hooks()
	}
	return cfg
}

// newRunner makes a runner that the test's cleanup shuts down (immediately) and waits for.
func newRunner(t *testing.T, cfg runner.Config) *runner.Runner {
	t.Helper()
	r, err := runner.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := r.Shutdown(ctx, true); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		select {
		case <-r.Done():
		case <-time.After(wait):
			t.Errorf("runner not done %s after Shutdown", wait)
		}
	})
	return r
}

func start(t *testing.T, r *runner.Runner) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
}

// fakeEngine is a runner endpoint built from sdk/protocol/runner on httptest, so that a test
// sees every frame the runner sends and scripts the engine's side. Each socket that sends a
// ToServerInit is handed to the test on socks.
type fakeEngine struct {
	t       *testing.T
	hs      *httptest.Server
	socks   chan *fakeSock
	refuse  atomic.Bool  // answer 503 instead of upgrading
	dials   atomic.Int64 // upgrade requests seen
	refused chan struct{}
	quit    chan struct{}
	wg      sync.WaitGroup
}

// fakeSock is the engine's side of one runner socket. Its handler reads all the time (so the
// runner's close handshakes complete) and queues what it reads on in.
type fakeSock struct {
	t     *testing.T
	ws    *websocket.Conn
	path  string // the URL path the runner dialled
	query url.Values
	proto string // the subprotocols the runner offered
	init  proto.ToServerInit
	in    chan frame // closed after the frame holding the socket's end
}

type frame struct {
	m   proto.ToServer
	err error // the socket's end
}

func newFakeEngine(t *testing.T) *fakeEngine {
	f := &fakeEngine{t: t, socks: make(chan *fakeSock, 16), refused: make(chan struct{}, 1024), quit: make(chan struct{})}
	f.hs = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		close(f.quit)
		f.hs.Close()
		f.wg.Wait()
	})
	return f
}

func (f *fakeEngine) url() string { return f.hs.URL }

func (f *fakeEngine) serve(w http.ResponseWriter, r *http.Request) {
	f.dials.Add(1)
	if f.refuse.Load() {
		http.Error(w, `{"group":"guard","code":"service_unavailable","message":"down"}`, http.StatusServiceUnavailable)
		f.refused <- struct{}{}
		return
	}
	f.wg.Add(1)
	defer f.wg.Done()
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"rivet"}})
	if err != nil {
		return
	}
	ws.SetReadLimit(-1)
	readerDone := make(chan struct{})
	defer close(readerDone)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		select {
		case <-f.quit:
			_ = ws.CloseNow()
		case <-readerDone:
		}
	})
	defer ws.CloseNow()

	s := &fakeSock{t: f.t, ws: ws, path: r.URL.Path, query: r.URL.Query(),
		proto: r.Header.Get("Sec-WebSocket-Protocol"), in: make(chan frame, 1024)}
	_, b, err := ws.Read(context.Background())
	if err != nil {
		return
	}
	m, err := proto.DecodeToServer(b, 7)
	if err != nil {
		f.t.Errorf("fake engine: first frame: %v", err)
		return
	}
	init, ok := m.(proto.ToServerInit)
	if !ok {
		f.t.Errorf("fake engine: first frame is %T", m)
		return
	}
	s.init = init
	f.socks <- s
	defer close(s.in)
	for {
		typ, b, err := ws.Read(context.Background())
		if err != nil {
			s.in <- frame{err: err}
			return
		}
		if typ != websocket.MessageBinary {
			s.in <- frame{err: errors.New("fake engine: text frame")}
			return
		}
		m, err := proto.DecodeToServer(b, 7)
		if err != nil {
			s.in <- frame{err: err}
			return
		}
		s.in <- frame{m: m}
	}
}

// accept returns the next socket that sent ToServerInit.
func (f *fakeEngine) accept() *fakeSock {
	f.t.Helper()
	return next(f.t, f.socks, "a runner socket")
}

// initRunner answers ToServerInit.
func (s *fakeSock) initRunner(runnerID string, lostThresholdMs int64) {
	s.t.Helper()
	s.send(proto.ToClientInit{RunnerID: runnerID, Metadata: proto.ProtocolMetadata{RunnerLostThreshold: lostThresholdMs, ActorStopThreshold: 1800000}})
}

func (s *fakeSock) send(m proto.ToClient) {
	s.t.Helper()
	b, err := proto.EncodeToClient(m, 7)
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := s.ws.Write(ctx, websocket.MessageBinary, b); err != nil {
		s.t.Fatalf("fake engine: write: %v", err)
	}
}

// recv returns the next message from the runner, or the error that ended the socket.
func (s *fakeSock) recv() (proto.ToServer, error) {
	s.t.Helper()
	select {
	case f, ok := <-s.in:
		if !ok {
			return nil, errors.New("fake engine: socket already ended")
		}
		return f.m, f.err
	case <-time.After(wait):
		s.t.Fatal("fake engine: timed out waiting for a frame from the runner")
		return nil, nil
	}
}

// expect returns the next message, which must be a T.
func expect[T proto.ToServer](s *fakeSock) T {
	s.t.Helper()
	m, err := s.recv()
	if err != nil {
		s.t.Fatalf("fake engine: want %T, socket ended: %v", *new(T), err)
	}
	v, ok := m.(T)
	if !ok {
		s.t.Fatalf("fake engine: got %T %+v, want %T", m, m, *new(T))
	}
	return v
}

// expectClose reads until the runner closes the socket and checks the close frame.
func (s *fakeSock) expectClose(code websocket.StatusCode, reason string) {
	s.t.Helper()
	m, err := s.recv()
	if err == nil {
		s.t.Fatalf("fake engine: got %T %+v, want the close frame", m, m)
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != code || ce.Reason != reason {
		s.t.Fatalf("fake engine: socket ended with %v, want close %d %q", err, code, reason)
	}
}

// closeWith closes the socket from the engine's side.
func (s *fakeSock) closeWith(code websocket.StatusCode, reason string) {
	_ = s.ws.Close(code, reason)
}

// event is a state-update event of actor a at (generation, index).
func event(a string, gen uint32, idx int64) proto.EventWrapper {
	return proto.EventWrapper{
		Checkpoint: proto.ActorCheckpoint{ActorID: a, Generation: gen, Index: idx},
		Inner:      proto.EventActorStateUpdate{State: proto.ActorStateRunning{}},
	}
}

func checkpoints(evs []proto.EventWrapper) []proto.ActorCheckpoint {
	out := make([]proto.ActorCheckpoint, len(evs))
	for i, e := range evs {
		out[i] = e.Checkpoint
	}
	return out
}
