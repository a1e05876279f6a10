package guard

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/berthhq/berth/guard/core"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeActors is an actor lifecycle whose change channels the test closes; its
// get-or-create runs the real op on the fixture's store (no runner gets commands).
type fakeActors struct {
	db       udb.Database
	mu       sync.Mutex
	watchers map[id.ID]chan struct{}
	onChange map[id.ID][]*func() // nil entries were stopped
	watched  chan id.ID          // if set, gets the actor of every OnChange call
	wakes    int
	hang     bool // Wake waits until its context ends
}

func (f *fakeActors) Wake(ctx context.Context, _ id.ID) error {
	f.mu.Lock()
	f.wakes++
	hang := f.hang
	f.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (f *fakeActors) Watch(aid id.ID) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.watchers[aid] == nil {
		f.watchers[aid] = make(chan struct{})
	}
	return f.watchers[aid]
}

func (f *fakeActors) OnChange(aid id.ID, fn func()) (stop func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.onChange == nil {
		f.onChange = map[id.ID][]*func(){}
	}
	key := &fn
	f.onChange[aid] = append(f.onChange[aid], key)
	if f.watched != nil {
		f.watched <- aid
	}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, k := range f.onChange[aid] {
			if k == key {
				f.onChange[aid][i] = nil
			}
		}
	}
}

// changed closes aid's change channel and calls its OnChange functions, as the lifecycle
// does at the actor's next change.
func (f *fakeActors) changed(aid id.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch := f.watchers[aid]; ch != nil {
		close(ch)
		delete(f.watchers, aid)
	}
	for _, fn := range f.onChange[aid] {
		if fn != nil {
			go (*fn)()
		}
	}
	delete(f.onChange, aid)
}

func (f *fakeActors) GetOrCreate(ctx context.Context, in actor.CreateInput) (actor.Actor, bool, error) {
	in.ActorID, in.NowMs, in.Config = id.New(1), time.Now().UnixMilli(), actor.DefaultConfig()
	out, err := udb.Transact(ctx, f.db, func(tx udb.Transaction) (actor.GetOrCreateOutput, error) { return actor.GetOrCreate(ctx, tx, in) })
	if err != nil {
		return actor.Actor{}, false, err
	}
	return out.Actor, out.Created, nil
}

func (f *fakeActors) GetByKey(ctx context.Context, ns id.ID, name, key string) (actor.Actor, bool, error) {
	out, err := udb.ReadTransact(ctx, f.db, func(r udb.ReadTransaction) (actor.ListOutput, error) {
		return actor.List(ctx, r, actor.ListInput{Namespace: ns, Name: name, Key: &key, Limit: 1})
	})
	if err != nil || len(out.Actors) == 0 {
		return actor.Actor{}, false, err
	}
	return out.Actors[0], true, nil
}

// fakeRunners answers tunnelled requests with answer, per runner, and counts them.
type fakeRunners struct {
	mu     sync.Mutex
	calls  map[id.ID]int
	paths  []string
	answer func(rid id.ID) proto.ToServerResponseStart
}

func (f *fakeRunners) OpenTunnel(h actor.Host) (Tunnel, error) {
	return &fakeTunnel{f: f, rid: h.RunnerID, out: make(chan proto.ToServerTunnelMessageKind, 1)}, nil
}

// hostsOf makes a Hosts of a test's tunnels: every host is connected, none resumes.
type hostsOf struct {
	open func(actor.Host) (Tunnel, error)
}

func (h hostsOf) OpenTunnel(host actor.Host) (Tunnel, error) { return h.open(host) }
func (hostsOf) ResumeTunnel(id.ID, proto.RequestID, uint16) (Tunnel, error) {
	return nil, errors.New("no resume in this test")
}
func (hostsOf) GatewayID() proto.GatewayID                          { return proto.GatewayID{} }
func (hostsOf) Connected(context.Context, actor.Host) (bool, error) { return true, nil }

func (f *fakeRunners) count(rid id.ID) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[rid]
}

type fakeTunnel struct {
	f   *fakeRunners
	rid id.ID
	out chan proto.ToServerTunnelMessageKind
}

func (t *fakeTunnel) Send(m proto.ToClientTunnelMessageKind) error {
	if start, ok := m.(proto.ToClientRequestStart); ok {
		t.f.mu.Lock()
		t.f.calls[t.rid]++
		t.f.paths = append(t.f.paths, start.Path)
		t.f.mu.Unlock()
		if a := t.f.answer(t.rid); a.Status != 0 { // 0: the runner never answers
			t.out <- a
		}
	}
	return nil
}

func (t *fakeTunnel) Recv(ctx context.Context) (proto.ToServerTunnelMessageKind, error) {
	select {
	case m := <-t.out:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (t *fakeTunnel) Close() {}

type fixture struct {
	db      udb.Database
	actors  *fakeActors
	runners *fakeRunners
	gw      *Gateway
	next    http.Handler
	h       http.Handler
}

func newFixture(t *testing.T, o Options) *fixture {
	db, err := udb.Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	f := &fixture{db: db, actors: &fakeActors{db: db, watchers: map[id.ID]chan struct{}{}},
		runners: &fakeRunners{calls: map[id.ID]int{}, answer: func(id.ID) proto.ToServerResponseStart {
			return proto.ToServerResponseStart{Status: 200, Body: []byte("ok")}
		}}}
	o.DB, o.Actors, o.Hosts = db, f.actors, hostsOf{f.runners.OpenTunnel}
	o.Topology = apihttp.Topology{Local: 1, Datacenters: []apihttp.Datacenter{{Name: "default", Label: 1, IsLeader: true}}}
	o.Retry.Sleep = func(context.Context, time.Duration) error { return nil }
	f.gw = New(o)
	f.next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Next", "1")
		w.WriteHeader(299)
	})
	f.h = f.gw.Wrap(f.next)
	return f
}

// place records aid in phase on runner rid.
func (f *fixture) place(t *testing.T, aid id.ID, phase keys.ActorPhase, rid *id.ID) {
	t.Helper()
	err := udb.Update(context.Background(), f.db, func(tx udb.Transaction) error {
		keys.Set(tx, keys.ActorStateKey{ActorID: aid}, keys.ActorState{V: keys.ActorStateVersion, Phase: phase, RunnerID: rid, Namespace: id.New(1),
			Name: "echo", Selector: "pool", CrashPolicy: actor.CrashSleep})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) serve(method, target string, header http.Header, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	return w
}

func errKey(w *httptest.ResponseRecorder) string { return w.Header().Get("X-Rivet-Error") }

// The guard port routes in Rivet's order: gateway paths, socket paths, targets, then the API.
func TestRoutingOrder(t *testing.T) {
	f := newFixture(t, Options{})
	aid, rid := id.New(1), id.New(1)
	f.place(t, aid, keys.PhaseRunning, &rid)
	actorHdr := http.Header{"X-Rivet-Target": {"actor"}, "X-Rivet-Actor": {aid.String()}}
	for _, tc := range []struct {
		name, method, target string
		header               http.Header
		status               int
		errKey, actorPath    string
	}{
		{"gateway path beats any target", "GET", "/gateway/" + aid.String() + "/x?y=1", http.Header{"X-Rivet-Target": {"runner"}}, 200, "", "/x?y=1"},
		{"runner socket path beats the actor target", "GET", "/runners/connect", actorHdr, 299, "", ""},
		{"envoy socket path", "GET", "/envoys/connect/", actorHdr, 299, "", ""},
		{"actor target, /request", "POST", "/request?a=1", actorHdr, 200, "", "/request?a=1"},
		{"actor target, /request/sub", "POST", "/request/sub", actorHdr, 200, "", "/request/sub"},
		{"actor target, other path", "POST", "/requests", actorHdr, 404, "guard.no_route", ""},
		{"actor target, preflight on any path", "OPTIONS", "/anything", actorHdr, 204, "", ""},
		{"runner target", "GET", "/x", http.Header{"X-Rivet-Target": {"runner"}}, 299, "", ""},
		{"envoy target", "GET", "/x", http.Header{"X-Rivet-Target": {"envoy"}}, 299, "", ""},
		{"api-public target", "GET", "/x", http.Header{"X-Rivet-Target": {"api-public"}}, 299, "", ""},
		{"unknown target", "GET", "/x", http.Header{"X-Rivet-Target": {"db"}}, 404, "guard.no_route", ""},
		{"no target", "GET", "/actors", nil, 299, "", ""},
		{"/gateway alone falls through", "GET", "/gateway", nil, 299, "", ""},
		{"/gateway/ falls through", "GET", "/gateway/", nil, 299, "", ""},
		{"// falls through", "GET", "/gateway//" + aid.String(), nil, 299, "", ""},
		{"gateway preflight", "OPTIONS", "/gateway/" + aid.String() + "/x", nil, 204, "", ""},
	} {
		f.runners.paths = nil
		w := f.serve(tc.method, tc.target, tc.header, "")
		if w.Code != tc.status || errKey(w) != tc.errKey {
			t.Errorf("%s: %d %q %s, want %d %q", tc.name, w.Code, errKey(w), w.Body, tc.status, tc.errKey)
			continue
		}
		if tc.actorPath != "" && (len(f.runners.paths) != 1 || f.runners.paths[0] != tc.actorPath) {
			t.Errorf("%s: actor saw %q, want %q", tc.name, f.runners.paths, tc.actorPath)
		}
		if w.Code == 200 && w.Header().Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s: no CORS on the actor's answer", tc.name)
		}
	}
}

// The first attempt uses the cached route; a stale answer makes the retry resolve again,
// and the actor's change drops the entry.
func TestRouteCache(t *testing.T) {
	f := newFixture(t, Options{})
	aid, a, b := id.New(1), id.New(1), id.New(1)
	hosts := map[id.ID]bool{a: true}
	var mu sync.Mutex
	f.runners.answer = func(rid id.ID) proto.ToServerResponseStart {
		mu.Lock()
		defer mu.Unlock()
		if !hosts[rid] {
			return proto.ToServerResponseStart{Status: 503, Headers: []proto.Header{{Name: "x-rivet-error", Value: "runner.actor_not_found"}}}
		}
		return proto.ToServerResponseStart{Status: 200, Body: []byte(rid.String())}
	}
	f.place(t, aid, keys.PhaseRunning, &a)
	target := "/gateway/" + aid.String() + "/x"
	if w := f.serve("GET", target, nil, ""); w.Code != 200 || w.Body.String() != a.String() {
		t.Fatalf("first: %d %s", w.Code, w.Body)
	}
	// The actor moves to b behind the gateway's back (as on another node): the cached route
	// to a is tried first, the runner says it does not host the actor, the retry finds b.
	f.place(t, aid, keys.PhaseRunning, &b)
	mu.Lock()
	hosts = map[id.ID]bool{b: true}
	mu.Unlock()
	if w := f.serve("GET", target, nil, ""); w.Code != 200 || w.Body.String() != b.String() {
		t.Fatalf("after the move: %d %s", w.Code, w.Body)
	}
	if f.runners.count(a) != 2 || f.runners.count(b) != 1 {
		t.Fatalf("requests: a %d (want 2: first, stale cached), b %d (want 1)", f.runners.count(a), f.runners.count(b))
	}
	// The retry refreshed the cache: b directly.
	f.serve("GET", target, nil, "")
	if f.runners.count(a) != 2 || f.runners.count(b) != 2 {
		t.Fatalf("cached b not used: a %d, b %d", f.runners.count(a), f.runners.count(b))
	}
	// A change the lifecycle reports drops the entry before any request goes to the old runner.
	f.place(t, aid, keys.PhaseRunning, &a)
	mu.Lock()
	hosts = map[id.ID]bool{a: true}
	mu.Unlock()
	f.actors.changed(aid)
	if w := f.serve("GET", target, nil, ""); w.Code != 200 || f.runners.count(b) != 2 || f.runners.count(a) != 3 {
		t.Fatalf("after a reported change: %d, a %d, b %d", w.Code, f.runners.count(a), f.runners.count(b))
	}
}

// A request whose actor stops or moves before answering (runner 2.2.1 drops the answers of a
// stopped actor) is retried where the actor runs next, instead of waiting for the
// response-start timeout; a change that leaves the actor on its runner (running, or stopping:
// it may still answer) does not end the wait.
func TestActorStoppedWhileWaiting(t *testing.T) {
	f := newFixture(t, Options{})
	f.actors.watched = make(chan id.ID, 16)
	aid, a, b := id.New(1), id.New(1), id.New(1)
	f.runners.answer = func(rid id.ID) proto.ToServerResponseStart {
		if rid == a {
			return proto.ToServerResponseStart{} // never answers
		}
		return proto.ToServerResponseStart{Status: 200, Body: []byte(rid.String())}
	}
	f.place(t, aid, keys.PhaseRunning, &a)
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() { done <- f.serve("GET", "/gateway/"+aid.String()+"/x", nil, "") }()
	awaitWatch := func() {
		t.Helper()
		select {
		case <-f.actors.watched:
		case <-time.After(10 * time.Second):
			t.Fatal("the request does not watch its actor")
		}
	}
	awaitWatch()
	f.actors.changed(aid) // still running on a: the request watches again
	awaitWatch()
	f.place(t, aid, keys.PhaseStopping, &a) // told to stop, a may still answer
	f.actors.changed(aid)
	awaitWatch()
	select {
	case w := <-done:
		t.Fatalf("the request ended while its actor still ran on its runner: %d %s", w.Code, w.Body)
	default:
	}
	f.place(t, aid, keys.PhaseRunning, &b)
	f.actors.changed(aid)
	select {
	case w := <-done:
		if w.Code != 200 || w.Body.String() != b.String() {
			t.Fatalf("after the move: %d %s, want 200 from b", w.Code, w.Body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request still waits for a runner its actor left")
	}
	if f.runners.count(a) != 1 || f.runners.count(b) != 1 {
		t.Fatalf("requests: a %d, b %d; want 1 each", f.runners.count(a), f.runners.count(b))
	}
}

// An actor that no runner admits to hosting exhausts the retries: 502 with Rivet's metadata.
func TestRetriesExhausted(t *testing.T) {
	f := newFixture(t, Options{RouteCacheTTL: -1})
	aid, rid := id.New(1), id.New(1)
	f.place(t, aid, keys.PhaseRunning, &rid)
	f.runners.answer = func(id.ID) proto.ToServerResponseStart {
		return proto.ToServerResponseStart{Status: 503, Headers: []proto.Header{{Name: "x-rivet-error", Value: "runner.actor_not_found"}}}
	}
	w := f.serve("POST", "/gateway/"+aid.String()+"/x", nil, "b")
	var e rerr.Error
	_ = json.Unmarshal(w.Body.Bytes(), &e)
	if w.Code != 502 || errKey(w) != "guard.retry_attempts_exceeded" || f.runners.count(rid) != 7 ||
		e.Metadata["attempts"] != float64(7) || e.Metadata["last_error_code"] != "runner.actor_not_found" || e.Metadata["last_target_kind"] != "actor" {
		t.Fatalf("%d %q %s after %d attempts", w.Code, errKey(w), w.Body, f.runners.count(rid))
	}
	// An actor's own 503 with a retryable guard code is retried too; a 503 without is its answer.
	calls := 0
	f.runners.answer = func(id.ID) proto.ToServerResponseStart {
		calls++
		if calls == 1 {
			return proto.ToServerResponseStart{Status: 503, Headers: []proto.Header{{Name: "x-rivet-error", Value: "guard.service_unavailable"}}}
		}
		return proto.ToServerResponseStart{Status: 503, Body: []byte("busy")}
	}
	if w := f.serve("GET", "/gateway/"+aid.String()+"/x", nil, ""); w.Code != 503 || w.Body.String() != "busy" || calls != 2 {
		t.Fatalf("actor 503s: %d %s after %d calls", w.Code, w.Body, calls)
	}
}

// With skip-ready-wait a starting actor is routed to at once; without, the wait times out.
func TestSkipReadyWait(t *testing.T) {
	f := newFixture(t, Options{ActorReadyTimeout: 50 * time.Millisecond})
	aid, rid := id.New(1), id.New(1)
	f.place(t, aid, keys.PhaseStarting, &rid)
	target := "/gateway/" + aid.String() + "/x"
	if w := f.serve("GET", target, http.Header{"X-Rivet-Skip-Ready-Wait": {"true"}}, ""); w.Code != 200 {
		t.Fatalf("skip: %d %s", w.Code, w.Body)
	}
	if w := f.serve("GET", target, nil, ""); errKey(w) != "guard.actor_ready_timeout" {
		t.Fatalf("wait: %d %q %s", w.Code, errKey(w), w.Body)
	}
	// A sleeping actor is woken.
	f.place(t, aid, keys.PhaseSleeping, nil)
	f.serve("GET", target, nil, "")
	if f.actors.wakes == 0 {
		t.Fatal("a sleeping actor was not woken")
	}
}

// hangingDB is a store whose reads wait until their context ends.
type hangingDB struct{ udb.Database }

func (hangingDB) ReadTransact(ctx context.Context, _ func(udb.ReadTransaction) (any, error)) (any, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A routing phase that hangs fails with its own error and its bound, not with the actor's
// ready timeout, and is not retried.
func TestPhaseTimeouts(t *testing.T) {
	check := func(t *testing.T, w *httptest.ResponseRecorder, key string, timeoutMs int64) {
		t.Helper()
		var body struct {
			Metadata struct {
				ElapsedMs int64 `json:"elapsed_ms"`
				TimeoutMs int64 `json:"timeout_ms"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != 504 || errKey(w) != key {
			t.Fatalf("got %d %q %s (%v); want 504 %s", w.Code, errKey(w), w.Body, err, key)
		}
		if body.Metadata.TimeoutMs != timeoutMs || body.Metadata.ElapsedMs < timeoutMs {
			t.Errorf("metadata %+v; want timeout_ms %d and elapsed_ms at least that", body.Metadata, timeoutMs)
		}
	}
	t.Run("wake signal", func(t *testing.T) {
		f := newFixture(t, Options{WakeSignalTimeout: 30 * time.Millisecond})
		f.actors.hang = true
		aid := id.New(1)
		f.place(t, aid, keys.PhaseSleeping, nil)
		check(t, f.serve("GET", "/gateway/"+aid.String()+"/x", nil, ""), "pegboard.route_wake_signal_timeout", 30)
		if f.actors.wakes != 1 {
			t.Errorf("%d wakes; a routing phase's timeout is not retried", f.actors.wakes)
		}
	})
	t.Run("fetch actor", func(t *testing.T) {
		f := newFixture(t, Options{FetchActorTimeout: 30 * time.Millisecond})
		f.gw.o.DB = hangingDB{f.db}
		aid, rid := id.New(1), id.New(1)
		f.place(t, aid, keys.PhaseRunning, &rid)
		check(t, f.serve("GET", "/gateway/"+aid.String()+"/x", nil, ""), "pegboard.route_fetch_actor_timeout", 30)
	})
}

// Per-IP request limits and the body limit.
func TestLimits(t *testing.T) {
	f := newFixture(t, Options{RateLimit: core.RateLimit{Requests: 2, InFlight: -1}, MaxBody: 10})
	aid, rid := id.New(1), id.New(1)
	f.place(t, aid, keys.PhaseRunning, &rid)
	target := "/gateway/" + aid.String() + "/x"
	for i := range 2 {
		if w := f.serve("GET", target, nil, ""); w.Code != 200 {
			t.Fatalf("request %d: %d", i, w.Code)
		}
	}
	if w := f.serve("GET", target, nil, ""); w.Code != 429 || errKey(w) != "guard.rate_limit" {
		t.Fatalf("third: %d %q", w.Code, errKey(w))
	}
	// A client naming another address in X-Forwarded-For is still itself: no proxy is trusted.
	for i := range 8 {
		h := http.Header{"X-Forwarded-For": {"203.0.113." + strconv.Itoa(i)}}
		if w := f.serve("GET", target, h, ""); w.Code != 429 || errKey(w) != "guard.rate_limit" {
			t.Fatalf("rotating X-Forwarded-For, request %d: %d %q, want 429 guard.rate_limit", i, w.Code, errKey(w))
		}
	}
	// Behind a trusted proxy (httptest's peer, 192.0.2.1), the header names the client.
	f = newFixture(t, Options{RateLimit: core.RateLimit{Requests: 2, InFlight: -1}, MaxBody: 10,
		TrustedProxies: core.Trusted{netip.MustParsePrefix("192.0.2.0/24")}})
	f.place(t, aid, keys.PhaseRunning, &rid)
	for i := range 3 {
		if w := f.serve("GET", target, http.Header{"X-Forwarded-For": {"203.0.113.9"}}, ""); w.Code != 200 && i < 2 || w.Code != 429 && i == 2 {
			t.Fatalf("client 203.0.113.9 behind the proxy, request %d: %d", i, w.Code)
		}
	}
	if w := f.serve("GET", target, http.Header{"X-Forwarded-For": {"203.0.113.10"}}, ""); w.Code != 200 {
		t.Fatalf("another client behind the proxy: %d", w.Code)
	}
	if w := f.serve("POST", target, http.Header{"X-Forwarded-For": {"203.0.113.11"}}, strings.Repeat("x", 11)); w.Code != 413 || errKey(w) != "guard.invalid_request_body" {
		t.Fatalf("body over the limit: %d %q", w.Code, errKey(w))
	}
	// The API is not rate limited by the gateway.
	if w := f.serve("GET", "/actors", nil, ""); w.Code != 299 {
		t.Fatalf("API: %d", w.Code)
	}
}

// A host that carries the most tunnels it may is answered at once with 503
// guard.host_overloaded: not retried, not queued.
func TestFullHost(t *testing.T) {
	f := newFixture(t, Options{})
	opens := 0
	f.gw.o.Hosts = hostsOf{func(actor.Host) (Tunnel, error) {
		opens++
		return nil, rerr.GuardHostOverloaded(3)
	}}
	aid, rid := id.New(1), id.New(1)
	f.place(t, aid, keys.PhaseRunning, &rid)
	if w := f.serve("GET", "/gateway/"+aid.String()+"/x", nil, ""); w.Code != 503 || errKey(w) != "guard.host_overloaded" || opens != 1 {
		t.Fatalf("%d %q %s after %d opens; want 503 guard.host_overloaded after one", w.Code, errKey(w), w.Body, opens)
	}
}

// An actor with MaxRequestsPerActor HTTP requests in flight gets 429 guard.actor_overloaded
// for the next one at once; other actors are not affected, and a finished request frees
// its place.
func TestRequestsPerActor(t *testing.T) {
	f := newFixture(t, Options{MaxRequestsPerActor: 2})
	busy, idle, rid := id.New(1), id.New(1), id.New(1)
	f.place(t, busy, keys.PhaseRunning, &rid)
	f.place(t, idle, keys.PhaseRunning, &rid)
	hold := make(chan struct{})
	f.runners.answer = func(id.ID) proto.ToServerResponseStart {
		<-hold
		return proto.ToServerResponseStart{Status: 200}
	}
	done := make(chan int, 2)
	for range 2 {
		go func() { done <- f.serve("GET", "/gateway/"+busy.String()+"/x", nil, "").Code }()
	}
	waitUntil(t, "two requests in flight", func() bool { return f.runners.count(rid) == 2 })
	if w := f.serve("GET", "/gateway/"+busy.String()+"/x", nil, ""); w.Code != 429 || errKey(w) != "guard.actor_overloaded" {
		t.Fatalf("a third request: %d %q %s; want 429 guard.actor_overloaded", w.Code, errKey(w), w.Body)
	}
	go func() { done <- f.serve("GET", "/gateway/"+idle.String()+"/x", nil, "").Code }()
	waitUntil(t, "the other actor's request in flight", func() bool { return f.runners.count(rid) == 3 })
	close(hold)
	for range 3 {
		if code := <-done; code != 200 {
			t.Fatalf("a request in flight: %d", code)
		}
	}
	if w := f.serve("GET", "/gateway/"+busy.String()+"/x", nil, ""); w.Code != 200 {
		t.Fatalf("after the requests finished: %d %s", w.Code, w.Body)
	}
}

// waitUntil polls cond until it holds, failing after 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen within 10s", what)
		}
		time.Sleep(time.Millisecond) // polling an observed state
	}
}

// A request by key to a running actor whose route is cached looks nothing up: the gateway
// remembers the key's actor for as long as the actor's route stays cached, and looks the key
// up again once a change of the actor dropped the route.
func TestQueryRouteCache(t *testing.T) {
	var mu sync.Mutex
	lookups := 0
	ns := id.New(1)
	f := newFixture(t, Options{ResolveNamespace: func(ctx context.Context, name string) (namespace.Namespace, error) {
		mu.Lock()
		lookups++
		mu.Unlock()
		return namespace.Namespace{NamespaceID: ns, Name: name}, nil
	}})
	counted := func() int { mu.Lock(); defer mu.Unlock(); return lookups }
	key := "k1"
	if err := udb.Update(context.Background(), f.db, func(tx udb.Transaction) error {
		_, err := runnerconfig.Ensure(context.Background(), tx, runnerconfig.EnsureInput{Namespace: ns, Name: "pool"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	a, _, err := f.actors.GetOrCreate(context.Background(), actor.CreateInput{Namespace: ns, NamespaceName: "default", Name: "echo", Key: &key,
		Selector: "pool", CrashPolicy: actor.CrashSleep})
	if err != nil {
		t.Fatal(err)
	}
	rid := id.New(1)
	f.place(t, a.ActorID, keys.PhaseRunning, &rid)
	for i, method := range []string{"get", "getOrCreate&rvt-runner=pool", "get"} {
		w := f.serve("GET", "/gateway/echo/x?rvt-namespace=default&rvt-key=k1&rvt-method="+method, nil, "")
		if w.Code != 200 || f.runners.count(rid) != i+1 {
			t.Fatalf("request %d: %d %s, runner saw %d", i+1, w.Code, w.Body, f.runners.count(rid))
		}
		if counted() != 1 {
			t.Fatalf("request %d: %d lookups, want 1 (the first request's)", i+1, counted())
		}
	}
	f.actors.changed(a.ActorID)
	if w := f.serve("GET", "/gateway/echo/x?rvt-namespace=default&rvt-key=k1&rvt-method=get", nil, ""); w.Code != 200 || counted() != 2 {
		t.Fatalf("after a change of the actor: %d %s, %d lookups, want 2", w.Code, w.Body, counted())
	}
}
