package runner_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
	"github.com/berthhq/berth/sdk/runner/runnertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
	return runnertest.Next(f.t, f.socks, "a runner socket")
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
	ctx, cancel := context.WithTimeout(context.Background(), runnertest.Wait)
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
	case <-time.After(runnertest.Wait):
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
