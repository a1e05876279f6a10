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

// envoyStops returns the stop_ts of every envoy of pool (nil: not stopping).
func envoyStops(t *testing.T, e *harness.Engine, pool string) []*int64 {
	t.Helper()
	var out struct {
		Envoys []struct {
			PoolName string `json:"pool_name"`
			StopTs   *int64 `json:"stop_ts"`
		} `json:"envoys"`
	}
	e.GetJSON(t, "/envoys?namespace=default", &out)
	var stops []*int64
	for _, en := range out.Envoys {
		if en.PoolName == pool {
			stops = append(stops, en.StopTs)
		}
	}
	return stops
}

// awaitAsleep waits until actor aid sleeps.
func awaitAsleep(t *testing.T, e *harness.Engine, aid string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !asleep(t, e, aid) {
		if time.Now().After(deadline) {
			t.Fatalf("actor %s did not sleep", aid)
		}
		time.Sleep(20 * time.Millisecond) // polling interval: the API has no change feed
	}
}

// Deleting a serverless config drains its hosts: the envoy the app started is drained (its
// actor stops; stop_ts is set), and a /start still open for an actor no envoy took yet is
// closed, that actor sleeping at once (the reference drains nothing: docs/serverless.md § 2.6).
func TestDeleteDrainsServerlessHosts(t *testing.T) {
	needApps(t)
	e := startLoopbackEngine(t)
	url, app := startApp(t, "rivetkit 2.3.19", filepath.Join(harness.NPMDir, "..", "npm23"), "serverless-app.mjs",
		"RIVET_ENDPOINT="+e.URL, "RIVET_RUN_SERVICES=0")
	put(t, e, "del23", url)
	aid := createCounter(t, e, "del23", "d1")
	if got := increment(t, e, aid, 2); got != 2 {
		t.Fatalf("increment: %d, want 2", got)
	}
	if stops := envoyStops(t, e, "del23"); len(stops) != 1 || stops[0] != nil {
		t.Fatalf("envoys of the pool before the delete: %v, want one running", stops)
	}

	fake, proc := startApp(t, "fake", harness.NPMDir, "serverless-fake.mjs")
	put(t, e, "delfake", fake)
	waiting := createCounter(t, e, "delfake", "d2")
	start := proc.Await("the /start", within, func(ev harness.Event) bool { return strings.Contains(ev.Line, `"path":"/api/rivet/start"`) })
	var req struct {
		ID int `json:"id"`
	}
	_ = json.Unmarshal([]byte(start.Line), &req)

	for _, pool := range []string{"del23", "delfake"} {
		if status, b := call(t, e, http.MethodDelete, "/runner-configs/"+pool+"?namespace=default", nil); status != 200 {
			t.Fatalf("DELETE %s: %d %s", pool, status, b)
		}
	}
	app.AwaitEv("sleep", within) // the drained envoy's actor stopped
	deadline := time.Now().Add(within)
	for stops := envoyStops(t, e, "del23"); len(stops) > 0 && stops[0] == nil; stops = envoyStops(t, e, "del23") {
		if time.Now().After(deadline) {
			t.Fatal("the deleted pool's envoy was not drained")
		}
		time.Sleep(20 * time.Millisecond) // polling interval: the API has no change feed
	}
	proc.Await("the /start closed by the engine", within, func(ev harness.Event) bool {
		var c struct {
			ID int    `json:"id"`
			By string `json:"by"`
		}
		return ev.Ev == "closed" && json.Unmarshal([]byte(ev.Line), &c) == nil && c.ID == req.ID && c.By == "client"
	})
	awaitAsleep(t, e, waiting)
}

// When /metadata reports a newer envoy version, the pool's older envoys are drained: the
// actor moves to a /start of the new endpoint, keeping its state. An endpoint that stops
// reporting an envoy protocol version sets the pool error "downgrade" (§§ 3.2, 6).
func TestVersionUpgradeDrainAndDowngrade(t *testing.T) {
	needApps(t)
	e := startLoopbackEngine(t)
	dir := filepath.Join(harness.NPMDir, "..", "npm23")
	v1, app1 := startApp(t, "app v1", dir, "serverless-app.mjs", "RIVET_ENDPOINT="+e.URL, "RIVET_RUN_SERVICES=0")
	v2, app2 := startApp(t, "app v2", dir, "serverless-app.mjs", "RIVET_ENDPOINT="+e.URL, "RIVET_RUN_SERVICES=0", "RIVET_ENVOY_VERSION=2")
	put(t, e, "up", v1)
	aid := createCounter(t, e, "up", "u1")
	if got := increment(t, e, aid, 3); got != 3 {
		t.Fatalf("increment: %d, want 3", got)
	}
	// The pool's endpoint now runs envoy version 2: the write's /metadata fetch drains v1's envoy.
	body := map[string]any{"datacenters": map[string]any{"default": map[string]any{
		"serverless": map[string]any{"url": v2, "request_lifespan": 3600, "headers": map[string]string{"x-secret": "s3cret"}}}}}
	if status, b := call(t, e, http.MethodPut, "/runner-configs/up?namespace=default", body); status != 200 {
		t.Fatalf("PUT v2: %d %s", status, b)
	}
	app1.AwaitEv("sleep", within)
	app2.Await("a /start at v2", within, func(ev harness.Event) bool { return strings.Contains(ev.Line, `"path":"/api/rivet/start"`) })
	if got := increment(t, e, aid, 1); got != 4 {
		t.Fatalf("increment after the upgrade: %d, want 4", got)
	}
	// v1's envoy, evicted, is gone; v2's runs the actor.
	var out struct {
		Envoys []struct {
			PoolName string `json:"pool_name"`
			Version  uint32 `json:"version"`
		} `json:"envoys"`
	}
	e.GetJSON(t, "/envoys?namespace=default", &out)
	if len(out.Envoys) != 1 || out.Envoys[0].Version != 2 {
		t.Errorf("envoys after the upgrade: %+v, want only version 2's", out.Envoys)
	}

	// An endpoint without envoyProtocolVersion: downgrade.
	fake, _ := startApp(t, "fake", harness.NPMDir, "serverless-fake.mjs", "FAKE_ENVOY_PROTOCOL=none")
	body["datacenters"].(map[string]any)["default"].(map[string]any)["serverless"].(map[string]any)["url"] = fake
	if status, b := call(t, e, http.MethodPut, "/runner-configs/up?namespace=default", body); status != 200 {
		t.Fatalf("PUT fake: %d %s", status, b)
	}
	if got := poolError(t, e, "up"); got != `"downgrade"` {
		t.Errorf("runner_pool_error after /metadata lost its envoyProtocolVersion: %s, want \"downgrade\"", got)
	}
}
