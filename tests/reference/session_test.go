package reference

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/tests/internal/harness"
)

// A Session is one scenario run against one target: it talks to the engine as a client
// would and records what it sees in its Transcript. Each session works in a namespace of
// its own, so sessions of different scenarios share an engine without meeting.
type Session struct {
	T      *testing.T
	Target *Target
	NS     string // the scenario's namespace
	tr     *Transcript
	client *http.Client
}

func newSession(t *testing.T, tg *Target, scenario string) *Session {
	s := &Session{T: t, Target: tg, tr: newTranscript(),
		// A fresh connection per request: behind the cluster's proxy each goes to the next node.
		client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 90 * time.Second}}
	s.NS = "diff-" + strings.ReplaceAll(strings.ToLower(scenario), "_", "-")
	s.MustCall(http.MethodPost, "/namespaces", map[string]any{"name": s.NS, "display_name": s.NS})
	return s
}

// Record adds a step to the transcript.
func (s *Session) Record(step string, v any) {
	s.T.Helper()
	if err := s.tr.record(step, v); err != nil {
		s.T.Fatal(err)
	}
}

// Request is an HTTP request of a scenario. Path may hold {ns}, replaced by the session's
// namespace (query-escaped).
type Request struct {
	Method string
	Path   string
	Body   any // encoded as JSON unless a []byte or string (sent as is)
	Header http.Header
	// Anonymous sends no admin token; Token sends this one instead of the target's.
	Anonymous bool
	Token     string
	// Node sends the request to that node of the target (its index in Nodes) instead of URL.
	Node *int
	// Timeout bounds the wait for the answer, instead of the session client's 90 s.
	Timeout time.Duration
}

// Reply is an engine's answer.
type Reply struct {
	Status  int
	Header  http.Header
	Body    []byte
	Err     error // the request got no answer
	Elapsed time.Duration
}

// JSON decodes the body, or returns it as a string when it is not JSON.
func (r Reply) JSON() any {
	var v any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		return string(r.Body)
	}
	return v
}

// Do sends req and returns the answer (Err set when none came).
func (s *Session) Do(req Request) Reply {
	s.T.Helper()
	var body io.Reader
	switch b := req.Body.(type) {
	case nil:
	case []byte:
		body = bytes.NewReader(b)
	case string:
		body = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			s.T.Fatal(err)
		}
		body = bytes.NewReader(raw)
	}
	base := s.Target.URL
	if req.Node != nil {
		base = s.Target.Nodes[*req.Node]
	}
	path := strings.ReplaceAll(req.Path, "{ns}", s.NS)
	ctx := context.Background()
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, base+path, body)
	if err != nil {
		s.T.Fatal(err)
	}
	for k, vs := range req.Header {
		hr.Header[k] = vs
	}
	if req.Body != nil && hr.Header.Get("Content-Type") == "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	switch {
	case req.Token != "":
		hr.Header.Set("Authorization", "Bearer "+req.Token)
	case !req.Anonymous && s.Target.Token != "":
		hr.Header.Set("Authorization", "Bearer "+s.Target.Token)
	}
	start := time.Now()
	resp, err := s.client.Do(hr)
	if err != nil {
		return Reply{Err: err, Elapsed: time.Since(start)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return Reply{Status: resp.StatusCode, Header: resp.Header, Body: b, Err: err, Elapsed: time.Since(start)}
}

// MustCall sends method path with body (JSON, nil for none) and fails the test unless the
// answer is 200; it returns the decoded body. Nothing is recorded: it is for setting up.
func (s *Session) MustCall(method, path string, body any) map[string]any {
	s.T.Helper()
	r := s.Do(Request{Method: method, Path: path, Body: body})
	if r.Err != nil || r.Status != http.StatusOK {
		s.T.Fatalf("%s %s on %s: %d %s %v", method, path, s.Target.Name, r.Status, r.Body, r.Err)
	}
	var out map[string]any
	if err := json.Unmarshal(r.Body, &out); err != nil {
		s.T.Fatalf("%s %s on %s: %v in %s", method, path, s.Target.Name, err, r.Body)
	}
	return out
}

// Check sends req and records step: the status, the body (JSON, or its text) and the
// headers named (lower case; absent ones recorded as null). A request that got no answer
// is recorded as such ("no answer"), which no engine should give.
func (s *Session) Check(step string, req Request, headers ...string) Reply {
	s.T.Helper()
	r := s.Do(req)
	s.Record(step, observe(r, headers...))
	return r
}

// observe is what Check records of a reply.
func observe(r Reply, headers ...string) map[string]any {
	if r.Err != nil {
		return map[string]any{"answer": "no answer"}
	}
	obs := map[string]any{"status": r.Status, "body": r.JSON()}
	if len(headers) > 0 {
		h := map[string]any{}
		for _, name := range headers {
			if v, ok := r.Header[http.CanonicalHeaderKey(name)]; ok {
				h[name] = strings.Join(v, ", ")
			} else {
				h[name] = nil
			}
		}
		obs["headers"] = h
	}
	return obs
}

// errorOf is the part of an error answer the engines must agree on: the status and
// group.code of its JSON error, or what the body is when it is not one (<empty body>,
// <not a JSON error: content type>). A JSON error without a message counts as none.
func errorOf(r Reply) map[string]any {
	if r.Err != nil {
		return map[string]any{"answer": "no answer"}
	}
	var e struct {
		Group   *string `json:"group"`
		Code    *string `json:"code"`
		Message *string `json:"message"`
	}
	kind := ""
	switch {
	case len(r.Body) == 0:
		kind = "<empty body>"
	case json.Unmarshal(r.Body, &e) != nil || e.Group == nil || e.Code == nil || e.Message == nil:
		kind = "<not a JSON error: " + r.Header.Get("Content-Type") + ">"
	default:
		kind = *e.Group + "." + *e.Code
	}
	return map[string]any{"status": r.Status, "error": kind}
}

// Eventually polls cond every 100 ms until it holds, failing the test after within. The
// engines are observed from outside: their state is seen by reading it again.
func (s *Session) Eventually(what string, within time.Duration, cond func() bool) {
	s.T.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			s.T.Fatalf("%s: %s not seen within %v", s.Target.Name, what, within)
		}
		time.Sleep(100 * time.Millisecond) // polling interval of an outside observer
	}
}

// Runner is a reference-runner.mjs process (@rivetkit/engine-runner 2.2.1) connected to the
// session's engine.
type Runner struct {
	*harness.Proc
	ID string // the runner id of its first connection
}

// IDs are the runner ids of all its connections so far: a runner that reconnects after its
// engine restarted may be given a new one.
func (r *Runner) IDs() []string {
	var ids []string
	for _, ev := range r.Seen() {
		if ev.Ev == "connected" && !slices.Contains(ids, ev.RunnerID) {
			ids = append(ids, ev.RunnerID)
		}
	}
	return ids
}

// RunnerOptions are a runner's settings; zero fields take reference-runner.mjs's defaults.
type RunnerOptions struct {
	Pool  string
	Slots int
	// Token is the token it connects with: the target's unless set; "-" for none.
	Token string
	// Node connects it to that node of the target (its index in Nodes) instead of URL.
	Node *int
	// Endpoint, when set, is the URL it connects to (a proxy in front of the target).
	Endpoint string
}

// StartRunner starts a runner in the session's namespace and waits until it is connected.
func (s *Session) StartRunner(o RunnerOptions) *Runner {
	s.T.Helper()
	r := s.SpawnRunner(o)
	ev := r.AwaitEv("connected", 30*time.Second)
	r.ID = ev.RunnerID
	return r
}

// SpawnRunner starts a runner without waiting for it to connect.
func (s *Session) SpawnRunner(o RunnerOptions) *Runner {
	s.T.Helper()
	harness.NeedNode(s.T)
	endpoint := s.Target.URL
	switch {
	case o.Endpoint != "":
		endpoint = o.Endpoint
	case o.Node != nil:
		endpoint = s.Target.Nodes[*o.Node]
	}
	env := []string{"BERTH_ENDPOINT=" + endpoint, "BERTH_NAMESPACE=" + s.NS}
	if o.Pool != "" {
		env = append(env, "RUNNER_NAME="+o.Pool)
	}
	if o.Slots != 0 {
		env = append(env, fmt.Sprintf("RUNNER_SLOTS=%d", o.Slots))
	}
	switch {
	case o.Token == "-":
	case o.Token != "":
		env = append(env, "RUNNER_TOKEN="+o.Token)
	case s.Target.Token != "":
		env = append(env, "RUNNER_TOKEN="+s.Target.Token)
	}
	return &Runner{Proc: harness.StartNode(s.T, s.Target.Name+"-runner", "reference-runner.mjs", env)}
}

// Actor creates an actor of name "diff" in pool with crash policy policy (and key, unless
// "") and returns its id.
func (s *Session) Actor(pool, policy, key string) string {
	s.T.Helper()
	body := map[string]any{"name": "diff", "runner_name_selector": pool, "crash_policy": policy}
	if key != "" {
		body["key"] = key
	}
	out := s.MustCall(http.MethodPost, "/actors?namespace={ns}", body)
	return out["actor"].(map[string]any)["actor_id"].(string)
}

// GetActor reads an actor.
func (s *Session) GetActor(aid string) map[string]any {
	s.T.Helper()
	out := s.MustCall(http.MethodGet, "/actors?namespace={ns}&actor_ids="+aid, nil)
	actors := out["actors"].([]any)
	if len(actors) != 1 {
		s.T.Fatalf("%s: GET /actors?actor_ids=%s: %d actors", s.Target.Name, aid, len(actors))
	}
	return actors[0].(map[string]any)
}

// RunnerConfig makes pool a normal runner pool of the namespace (PUT /runner-configs).
func (s *Session) RunnerConfig(pool string) {
	s.T.Helper()
	s.MustCall(http.MethodPut, "/runner-configs/"+pool+"?namespace={ns}",
		map[string]any{"datacenters": map[string]any{"default": map[string]any{"normal": map[string]any{}}}})
}

// Gateway sends an HTTP request to an actor through the gateway.
func (s *Session) Gateway(method, aid, path string) Reply {
	s.T.Helper()
	return s.Do(Request{Method: method, Path: "/gateway/" + aid + path, Anonymous: true})
}

// GatewayVia is Gateway through node i of the target.
func (s *Session) GatewayVia(i int, method, aid, path string) Reply {
	s.T.Helper()
	return s.Do(Request{Method: method, Path: "/gateway/" + aid + path, Anonymous: true, Node: &i})
}

// LastNode is the index of the target's last node: another node than the first on a
// cluster, the only one elsewhere.
func (s *Session) LastNode() int { return len(s.Target.Nodes) - 1 }

// sortedKeys returns m's keys in byte order.
func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}

// bucket names the range d falls in among bounds (ascending): "<1s", "1s-10s", ">=10s".
func bucket(d time.Duration, bounds ...time.Duration) string {
	for i, b := range bounds {
		if d < b {
			if i == 0 {
				return "<" + b.String()
			}
			return bounds[i-1].String() + "-" + b.String()
		}
	}
	return ">=" + bounds[len(bounds)-1].String()
}
