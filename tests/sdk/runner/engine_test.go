package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthhq/berth/engine"
	"github.com/berthhq/berth/engine/enginetest"
	"github.com/berthhq/berth/engine/hostsock"
	"github.com/berthhq/berth/engine/hostsock/hostsocktest"
	"github.com/berthhq/berth/ops/namespace"
	oprunner "github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded"
	"github.com/berthhq/berth/sdk/client"
	"github.com/berthhq/berth/sdk/runner"
	"github.com/berthhq/berth/sdk/runner/runnertest"
)

// These tests run the runner against the real engine in process: the whole engine (engine.Start
// on loopback with a mem:// store), or its host sockets alone (engine/hostsock/hostsocktest on httptest) where
// a test needs short ping intervals or a restart.

func startEngine(t *testing.T, token string) *engine.Engine {
	t.Helper()
	return enginetest.Start(t, runnertest.Logger(), enginetest.AdminToken(token))
}

func TestRegistersWithTheEngine(t *testing.T) {
	e := startEngine(t, "tok")
	endpoint := "http://" + e.PublicAddr().String()
	rec := runnertest.NewRecorder()
	cfg := runnertest.Config(endpoint, rec)
	cfg.Token = "tok"
	cfg.Key = "k-1"
	cfg.Metadata = json.RawMessage(`{"zone":"a"}`)
	r := runnertest.NewRunner(t, cfg)
	runnertest.Start(t, r)
	rid := runnertest.Next(t, rec.Connected, "OnConnected")
	if rid == "" || rid != r.RunnerID() {
		t.Fatalf("OnConnected(%q), RunnerID %q", rid, r.RunnerID())
	}

	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	c, err := client.New(endpoint, client.WithToken("tok"), client.WithNamespace("default"), client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), runnertest.Wait)
	defer cancel()
	page, err := c.Runners().List(ctx, client.RunnerListOptions{Name: "pool"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 {
		t.Fatalf("runners %+v, want one", page.Items)
	}
	got := page.Items[0]
	if got.RunnerId != rid || got.Key != "k-1" || got.Name != "pool" || got.Version != 3 || got.TotalSlots != 8 ||
		got.Metadata == nil || !reflect.DeepEqual(*got.Metadata, map[string]any{"zone": "a"}) {
		t.Fatalf("runner %+v", got)
	}

	// Graceful shutdown with no actors: ToServerStopping, then close at once.
	if err := r.Shutdown(ctx, false); err != nil {
		t.Fatal(err)
	}
	if err := runnertest.Next(t, rec.Shutdown, "OnShutdown"); err != nil {
		t.Fatalf("OnShutdown(%v)", err)
	}
}

func TestGracefulShutdownDrainsOnTheEngine(t *testing.T) {
	e := startEngine(t, "")
	endpoint := "http://" + e.PublicAddr().String()
	rec := runnertest.NewRecorder()
	r := runnertest.NewRunner(t, runnertest.Config(endpoint, rec))
	runnertest.Start(t, r)
	rid := runnertest.Next(t, rec.Connected, "OnConnected")

	// The host claims an actor still runs, so the runner waits after ToServerStopping. The
	// engine knows of no actor on the runner: it stops it at once and closes the socket with
	// 1000 ws.eviction, which ends the wait well before ShutdownTimeout (120 s).
	rec.Actors.Store(1)
	ctx, cancel := context.WithTimeout(context.Background(), runnertest.Wait)
	defer cancel()
	if err := r.Shutdown(ctx, false); err != nil {
		t.Fatal(err)
	}
	if err := runnertest.Next(t, rec.Disconnected, "OnDisconnected"); !errors.Is(err, &client.APIError{Group: "ws", Code: "eviction"}) {
		t.Fatalf("OnDisconnected(%v), want the engine's ws.eviction", err)
	}
	if err := runnertest.Next(t, rec.Shutdown, "OnShutdown"); err != nil {
		t.Fatalf("OnShutdown(%v), want nil: the runner asked to stop", err)
	}

	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	c, err := client.New(endpoint, client.WithNamespace("default"), client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.Runners().List(ctx, client.RunnerListOptions{RunnerIDs: []string{rid}, IncludeStopped: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].DrainTs == nil || page.Items[0].StopTs == nil {
		t.Fatalf("runners %+v, want %s drained and stopped", page.Items, rid)
	}
}

func TestEngineRefusesStart(t *testing.T) {
	e := startEngine(t, "tok")
	endpoint := "http://" + e.PublicAddr().String()
	// Every refusal is a close frame after the upgrade, as on Rivet (the token is checked
	// first): 1008 for the token, 1011 for the rest.
	for _, tc := range []struct {
		name, token, namespace string
		close                  int
		group, code            string
	}{
		{"wrong token", "nope", "default", 1008, "api", "forbidden"},
		{"no token", "", "default", 1008, "api", "unauthorized"},
		{"unknown namespace", "tok", "nope", 1011, "namespace", "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := runnertest.Config(endpoint, nil)
			cfg.Token, cfg.Namespace = tc.token, tc.namespace
			r := runnertest.NewRunner(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), runnertest.Wait)
			defer cancel()
			err := r.Start(ctx)
			if !errors.Is(err, &client.APIError{Group: tc.group, Code: tc.code}) || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Start: %v, want %s.%s at once", err, tc.group, tc.code)
			}
			var ce *runner.CloseError
			if !errors.As(err, &ce) || ce.CloseCode != tc.close || ce.RayID == "" {
				t.Fatalf("Start: %v, want a %d close with a ray id", err, tc.close)
			}
			<-r.Done()
		})
	}
}

// socketEnv is the engine's runner socket alone, on httptest over a mem:// store, so a test can
// shorten the ping interval and restart the socket server (as an engine restart would).
type socketEnv struct {
	t   *testing.T
	db  udb.Database
	c   hostsocktest.Config
	hs  *httptest.Server
	cur atomic.Pointer[hostsocktest.Node]
	// down makes the endpoint answer 503, as a proxy in front of a stopped engine would.
	down atomic.Bool
}

func startSocket(t *testing.T, c hostsocktest.Config) *socketEnv {
	t.Helper()
	ctx := context.Background()
	db, err := udb.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := udb.Transact(ctx, db, func(tx udb.Transaction) (namespace.EnsureDefaultOutput, error) {
		return namespace.EnsureDefault(ctx, tx, namespace.EnsureDefaultInput{NamespaceID: id.New(1), NowMs: time.Now().UnixMilli()})
	}); err != nil {
		t.Fatal(err)
	}
	c.Label, c.Log = 1, slog.New(runnertest.Logger().Handler())
	e := &socketEnv{t: t, db: db, c: c}
	e.cur.Store(hostsocktest.Start(t, db, c))
	e.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e.down.Load() {
			http.Error(w, "engine down", http.StatusServiceUnavailable)
			return
		}
		e.cur.Load().Server.Wrap(http.NotFoundHandler()).ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		e.cur.Load().Stop()
		e.hs.Close()
		_ = db.Close()
	})
	return e
}

// restart puts a new socket server in front, then closes the old one: its sockets end with
// 1011 ws.going_away and reconnect to the new one.
func (e *socketEnv) restart() {
	old := e.cur.Swap(hostsocktest.Start(e.t, e.db, e.c))
	old.Stop()
}

// runner reads the runner as GET /runners would.
func (e *socketEnv) runner(rid string) oprunner.Runner {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runnertest.Wait)
	defer cancel()
	res, err := udb.ReadTransact(ctx, e.db, func(tx udb.ReadTransaction) (oprunner.Runner, error) {
		return oprunner.Get(ctx, tx, oprunner.GetInput{RunnerID: id.MustParse(rid)})
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// eventually polls cond until it holds, failing after wait.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(runnertest.Wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestProtocolVersions(t *testing.T) {
	e := startSocket(t, hostsocktest.Config{})
	for _, v := range []int{5, 6, 7} {
		rec := runnertest.NewRecorder()
		cfg := runnertest.Config(e.hs.URL, rec)
		cfg.ProtocolVersion = v
		r := runnertest.NewRunner(t, cfg)
		runnertest.Start(t, r)
		rid := runnertest.Next(t, rec.Connected, "OnConnected")
		if got := e.runner(rid); got.Key != r.Key() {
			t.Fatalf("v%d: registered %+v", v, got)
		}
	}
}

func TestPingsReachTheEngine(t *testing.T) {
	e := startSocket(t, hostsocktest.Config{Runner: hostsock.Timing{PingInterval: 20 * time.Millisecond}})
	rec := runnertest.NewRecorder()
	r := runnertest.NewRunner(t, runnertest.Config(e.hs.URL, rec))
	runnertest.Start(t, r)
	rid := runnertest.Next(t, rec.Connected, "OnConnected")
	registered := e.runner(rid).LastPingTs
	// The engine records a ping only when the pong comes back.
	eventually(t, "last_ping_ts to advance past the registration", func() bool {
		return e.runner(rid).LastPingTs > registered
	})
	if st := r.State(); st != runner.StateConnected {
		t.Fatalf("State %v", st)
	}
}

func TestReconnectsAfterTheEngineGoesAway(t *testing.T) {
	e := startSocket(t, hostsocktest.Config{})
	rec := runnertest.NewRecorder()
	r := runnertest.NewRunner(t, runnertest.Config(e.hs.URL, rec))
	runnertest.Start(t, r)
	rid := runnertest.Next(t, rec.Connected, "OnConnected")

	e.restart()
	err := runnertest.Next(t, rec.Disconnected, "OnDisconnected")
	var ce *runner.CloseError
	if !errors.As(err, &ce) || ce.CloseCode != 1011 || !errors.Is(err, &client.APIError{Group: "ws", Code: "going_away"}) {
		t.Fatalf("OnDisconnected(%v), want 1011 ws.going_away", err)
	}
	if got := runnertest.Next(t, rec.Connected, "OnConnected after the restart"); got != rid {
		t.Fatalf("reconnected as %q, want the same runner id %q", got, rid)
	}
	if st := r.State(); st != runner.StateConnected {
		t.Fatalf("State %v", st)
	}
	runnertest.None(t, rec.ForceStop, "OnForceStopActors")
}

func TestRunnerLostWhileTheEngineStaysAway(t *testing.T) {
	// The engine's ToClientInit carries runnerLostThreshold; the runner times its absence by it.
	e := startSocket(t, hostsocktest.Config{Runner: hostsock.Timing{LostThreshold: 50 * time.Millisecond}})
	rec := runnertest.NewRecorder()
	r := runnertest.NewRunner(t, runnertest.Config(e.hs.URL, rec))
	runnertest.Start(t, r)
	rid := runnertest.Next(t, rec.Connected, "OnConnected")

	e.down.Store(true)
	e.restart()
	runnertest.Next(t, rec.Disconnected, "OnDisconnected")
	if got := runnertest.Next(t, rec.ForceStop, "OnForceStopActors"); got != runner.RunnerLost {
		t.Fatalf("OnForceStopActors(%v), want RunnerLost", got)
	}
	if st := r.State(); st != runner.StateReconnecting {
		t.Fatalf("State %v", st)
	}
	e.down.Store(false)
	if got := runnertest.Next(t, rec.Connected, "OnConnected once the engine is back"); got == "" {
		t.Fatal("empty runner id")
	} else if got != rid {
		// The engine expired the runner meanwhile: the host hears it once more.
		if why := runnertest.Next(t, rec.ForceStop, "OnForceStopActors"); why != runner.RunnerIDChanged {
			t.Fatalf("OnForceStopActors(%v) after a new id", why)
		}
	}
}

func TestEvictedBySameKey(t *testing.T) {
	e := startSocket(t, hostsocktest.Config{})
	rec1, rec2 := runnertest.NewRecorder(), runnertest.NewRecorder()
	cfg := runnertest.Config(e.hs.URL, rec1)
	cfg.Key = "same"
	first := runnertest.NewRunner(t, cfg)
	runnertest.Start(t, first)
	rid := runnertest.Next(t, rec1.Connected, "first OnConnected")

	cfg.Hooks = rec2.Hooks()
	second := runnertest.NewRunner(t, cfg)
	runnertest.Start(t, second)
	if got := runnertest.Next(t, rec2.Connected, "second OnConnected"); got != rid {
		t.Fatalf("second runner got id %q, want %q", got, rid)
	}

	// The first is evicted (1000 ws.eviction) and stops for good: Done closes only once its
	// supervisor has returned, so it cannot dial again.
	select {
	case <-first.Done():
	case <-time.After(runnertest.Wait):
		t.Fatal("the evicted runner did not stop")
	}
	var ce *runner.CloseError
	if err := first.Err(); !errors.As(err, &ce) || ce.CloseCode != 1000 || !ce.Evicted() {
		t.Fatalf("Err() = %v, want 1000 ws.eviction", err)
	}
	if err := runnertest.Next(t, rec1.Shutdown, "OnShutdown"); !errors.Is(err, &client.APIError{Group: "ws", Code: "eviction"}) {
		t.Fatalf("OnShutdown(%v)", err)
	}
	if st := second.State(); st != runner.StateConnected {
		t.Fatalf("second runner State %v", st)
	}
	runnertest.None(t, rec2.Disconnected, "OnDisconnected of the second runner")
}
