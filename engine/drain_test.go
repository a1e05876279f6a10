package engine

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/sdk/client"
)

// POST /runners/{runner_id}/drain drains a runner through the same path as its own
// ToServerStopping: with no actor on it, it stops at once and its socket closes with
// 1000 ws.eviction; a second drain changes nothing; bad input changes nothing.
func TestDrainRunnerAPI(t *testing.T) {
	e := startEngine(t, testConfig("tok"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, ci := connectRunner(t, ctx, e.PublicAddr(), "k1", "tok")
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	post := func(path, token string) reply {
		return callMethod(t, client, http.MethodPost, e.PublicAddr(), path, token)
	}
	drainPath := "/runners/" + ci.RunnerID + "/drain?namespace=default"

	for _, tc := range []struct {
		name, path, token string
		status            int
		want              string
	}{
		{"no token", drainPath, "", 401, `"code":"unauthorized"`},
		{"wrong token", drainPath, "nope", 403, `"code":"forbidden"`},
		{"malformed id", "/runners/not-an-id/drain?namespace=default", "tok", 400, `"runner_id"`},
		{"unknown runner", "/runners/" + id.New(1).String() + "/drain?namespace=default", "tok", 404, `"group":"runner","code":"not_found"`},
		{"unknown datacenter", "/runners/" + id.New(9).String() + "/drain?namespace=default", "tok", 404, `"group":"runner","code":"not_found"`},
		{"no namespace", "/runners/" + ci.RunnerID + "/drain", "tok", 400, `"namespace"`},
		{"unknown namespace", "/runners/" + ci.RunnerID + "/drain?namespace=nope", "tok", 404, `"group":"namespace","code":"not_found"`},
		{"unknown query field", drainPath + "&force=1", "tok", 400, `"force"`},
	} {
		if r := post(tc.path, tc.token); r.status != tc.status || !strings.Contains(r.body, tc.want) {
			t.Errorf("%s: %d %s, want %d with %s", tc.name, r.status, r.body, tc.status, tc.want)
		}
	}
	if r := call(t, client, e.PublicAddr(), "/runners?namespace=default", "tok"); !strings.Contains(r.body, `"drain_ts":null`) {
		t.Fatalf("a rejected drain changed the runner: %s", r.body)
	}

	r := post(drainPath, "tok")
	var out struct {
		Runner struct {
			RunnerID string `json:"runner_id"`
			DrainTs  *int64 `json:"drain_ts"`
			StopTs   *int64 `json:"stop_ts"`
		} `json:"runner"`
	}
	if err := json.Unmarshal([]byte(r.body), &out); err != nil || r.status != 200 {
		t.Fatalf("drain: %d %s (%v)", r.status, r.body, err)
	}
	if out.Runner.RunnerID != ci.RunnerID || out.Runner.DrainTs == nil || out.Runner.StopTs == nil {
		t.Fatalf("drained runner %+v, want drain_ts and stop_ts", out.Runner)
	}
	for {
		_, _, err := c.Read(ctx)
		if err == nil {
			continue // pings
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusNormalClosure || !strings.HasPrefix(ce.Reason, "ws.eviction#") {
			t.Fatalf("socket ended with %v, want 1000 ws.eviction#<ray>", err)
		}
		break
	}
	again := post(drainPath, "tok")
	if again.status != 200 || again.body != r.body {
		t.Fatalf("second drain: %d %s, want the same answer %s", again.status, again.body, r.body)
	}
	// Stopped: gone from the default list, shown with include_stopped.
	if r := call(t, client, e.PublicAddr(), "/runners?namespace=default", "tok"); strings.Contains(r.body, ci.RunnerID) {
		t.Fatalf("a stopped runner is listed: %s", r.body)
	}
	if r := call(t, client, e.PublicAddr(), "/runners?namespace=default&include_stopped=true", "tok"); !strings.Contains(r.body, ci.RunnerID) {
		t.Fatalf("include_stopped does not list the stopped runner: %s", r.body)
	}
}

// The Go API client drains through the same endpoint.
func TestDrainRunnerSDK(t *testing.T) {
	e := startEngine(t, testConfig("tok"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, ci := connectRunner(t, ctx, e.PublicAddr(), "k1", "tok")
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	c, err := client.New("http://"+e.PublicAddr().String(), client.WithToken("tok"), client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Runners().Drain(ctx, ci.RunnerID)
	if err != nil || r.RunnerId != ci.RunnerID || r.DrainTs == nil || r.StopTs == nil {
		t.Fatalf("Drain = %+v, %v; want the runner with drain_ts and stop_ts", r, err)
	}
	if _, err := c.Runners().Drain(ctx, "bad"); err == nil || !strings.Contains(err.Error(), "runner_id") {
		t.Fatalf("Drain of a malformed id = %v, want an error naming runner_id", err)
	}
}
