package runner

import (
	"encoding/json"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/berthhq/berth/tests/internal/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

type (
	settings = harness.Settings
	event    = harness.Event
	proc     = harness.Proc
)

var (
	needNode  = harness.NeedNode
	startNode = harness.StartNode
)

// engine is a berth process (harness.Engine) with the runner API's helpers.
type engine struct{ *harness.Engine }

// startEngine starts berth with st and an in-memory store and waits until /health answers.
func startEngine(t *testing.T, st settings) *engine {
	t.Helper()
	return &engine{harness.StartEngine(t, st)}
}

// newEngine configures berth with st and the store dbURL; Start runs it.
func newEngine(t *testing.T, st settings, dbURL string) *engine {
	t.Helper()
	return &engine{harness.NewEngine(t, st, dbURL)}
}

// runnerJSON is a runner as GET /runners shows it; nullable fields are pointers.
type runnerJSON struct {
	RunnerID        string          `json:"runner_id"`
	NamespaceID     string          `json:"namespace_id"`
	Datacenter      string          `json:"datacenter"`
	Name            string          `json:"name"`
	Key             string          `json:"key"`
	Version         uint32          `json:"version"`
	TotalSlots      uint32          `json:"total_slots"`
	RemainingSlots  uint32          `json:"remaining_slots"`
	CreateTs        int64           `json:"create_ts"`
	DrainTs         *int64          `json:"drain_ts"`
	StopTs          *int64          `json:"stop_ts"`
	LastPingTs      int64           `json:"last_ping_ts"`
	LastConnectedTs *int64          `json:"last_connected_ts"`
	LastRtt         uint32          `json:"last_rtt"`
	Metadata        json.RawMessage `json:"metadata"`
}

func (r runnerJSON) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// drain drains runner id through POST /runners/{id}/drain and returns the runner as answered.
func (e *engine) drain(t *testing.T, id string) runnerJSON {
	t.Helper()
	var out struct {
		Runner runnerJSON `json:"runner"`
	}
	e.PostJSON(t, "/runners/"+url.PathEscape(id)+"/drain?namespace=default", &out)
	return out.Runner
}

// runners lists the default namespace's runners with the extra query q ("" for none).
func (e *engine) runners(t *testing.T, q string) []runnerJSON {
	t.Helper()
	var out struct {
		Runners []runnerJSON `json:"runners"`
	}
	path := "/runners?namespace=default"
	if q != "" {
		path += "&" + q
	}
	e.GetJSON(t, path, &out)
	return out.Runners
}

// runner returns runner id as listed with include_stopped=true, or false if it is not listed.
func (e *engine) runner(t *testing.T, id string) (runnerJSON, bool) {
	t.Helper()
	for _, r := range e.runners(t, "include_stopped=true&runner_id="+url.QueryEscape(id)) {
		if r.RunnerID == id {
			return r, true
		}
	}
	return runnerJSON{}, false
}

// listed reports whether the default list (no include_stopped) holds runner id.
func (e *engine) listed(t *testing.T, id string) bool {
	t.Helper()
	for _, r := range e.runners(t, "") {
		if r.RunnerID == id {
			return true
		}
	}
	return false
}

// awaitRunner polls runner id (include_stopped) every 50 ms until ok accepts it, for at most
// within; it fails the test with the last state seen.
func (e *engine) awaitRunner(t *testing.T, id, what string, within time.Duration, ok func(runnerJSON) bool) runnerJSON {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r, found := e.runner(t, id)
		if found && ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("runner %s: not %s within %v; last seen: %v (listed %v)", id, what, within, r, found)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
	}
}

// defaultNamespaceID is the id of the namespace "default".
func (e *engine) defaultNamespaceID(t *testing.T) string {
	t.Helper()
	var out struct {
		Namespaces []struct {
			NamespaceID string `json:"namespace_id"`
			Name        string `json:"name"`
		} `json:"namespaces"`
	}
	e.GetJSON(t, "/namespaces?name=default", &out)
	for _, ns := range out.Namespaces {
		if ns.Name == "default" {
			return ns.NamespaceID
		}
	}
	t.Fatalf("no namespace named default in %+v", out.Namespaces)
	return ""
}
