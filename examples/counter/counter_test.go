package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/berthhq/berth/engine/enginetest"
	"github.com/berthhq/berth/sdk/client"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait: generous, so a loaded machine never fails the test.
const wait = 30 * time.Second

func testLogger() *slog.Logger {
	if os.Getenv("RUNNER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// The counter against a real engine in process: created through the REST API, counted
// through the gateway over HTTP and WebSocket, and its count kept in KV across sleeps (by
// the API and from inside) and wakes, each a new generation of the actor.
func TestCounterOnTheEngine(t *testing.T) {
	endpoint := startEngine(t, "tok")
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()

	// The runner, as main runs it: Run until its context ends, then drain.
	r, err := newRunner(options{Endpoint: endpoint, Namespace: "default", Pool: "counter", Token: "tok", Slots: 10}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRunner := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- r.Run(runCtx) }()
	t.Cleanup(func() {
		stopRunner()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	api, err := client.New(endpoint, client.WithToken("tok"), client.WithNamespace("default"), client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	// The pool exists once the runner registered: retry the create until then.
	var a client.Actor
	eventually(t, "the actor to be created", func() bool {
		a, err = api.Actors().Create(ctx, client.ActorCreateOptions{Name: "counter", Key: "c1", Pool: "counter", CrashPolicy: client.CrashSleep})
		return err == nil
	})
	base := endpoint + "/gateway/" + a.ActorId

	call := func(method, path string) string {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode/100 != 2 {
			t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, b)
		}
		return strings.TrimSpace(string(b))
	}
	if got := call("GET", "/"); got != "0" {
		t.Fatalf("new counter: %q", got)
	}
	for _, want := range []string{"1", "2", "3"} {
		if got := call("POST", "/"); got != want {
			t.Fatalf("POST: %q, want %s", got, want)
		}
	}
	if got := call("POST", "/?by=10"); got != "13" {
		t.Fatalf("POST ?by=10: %q", got)
	}

	// Asleep (by the API), woken by the next request: a new instance that loads 13 from KV.
	if err := api.Actors().Sleep(ctx, a.ActorId); err != nil {
		t.Fatal(err)
	}
	waitAsleep(t, ctx, api, a.ActorId)
	if got := call("GET", "/"); got != "13" {
		t.Fatalf("after sleep and wake: %q", got)
	}

	// Asleep from inside, then counted over a WebSocket, which wakes it again.
	call("POST", "/sleep")
	waitAsleep(t, ctx, api, a.ActorId)
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/", &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	for _, want := range []string{"14", "15"} {
		if err := ws.Write(ctx, websocket.MessageText, []byte("+")); err != nil {
			t.Fatal(err)
		}
		_, b, err := ws.Read(ctx)
		if err != nil || string(b) != want {
			t.Fatalf("over the WebSocket: %q %v, want %s", b, err, want)
		}
	}
	_ = ws.Close(websocket.StatusNormalClosure, "")
	if got := call("GET", "/"); got != "15" {
		t.Fatalf("after the WebSocket: %q", got)
	}

	if err := api.Actors().Destroy(ctx, a.ActorId); err != nil {
		t.Fatal(err)
	}
	if got, err := api.Actors().Get(ctx, a.ActorId); err != nil || got.DestroyTs == nil {
		t.Fatalf("after Destroy: %+v %v", got, err)
	}
}

// startEngine starts an engine in process (enginetest.Start) with admin token token ("" for
// none) and returns its public URL.
func startEngine(t *testing.T, token string) string {
	t.Helper()
	return enginetest.URL(enginetest.Start(t, testLogger(), enginetest.AdminToken(token)))
}

// syncBuffer is a log destination the test reads while the runner writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A drain by the engine (berth runners drain) ends the counter with status 0 and an info
// line, not an error.
func TestDrainedRunnerExitsZero(t *testing.T) {
	endpoint := startEngine(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()

	var out syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, options{Endpoint: endpoint, Namespace: "default", Pool: "counter", Slots: 10}, slog.New(slog.NewTextHandler(&out, nil)))
	}()
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	api, err := client.New(endpoint, client.WithNamespace("default"), client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	var runnerID string
	eventually(t, "the runner to connect", func() bool {
		p, err := api.Runners().List(ctx, client.RunnerListOptions{Name: "counter"})
		if err != nil || len(p.Items) == 0 {
			return false
		}
		runnerID = p.Items[0].RunnerId
		return true
	})
	if _, err := api.Runners().Drain(ctx, runnerID); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit status %d after a drain, want 0; log:\n%s", c, out.String())
		}
	case <-ctx.Done():
		t.Fatalf("the runner did not stop after the drain; log:\n%s", out.String())
	}
	log := out.String()
	if !strings.Contains(log, "level=INFO msg=\"counter: the engine drained this runner; exiting\"") || strings.Contains(log, "level=ERROR") {
		t.Errorf("log after a drain:\n%s", log)
	}
}

// waitAsleep polls the API until the actor sleeps.
func waitAsleep(t *testing.T, ctx context.Context, api *client.Client, actorID string) {
	t.Helper()
	eventually(t, "the actor to sleep", func() bool {
		a, err := api.Actors().Get(ctx, actorID)
		return err == nil && a.SleepTs != nil && a.ConnectableTs == nil
	})
}

// eventually polls cond until it holds, failing after wait.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
