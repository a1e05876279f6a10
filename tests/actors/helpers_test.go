package actors

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/berthhq/berth/api-public/openapitest"
	"github.com/berthhq/berth/tests/internal/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// How long a test waits for something that should happen soon: generous, since the machine
// may be busy; nothing waits this long when all is well.
const soon = 20 * time.Second

// goRunnerPackage is the Go runner of these tests.
const goRunnerPackage = "github.com/berthhq/berth/tests/actors/gorunner"

// runnerKind is one of the two runners hosting the probe actor.
type runnerKind struct {
	name  string
	start func(t *testing.T, name string, env []string) *harness.Proc
}

var kinds = []runnerKind{
	{name: "npm", start: func(t *testing.T, name string, env []string) *harness.Proc {
		harness.NeedNode(t)
		return harness.StartNode(t, name, "actor-runner.mjs", env)
	}},
	{name: "go", start: func(t *testing.T, name string, env []string) *harness.Proc {
		cmd := exec.Command(harness.Build(t, goRunnerPackage))
		cmd.Env = append(os.Environ(), env...)
		return harness.StartProc(t, name, cmd)
	}},
}

// eachRunner runs f as a parallel subtest for each runner kind.
func eachRunner(t *testing.T, f func(t *testing.T, k runnerKind)) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			f(t, k)
		})
	}
}

// actorRunner is a runner process hosting probe actors, connected.
type actorRunner struct {
	*harness.Proc
	id string // the runner id from its first ToClientInit
}

// startRunner starts a runner of kind k on e in pool with slots slots, and waits until it
// is connected.
func startRunner(t *testing.T, k runnerKind, e *harness.Engine, pool string, slots int) *actorRunner {
	t.Helper()
	p := k.start(t, fmt.Sprintf("%s runner %s", k.name, pool), []string{
		"BERTH_ENDPOINT=" + e.URL, "RUNNER_NAME=" + pool, "RUNNER_SLOTS=" + strconv.Itoa(slots),
	})
	p.AwaitEv("key", soon)
	// runner.start() may resolve before or after the first onConnected.
	var id string
	started := false
	p.Await("connected and started", soon, func(ev harness.Event) bool {
		switch ev.Ev {
		case "connected":
			id = ev.RunnerID
		case "started":
			started = true
		}
		return id != "" && started
	})
	return &actorRunner{Proc: p, id: id}
}

// awaitStart awaits the runner's actorStart of actor aid, generation gen.
func (r *actorRunner) awaitStart(aid string, gen int) harness.Event {
	return r.Await(fmt.Sprintf("actorStart of %s generation %d", aid, gen), soon, func(ev harness.Event) bool {
		return ev.Ev == "actorStart" && ev.ActorID == aid && ev.Generation == gen
	})
}

// awaitStop awaits the runner's actorStop of actor aid, generation gen.
func (r *actorRunner) awaitStop(aid string, gen int) harness.Event {
	return r.Await(fmt.Sprintf("actorStop of %s generation %d", aid, gen), soon, func(ev harness.Event) bool {
		return ev.Ev == "actorStop" && ev.ActorID == aid && ev.Generation == gen
	})
}

// starts returns the generations the runner started actor aid with, in order.
func (r *actorRunner) starts(aid string) []int {
	var out []int
	for _, ev := range r.Seen() {
		if ev.Ev == "actorStart" && ev.ActorID == aid {
			out = append(out, ev.Generation)
		}
	}
	return out
}

// command sends a stdin command and awaits its done event.
func (r *actorRunner) command(cmd string) {
	r.Send(cmd)
	r.Await("done "+cmd, soon, func(ev harness.Event) bool { return ev.Ev == "done" && ev.Command == cmd })
}

// actorJSON is an actor as the REST API shows it; nullable fields are pointers.
type actorJSON struct {
	ActorID             string          `json:"actor_id"`
	Name                string          `json:"name"`
	Key                 *string         `json:"key"`
	NamespaceID         string          `json:"namespace_id"`
	Datacenter          string          `json:"datacenter"`
	RunnerNameSelector  string          `json:"runner_name_selector"`
	CrashPolicy         string          `json:"crash_policy"`
	CreateTs            int64           `json:"create_ts"`
	StartTs             *int64          `json:"start_ts"`
	PendingAllocationTs *int64          `json:"pending_allocation_ts"`
	ConnectableTs       *int64          `json:"connectable_ts"`
	SleepTs             *int64          `json:"sleep_ts"`
	RescheduleTs        *int64          `json:"reschedule_ts"`
	DestroyTs           *int64          `json:"destroy_ts"`
	Error               json.RawMessage `json:"error"`
}

func (a actorJSON) String() string {
	b, _ := json.Marshal(a)
	return string(b)
}

// The states an actor shows through the API.
func running(a actorJSON) bool   { return a.ConnectableTs != nil && a.DestroyTs == nil }
func sleeping(a actorJSON) bool  { return a.SleepTs != nil && a.DestroyTs == nil }
func destroyed(a actorJSON) bool { return a.DestroyTs != nil }
func pending(a actorJSON) bool   { return a.PendingAllocationTs != nil && a.DestroyTs == nil }

// stopping: placed and told to stop, not stopped yet.
func stopping(a actorJSON) bool {
	return a.StartTs != nil && a.ConnectableTs == nil && a.SleepTs == nil && a.PendingAllocationTs == nil &&
		a.RescheduleTs == nil && a.DestroyTs == nil
}

// createReq is the body of POST /actors.
type createReq struct {
	Name               string  `json:"name"`
	Key                *string `json:"key,omitempty"`
	Input              *string `json:"input,omitempty"` // base64
	RunnerNameSelector string  `json:"runner_name_selector"`
	CrashPolicy        string  `json:"crash_policy"`
}

// create creates a probe actor in pool with crash policy policy and input (nil for none).
func create(t *testing.T, e *harness.Engine, pool, policy string, input any) actorJSON {
	t.Helper()
	req := createReq{Name: "probe", RunnerNameSelector: pool, CrashPolicy: policy}
	if input != nil {
		b, err := json.Marshal(input)
		if err != nil {
			t.Fatal(err)
		}
		s := base64.StdEncoding.EncodeToString(b)
		req.Input = &s
	}
	var out struct {
		Actor actorJSON `json:"actor"`
	}
	e.CallJSON(t, http.MethodPost, "/actors?namespace=default", req, &out)
	return out.Actor
}

// getActor returns actor aid as GET /actors?actor_ids= shows it.
func getActor(t *testing.T, e *harness.Engine, aid string) actorJSON {
	t.Helper()
	var out struct {
		Actors []actorJSON `json:"actors"`
	}
	e.GetJSON(t, "/actors?namespace=default&actor_ids="+url.QueryEscape(aid), &out)
	if len(out.Actors) != 1 || out.Actors[0].ActorID != aid {
		t.Fatalf("GET /actors?actor_ids=%s: %v", aid, out.Actors)
	}
	return out.Actors[0]
}

// awaitActor polls actor aid every 20 ms until ok accepts it, for at most soon; it fails the
// test with the last state seen.
func awaitActor(t *testing.T, e *harness.Engine, aid, what string, ok func(actorJSON) bool) actorJSON {
	t.Helper()
	deadline := time.Now().Add(soon)
	for {
		a := getActor(t, e, aid)
		if ok(a) {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("actor %s: not %s within %v; last seen %v", aid, what, soon, a)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
}

// gateway sends method /gateway/{aid}{path} with body (JSON-encoded unless nil) and returns
// the status and body of the actor's answer.
func gateway(t *testing.T, e *harness.Engine, method, aid, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.URL+"/gateway/"+aid+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.Do(openapitest.Unchecked(req))
	if err != nil {
		t.Fatalf("%s /gateway/%s%s: %v", method, aid, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s /gateway/%s%s: %v", method, aid, path, err)
	}
	return resp.StatusCode, b
}

// gatewayJSON is gateway wanting a 200 answer, decoded into out (nil to skip).
func gatewayJSON(t *testing.T, e *harness.Engine, method, aid, path string, body, out any) {
	t.Helper()
	status, b := gateway(t, e, method, aid, path, body)
	if status != http.StatusOK {
		t.Fatalf("%s /gateway/%s%s: %d %s", method, aid, path, status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s /gateway/%s%s: %v in %s", method, aid, path, err, b)
		}
	}
}

// actorState is the probe's GET /state.
type actorState struct {
	ActorID    string `json:"actorId"`
	Generation int    `json:"generation"`
	RunnerID   string `json:"runnerId"`
}

func state(t *testing.T, e *harness.Engine, aid string) actorState {
	t.Helper()
	var s actorState
	gatewayJSON(t, e, http.MethodGet, aid, "/state", nil, &s)
	return s
}

// kvValue reads key of actor aid through GET /actors/{id}/kv/keys/{key}: the value and
// whether it exists (404 actor.kv_key_not_found when not).
func kvValue(t *testing.T, e *harness.Engine, aid, key string) (string, bool) {
	t.Helper()
	path := "/actors/" + aid + "/kv/keys/" + url.PathEscape(base64.StdEncoding.EncodeToString([]byte(key))) + "?namespace=default"
	status, b := e.Call(t, http.MethodGet, path, nil)
	if status == http.StatusNotFound {
		var e struct{ Group, Code string }
		if json.Unmarshal(b, &e) == nil && e.Group == "actor" && e.Code == "kv_key_not_found" {
			return "", false
		}
		t.Fatalf("GET %s: %d %s, want 200 or 404 actor.kv_key_not_found", path, status, b)
	}
	var out struct {
		Value    string `json:"value"`
		UpdateTs int64  `json:"update_ts"`
	}
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, status, b)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, b)
	}
	v, err := base64.StdEncoding.DecodeString(out.Value)
	if err != nil {
		t.Fatalf("GET %s: value %q: %v", path, out.Value, err)
	}
	return string(v), true
}
