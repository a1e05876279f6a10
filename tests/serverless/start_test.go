package serverless

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/tests/internal/harness"
)

// An actor of a rivetkit 2.3.19 envoy pool starts on demand: with no envoy running, its
// create makes the engine POST {url}/start with the start command; the app's envoy connects
// and runs it; its state survives a sleep, after which the next request starts it again
// through a new /start (docs/serverless.md § 4).
func TestEnvoyPoolStartsOnDemand(t *testing.T) {
	needApps(t)
	e := startLoopbackEngine(t)
	url, app := startApp(t, "rivetkit 2.3.19", filepath.Join(harness.NPMDir, "..", "npm23"), "serverless-app.mjs",
		"RIVET_ENDPOINT="+e.URL, "RIVET_RUN_SERVICES=0")
	put(t, e, "sl23", url)

	aid := createCounter(t, e, "sl23", "k1")
	app.Await("a /start", within, func(ev harness.Event) bool {
		return ev.Ev == "request" && strings.Contains(ev.Line, `"path":"/api/rivet/start"`)
	})
	if got := increment(t, e, aid, 5); got != 5 {
		t.Fatalf("first increment: %d, want 5", got)
	}
	awaitWake(app)
	if got := increment(t, e, aid, 2); got != 7 {
		t.Fatalf("second increment: %d, want 7", got)
	}

	// Asleep, then woken by the next request: a new /start, the same state.
	if status, b := call(t, e, http.MethodPost, "/actors/"+aid+"/sleep?namespace=default", map[string]any{}); status != http.StatusOK {
		t.Fatalf("sleep: %d %s", status, b)
	}
	app.AwaitEv("sleep", within)
	deadline := time.Now().Add(within)
	for !asleep(t, e, aid) {
		if time.Now().After(deadline) {
			t.Fatal("the actor did not sleep")
		}
		time.Sleep(20 * time.Millisecond) // polling interval: the API has no change feed
	}
	if got := increment(t, e, aid, 1); got != 8 {
		t.Fatalf("increment after the wake: %d, want 8", got)
	}
	awaitWake(app) // the second generation, on the same process's envoy
	if n := app.Count("request"); n < 4 {
		t.Errorf("the app saw %d requests, want two /metadata and two /start at least", n)
	}
}

// createCounter creates a counter actor of pool with key through e's API and returns its id.
func createCounter(t testing.TB, e *harness.Engine, pool, key string) string {
	t.Helper()
	status, b := call(t, e, http.MethodPost, "/actors?namespace=default",
		map[string]any{"name": "counter", "key": key, "runner_name_selector": pool, "crash_policy": "sleep"})
	var created struct {
		Actor struct {
			ActorID string `json:"actor_id"`
		} `json:"actor"`
	}
	if err := json.Unmarshal([]byte(b), &created); status != http.StatusOK || err != nil {
		t.Fatalf("create in %s: %d %s", pool, status, b)
	}
	return created.Actor.ActorID
}

// awaitWake awaits the app's next wake event (its key is a list, which harness.Event does
// not parse: the line is matched).
func awaitWake(app *harness.Proc) {
	app.Await("wake", within, func(ev harness.Event) bool { return strings.Contains(ev.Line, `"ev":"wake"`) })
}

// increment calls the counter's increment(by) through the gateway and returns the count.
func increment(t testing.TB, e *harness.Engine, aid string, by int) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.URL+"/gateway/"+aid+"/action/increment", strings.NewReader(`{"args":[`+itoa(by)+`]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Rivet-Encoding", "json")
	if e.Token != "" {
		req.Header.Set("X-Rivet-Token", e.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Output int `json:"output"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("increment: %d %v", resp.StatusCode, err)
	}
	return out.Output
}

func asleep(t testing.TB, e *harness.Engine, aid string) bool {
	var out struct {
		Actors []struct {
			SleepTs *int64 `json:"sleep_ts"`
		} `json:"actors"`
	}
	e.GetJSON(t, "/actors?namespace=default&actor_ids="+aid, &out)
	return len(out.Actors) == 1 && out.Actors[0].SleepTs != nil
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// A /start that fails (an error status, a refused or reset connection, an answer that is
// not an event stream, a stream that ends before any envoy reported the actor) puts the
// actor to sleep at once, with no error, as on the reference (docs/serverless.md § 4.6);
// the next wake makes a new /start.
func TestEnvoyPoolStartFailures(t *testing.T) {
	needApps(t)
	e := startLoopbackEngine(t)
	fake, proc := startApp(t, "fake", harness.NPMDir, "serverless-fake.mjs")
	base := strings.TrimSuffix(fake, "/api/rivet")
	put(t, e, "fake", fake)
	for i, mode := range []string{"status:503:down", "reset", "text", "end"} {
		res, err := http.Post(base+"/_fake/mode", "application/json", strings.NewReader(`{"start":"`+mode+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		aid := createCounter(t, e, "fake", "f"+itoa(i))
		ev := proc.Await("a /start", within, func(ev harness.Event) bool {
			return strings.Contains(ev.Line, `"path":"/api/rivet/start"`)
		})
		var req struct {
			Method  string            `json:"method"`
			Headers map[string]string `json:"headers"`
			Bytes   int               `json:"bytes"`
		}
		_ = json.Unmarshal([]byte(ev.Line), &req)
		h := req.Headers
		if req.Method != http.MethodPost || h["x-secret"] != "s3cret" || h["x-rivet-endpoint"] != e.URL+"/" || h["x-rivet-pool-name"] != "fake" ||
			h["x-rivet-namespace-name"] != "default" || h["accept"] != "text/event-stream" || req.Bytes < 40 {
			t.Errorf("/start %s: the request: %s", mode, ev.Line)
		}
		deadline := time.Now().Add(10 * time.Second)
		for !asleep(t, e, aid) {
			if time.Now().After(deadline) {
				t.Fatalf("/start %s: the actor did not sleep within 10 s", mode)
			}
			time.Sleep(20 * time.Millisecond) // polling interval: the API has no change feed
		}
		var out struct {
			Actors []struct {
				Error json.RawMessage `json:"error"`
			} `json:"actors"`
		}
		e.GetJSON(t, "/actors?namespace=default&actor_ids="+aid, &out)
		if len(out.Actors) != 1 || (len(out.Actors[0].Error) != 0 && string(out.Actors[0].Error) != "null") {
			t.Errorf("/start %s: the sleeping actor: %+v, want no error", mode, out.Actors)
		}
		if got := poolError(t, e, "fake"); !strings.Contains(got, wantPoolErrors[mode]) {
			t.Errorf("/start %s: runner_pool_error %s, want %s", mode, got, wantPoolErrors[mode])
		}
	}

	// A request through the gateway wakes the actor, whose start fails again: the gateway
	// gives up after its wake retries, each one /start, as the reference does (it makes 9).
	res, err := http.Post(base+"/_fake/mode", "application/json", strings.NewReader(`{"start":"status:503:down"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	aid := createCounter(t, e, "fake", "gateway")
	proc.Await("its /start", within, func(ev harness.Event) bool { return strings.Contains(ev.Line, `"path":"/api/rivet/start"`) })
	for !asleep(t, e, aid) {
		time.Sleep(20 * time.Millisecond) // polling interval: the API has no change feed
	}
	before := proc.Count("request")
	status, b := send(e.URL, http.MethodPost, "/gateway/"+aid+"/action/increment", map[string]any{"args": []int{1}})
	starts := proc.Count("request") - before
	if status != http.StatusServiceUnavailable || !strings.Contains(string(b), `"code":"actor_wake_retries_exceeded"`) || starts < 1 || starts > 9 {
		t.Errorf("gateway request to an actor whose starts fail: %d %s after %d /start requests", status, b, starts)
	}
}

// wantPoolErrors is what the pool's runner_pool_error holds after each failing /start.
var wantPoolErrors = map[string]string{
	"status:503:down": `{"serverless_http_error":{"body":"down","status_code":503}}`,
	"reset":           `{"serverless_connection_error":{"message":`,
	"text":            `expected Content-Type header to be text/event-stream, received \"text/plain`,
	"end":             `"serverless_stream_ended_early"`,
}

// poolError is pool's runner_pool_error in GET /runner-configs ("" when absent).
func poolError(t *testing.T, e *harness.Engine, pool string) string {
	t.Helper()
	var out struct {
		RunnerConfigs map[string]struct {
			Datacenters map[string]map[string]json.RawMessage `json:"datacenters"`
		} `json:"runner_configs"`
	}
	e.GetJSON(t, "/runner-configs?namespace=default&runner_name="+pool, &out)
	return string(out.RunnerConfigs[pool].Datacenters["default"]["runner_pool_error"])
}

// At request_lifespan − drain_grace_period the actor is moved away from the envoy its
// /start started it on and started again through a new /start, keeping its state
// (docs/serverless.md § 4.4).
func TestEnvoyPoolLifespan(t *testing.T) {
	needApps(t)
	e := startLoopbackEngine(t)
	url, app := startApp(t, "rivetkit 2.3.19", filepath.Join(harness.NPMDir, "..", "npm23"), "serverless-app.mjs",
		"RIVET_ENDPOINT="+e.URL, "RIVET_RUN_SERVICES=0")
	body := map[string]any{"datacenters": map[string]any{"default": map[string]any{
		"serverless": map[string]any{"url": url, "request_lifespan": 6, "drain_grace_period": 2}}}}
	if status, b := call(t, e, http.MethodPut, "/runner-configs/short?namespace=default", body); status != 200 {
		t.Fatalf("PUT: %d %s", status, b)
	}
	aid := createCounter(t, e, "short", "l1")
	isStart := func(ev harness.Event) bool { return strings.Contains(ev.Line, `"path":"/api/rivet/start"`) }
	first := app.Await("a /start", within, isStart)
	if got := increment(t, e, aid, 3); got != 3 {
		t.Fatalf("increment: %d, want 3", got)
	}
	second := app.Await("the /start after the drain", within, isStart)
	if d := second.At.Sub(first.At); d < 3*time.Second || d > 8*time.Second {
		t.Errorf("the second /start came %v after the first, want about 4 s (lifespan 6 − grace 2)", d)
	}
	if got := increment(t, e, aid, 1); got != 4 {
		t.Fatalf("increment after the move: %d, want 4", got)
	}
}
