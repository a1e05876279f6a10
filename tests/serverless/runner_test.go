package serverless

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/tests/internal/harness"
)

// Runner pools (rivetkit 2.2.1): berth keeps GET {url}/start requests open as the pool's
// demand asks (docs/serverless.md § 5). Each test's pools live 8 s per request and drain
// their runner 2 s before (pegboard.serverless_drain_grace_period_ms).

const (
	runnerLifespan = 8
	runnerGraceMs  = 2000
)

// startRunnerEngine starts berth allowing loopback endpoints, with a short runner drain
// grace; more, when set, edits the configuration further.
func startRunnerEngine(t testing.TB, more func(cfg map[string]any)) *harness.Engine {
	return startLoopbackEngineWith(t, func(cfg, pb map[string]any) {
		pb["serverless_drain_grace_period_ms"] = runnerGraceMs
		if more != nil {
			more(cfg)
		}
	})
}

// putRunnerPool writes pool as a serverless pool of url with a short request lifespan and
// the fields of extra.
func putRunnerPool(t testing.TB, e *harness.Engine, pool, url string, extra map[string]any) {
	t.Helper()
	sl := map[string]any{"url": url, "request_lifespan": runnerLifespan, "drain_grace_period": 2, "headers": map[string]string{"x-secret": "s3cret"}}
	for k, v := range extra {
		sl[k] = v
	}
	body := map[string]any{"datacenters": map[string]any{"default": map[string]any{"serverless": sl}}}
	if status, b := call(t, e, http.MethodPut, "/runner-configs/"+pool+"?namespace=default", body); status != 200 {
		t.Fatalf("PUT %s: %d %s", pool, status, b)
	}
}

// starts follows the GET /start requests an app or the fake saw, from its events.
type starts struct {
	open  map[string]bool
	total int
}

func newStarts() *starts { return &starts{open: map[string]bool{}} }

// see counts ev; it reports whether ev was a /start request.
func (s *starts) see(ev harness.Event) bool {
	var l struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
		Path   string `json:"path"`
	}
	if json.Unmarshal([]byte(ev.Line), &l) != nil || l.ID == nil {
		return false
	}
	key := fmt.Sprint(l.ID)
	switch ev.Ev {
	case "request":
		if strings.HasSuffix(l.Path, "/start") {
			if l.Method != http.MethodGet {
				panic("a runner pool's /start with method " + l.Method)
			}
			s.open[key] = true
			s.total++
			return true
		}
	case "closed":
		delete(s.open, key)
	}
	return false
}

// awaitStart awaits p's next /start request and returns its event.
func (s *starts) awaitStart(p *harness.Proc, within time.Duration) harness.Event {
	return p.Await("a GET /start", within, s.see)
}

// awaitNoneOpen awaits the moment p has no /start request open.
func (s *starts) awaitNoneOpen(p *harness.Proc, within time.Duration) {
	if len(s.open) == 0 {
		return
	}
	p.Await("every /start closed", within, func(ev harness.Event) bool {
		s.see(ev)
		return len(s.open) == 0
	})
}

// An actor of a rivetkit 2.2.1 runner pool starts on demand: with no runner running and no
// /start made before, its create makes the engine open GET {url}/start; the runner the app
// starts connects and runs it; its state survives a sleep and wake; once it sleeps, the
// requests end at their lifespan and none replaces them (the pool scales back to zero).
func TestRunnerPoolStartsOnDemand(t *testing.T) {
	needApps(t)
	e := startRunnerEngine(t, nil)
	url, app := startApp(t, "rivetkit 2.2.1", harness.NPMDir, "serverless-app.mjs", "RIVET_ENDPOINT="+e.URL)
	putRunnerPool(t, e, "sl22", url, nil)
	st := newStarts()
	for _, ev := range app.Seen() {
		st.see(ev)
	}
	if st.total != 0 {
		t.Fatalf("%d /start before any actor", st.total)
	}

	aid := createCounter(t, e, "sl22", "k1")
	st.awaitStart(app, within)
	if got := increment(t, e, aid, 5); got != 5 {
		t.Fatalf("first increment: %d, want 5", got)
	}
	// Its runner was told the drain grace at init, as the reference tells it.
	if md := runnerInit(t, app); md.ServerlessDrainGracePeriod == nil || *md.ServerlessDrainGracePeriod != runnerGraceMs {
		t.Errorf("runner init metadata %+v, want serverlessDrainGracePeriod %d", md, runnerGraceMs)
	}
	if got := increment(t, e, aid, 2); got != 7 {
		t.Fatalf("second increment: %d, want 7", got)
	}
	sleepActor(t, e, aid)
	if got := increment(t, e, aid, 1); got != 8 {
		t.Fatalf("increment after the wake: %d, want 8", got)
	}
	sleepActor(t, e, aid)
	st.awaitNoneOpen(app, 3*within)
	t.Logf("%d /start requests in all", st.total)
}

// The reference tells a runner of a serverless pool its drain grace at init too (its
// pegboard.serverless_drain_grace_period, 10 000 ms by default), as berth does above.
func TestRunnerPoolInitDrainGraceReference(t *testing.T) {
	needApps(t)
	ref, _ := harness.StartReference(t)
	e := &harness.Engine{URL: ref, Client: http.DefaultClient}
	url, app := startApp(t, "rivetkit 2.2.1", harness.NPMDir, "serverless-app.mjs", "RIVET_ENDPOINT="+e.URL)
	putRunnerPool(t, e, "graced", url, nil)
	// The actor's creation makes the reference start a runner; its init is all this reads
	// (the reference's gateway sometimes answers a first request 502 while it starts).
	createCounter(t, e, "graced", "g1")
	if md := runnerInit(t, app); md.ServerlessDrainGracePeriod == nil || *md.ServerlessDrainGracePeriod != 10000 {
		t.Errorf("runner init metadata %+v, want serverlessDrainGracePeriod 10000", md)
	}
}

// initMetadata is the protocol metadata a runner logs on ToClientInit.
type initMetadata struct {
	RunnerLostThreshold        int64  `json:"runnerLostThreshold"`
	ActorStopThreshold         int64  `json:"actorStopThreshold"`
	ServerlessDrainGracePeriod *int64 `json:"serverlessDrainGracePeriod"`
}

// runnerInit returns the metadata of the first init app's runner logged ("received init",
// rivetkit's log on its stderr). The log has no event to await, so it is read again until
// the line is there.
func runnerInit(t *testing.T, app *harness.Proc) initMetadata {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, line := range strings.Split(string(app.Stderr()), "\n") {
			var l struct {
				Msg              string       `json:"msg"`
				ProtocolMetadata initMetadata `json:"protocolMetadata"`
			}
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "received init" {
				return l.ProtocolMetadata
			}
		}
	}
	t.Fatalf("the app's runner logged no init within %v", within)
	return initMetadata{}
}

// sleepActor asks actor aid to sleep and waits until the API shows it asleep.
func sleepActor(t *testing.T, e *harness.Engine, aid string) {
	t.Helper()
	if status, b := call(t, e, http.MethodPost, "/actors/"+aid+"/sleep?namespace=default", map[string]any{}); status != http.StatusOK {
		t.Fatalf("sleep: %d %s", status, b)
	}
	deadline := time.Now().Add(within)
	for !asleep(t, e, aid) {
		if time.Now().After(deadline) {
			t.Fatal("the actor did not sleep")
		}
		time.Sleep(20 * time.Millisecond) // polling interval: the API has no change feed
	}
}

// awaitPoolError polls the pool's error until it is want ("" for none).
func awaitPoolError(t *testing.T, e *harness.Engine, pool, want string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for got := poolError(t, e, pool); got != want; got = poolError(t, e, pool) {
		if time.Now().After(deadline) {
			t.Fatalf("pool %s: runner_pool_error %s, want %s", pool, got, want)
		}
		time.Sleep(50 * time.Millisecond) // polling interval: the API has no change feed
	}
}

// actorError is actor aid's error in GET /actors.
func actorError(t testing.TB, e *harness.Engine, aid string) string {
	t.Helper()
	var out struct {
		Actors []struct {
			Error json.RawMessage `json:"error"`
		} `json:"actors"`
	}
	e.GetJSON(t, "/actors?namespace=default&actor_ids="+aid, &out)
	if len(out.Actors) != 1 {
		t.Fatalf("GET /actors of %s: %d actors", aid, len(out.Actors))
	}
	return string(out.Actors[0].Error)
}

// Each failure of a runner pool's GET /start sets the pool's error with the reference's
// variant (docs/serverless.md § 5.4): shown in GET /runner-configs and, as
// {"runner_pool_error": …}, on the pool's pending actors, whose gateway requests fail with
// guard.actor_runner_failed; three init events in a row clear it.
func TestRunnerPoolFailures(t *testing.T) {
	needApps(t)
	e := startRunnerEngine(t, nil)
	fake, proc := startApp(t, "fake", harness.NPMDir, "serverless-fake.mjs", "FAKE_ENVOY_PROTOCOL=none", "FAKE_START=status:503:unavailable")
	base := strings.TrimSuffix(fake, "/api/rivet")
	mode := func(m string) {
		t.Helper()
		res, err := http.Post(base+"/_fake/mode", "application/json", strings.NewReader(`{"start":"`+m+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	putRunnerPool(t, e, "fake", fake, map[string]any{"slots_per_runner": 1})
	var aids []string
	for i := range 3 {
		aids = append(aids, createCounter(t, e, "fake", "f"+itoa(i)))
	}
	// The request, as the reference makes it (§ 5.2).
	st := newStarts()
	ev := st.awaitStart(proc, within)
	var req struct {
		Headers map[string]string `json:"headers"`
		Bytes   int               `json:"bytes"`
	}
	if err := json.Unmarshal([]byte(ev.Line), &req); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"x-secret": "s3cret", "x-rivet-endpoint": e.URL + "/", "x-rivet-total-slots": "1",
		"x-rivet-runner-name": "fake", "x-rivet-namespace-name": "default", "x-rivet-namespace-id": "default",
		"accept": "text/event-stream"} {
		if got := req.Headers[k]; got != want {
			t.Errorf("header %s: %q, want %q", k, got, want)
		}
	}
	if ua := req.Headers["user-agent"]; !strings.HasPrefix(ua, "berth/") || req.Bytes != 0 {
		t.Errorf("user-agent %q, %d body bytes", ua, req.Bytes)
	}

	for _, tc := range []struct{ mode, want string }{
		{"status:503:unavailable", `{"serverless_http_error":{"body":"unavailable","status_code":503}}`},
		{"text", `{"serverless_connection_error":{"message":"expected Content-Type header to be text/event-stream, received \"text/plain\""}}`},
		{"end", `"serverless_stream_ended_early"`},
		{"invalid", `{"serverless_invalid_sse_payload":{"message":"invalid base64 message","raw_payload":"!!not-base64!!"}}`},
	} {
		mode(tc.mode)
		awaitPoolError(t, e, "fake", tc.want)
		for _, aid := range aids {
			if got := actorError(t, e, aid); got != `{"runner_pool_error":`+tc.want+`}` {
				t.Errorf("%s: actor error %s", tc.mode, got)
			}
		}
	}
	// A gateway request to a pending actor of the failing pool gives up.
	began := time.Now()
	res, err := http.Post(e.URL+"/gateway/"+aids[0]+"/action/get", "application/json", strings.NewReader(`{"args":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Group, Code string
		Metadata    map[string]string
	}
	_ = json.NewDecoder(res.Body).Decode(&body)
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest || body.Code != "actor_runner_failed" || body.Metadata["actor_id"] != aids[0] {
		t.Errorf("gateway request: %d %+v", res.StatusCode, body)
	}
	t.Logf("the gateway gave up after %v", time.Since(began).Round(time.Millisecond))

	// Three init events in a row (one per wanted runner) clear the error.
	mode("init")
	awaitPoolError(t, e, "fake", "")
	for _, aid := range aids {
		if got := actorError(t, e, aid); got != `"no_capacity"` {
			t.Errorf("actor error %s after the recovery, want no_capacity", got)
		}
	}
}

// A refused connection is a serverless_connection_error.
func TestRunnerPoolRefused(t *testing.T) {
	needApps(t)
	e := startRunnerEngine(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/api/rivet"
	ln.Close() // nothing listens there now
	putRunnerPool(t, e, "gone", url, nil)
	createCounter(t, e, "gone", "g")
	deadline := time.Now().Add(within)
	for got := poolError(t, e, "gone"); !strings.HasPrefix(got, `{"serverless_connection_error":{"message":`) ||
		!strings.Contains(got, "connection refused"); got = poolError(t, e, "gone") {
		if time.Now().After(deadline) {
			t.Fatalf("runner_pool_error %s, want a refused connection", got)
		}
		time.Sleep(50 * time.Millisecond) // polling interval: the API has no change feed
	}
}

// min_runners: 1 keeps one request open with no actor: one at the config write, its
// replacement at its drain; back to min_runners: 0, the last one ends at its lifespan and
// none replaces it.
func TestRunnerPoolMinRunners(t *testing.T) {
	needApps(t)
	e := startRunnerEngine(t, nil)
	url, app := startApp(t, "rivetkit 2.2.1", harness.NPMDir, "serverless-app.mjs", "RIVET_ENDPOINT="+e.URL)
	st := newStarts()
	putRunnerPool(t, e, "warm", url, map[string]any{"min_runners": 1})
	st.awaitStart(app, within)
	// An actor lands on the warm runner, with no /start of its own.
	aid := createCounter(t, e, "warm", "w1")
	if got := increment(t, e, aid, 4); got != 4 {
		t.Fatalf("increment on the warm runner: %d, want 4", got)
	}
	if st.total != 1 {
		t.Fatalf("%d /start requests for the warm runner and one actor, want 1", st.total)
	}
	sleepActor(t, e, aid)
	st.awaitStart(app, 2*runnerLifespan*time.Second) // the replacement, 2 s before the first ends
	if len(st.open) > 2 {
		t.Fatalf("%d requests open, want at most 2", len(st.open))
	}
	putRunnerPool(t, e, "warm", url, map[string]any{"min_runners": 0})
	st.awaitNoneOpen(app, 3*runnerLifespan*time.Second)
	if st.total != 2 {
		t.Errorf("%d /start requests, want 2", st.total)
	}
}

// A new url or new headers replace the pool's open requests at once, on berth as on the
// reference (run side by side; the reference observed so): a /start with the new endpoint
// opens right after the write, while the older request stays open (to its drain and
// lifespan, 600 s here) and its actor keeps its state. Other fields replace nothing.
func TestRunnerPoolEndpointChangeReplaces(t *testing.T) {
	needApps(t)
	t.Run("berth", func(t *testing.T) { endpointChangeReplaces(t, startRunnerEngine(t, nil)) })
	t.Run("reference", func(t *testing.T) {
		ref, _ := harness.StartReference(t)
		endpointChangeReplaces(t, &harness.Engine{URL: ref, Client: http.DefaultClient})
	})
}

func endpointChangeReplaces(t *testing.T, e *harness.Engine) {
	url, app := startApp(t, "rivetkit 2.2.1", harness.NPMDir, "serverless-app.mjs", "RIVET_ENDPOINT="+e.URL)
	st := newStarts()
	long := map[string]any{"min_runners": 1, "request_lifespan": 600}
	putRunnerPool(t, e, "moved", url, long)
	st.awaitStart(app, within)
	aid := createCounter(t, e, "moved", "m1")
	if got := increment(t, e, aid, 3); got != 3 {
		t.Fatalf("increment on the first runner: %d, want 3", got)
	}

	// Another slot count is no endpoint change: nothing is replaced (the count of /start
	// requests below would show a replacement).
	long["slots_per_runner"] = 2
	putRunnerPool(t, e, "moved", url, long)
	if got := increment(t, e, aid, 1); got != 4 {
		t.Fatalf("increment after a slots change: %d, want 4", got)
	}

	long["headers"] = map[string]string{"x-secret": "rotated"}
	putRunnerPool(t, e, "moved", url, long)
	st.awaitStart(app, within)
	if st.total != 2 || len(st.open) != 2 {
		t.Fatalf("after the header change: %d /start requests, %d open, want 2 and 2", st.total, len(st.open))
	}
	if got := increment(t, e, aid, 1); got != 5 {
		t.Fatalf("increment after the header change: %d, want 5", got)
	}
}
