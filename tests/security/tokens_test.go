package security

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/api-public/openapitest"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/sdk/client"
	"github.com/berthhq/berth/sdk/runner/runnertest"
	"github.com/berthhq/berth/tests/internal/harness"
)

const adminToken = "admin-secret"

// scopedEngine is an engine with an admin token and a tokens file of scoped tokens for two
// namespaces, team-a and team-b, each created.
type scopedEngine struct {
	*harness.Engine
	tokens map[string]string // by entry id: a-admin, a-read, a-runner, a-expired, b-admin
	file   string
}

func startScoped(t *testing.T) *scopedEngine {
	t.Helper()
	s := &scopedEngine{tokens: map[string]string{}, file: filepath.Join(t.TempDir(), "tokens.json")}
	past := time.Now().Add(-time.Hour)
	var f auth.File
	for _, e := range []auth.Entry{
		{ID: "a-admin", Namespace: "team-a", Role: auth.RoleAdmin},
		{ID: "a-read", Namespace: "team-a", Role: auth.RoleRead},
		{ID: "a-runner", Namespace: "team-a", Role: auth.RoleRunner},
		{ID: "a-expired", Namespace: "team-a", Role: auth.RoleAdmin, ExpiresAt: &past},
		{ID: "b-admin", Namespace: "team-b", Role: auth.RoleAdmin},
	} {
		tok := auth.NewToken()
		s.tokens[e.ID] = tok
		e.SHA256 = auth.Hash(tok)
		f.Tokens = append(f.Tokens, e)
	}
	if err := auth.WriteFile(s.file, f); err != nil {
		t.Fatal(err)
	}
	s.Engine = harness.StartEngine(t, harness.Settings{AdminToken: adminToken, Configure: func(cfg map[string]any) {
		cfg["auth"].(map[string]any)["tokens_file"] = s.file
	}})
	for _, ns := range []string{"team-a", "team-b"} {
		s.CallJSON(t, http.MethodPost, "/namespaces", map[string]any{"name": ns, "display_name": ns}, nil)
		s.CallJSON(t, http.MethodPut, "/runner-configs/pool?namespace="+ns,
			map[string]any{"datacenters": map[string]any{"default": map[string]any{"normal": map[string]any{}}}}, nil)
	}
	return s
}

// revoke removes the token id from the tokens file, as `berth tokens revoke` does.
func (s *scopedEngine) revoke(t *testing.T, id string) {
	t.Helper()
	f, err := auth.ReadFile(s.file)
	if err != nil {
		t.Fatal(err)
	}
	f.Tokens = slices.DeleteFunc(f.Tokens, func(e auth.Entry) bool { return e.ID == id })
	if err := auth.WriteFile(s.file, f); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond, as an outside observer of the engine would, until it holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(soon)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen within %v", what, soon)
		}
		time.Sleep(100 * time.Millisecond) // the engine looks at the tokens file at most once a second
	}
}

// actor creates an actor of pool "pool" in ns (with the admin token) and returns its id.
func (s *scopedEngine) actor(t *testing.T, ns string) string {
	t.Helper()
	var out struct {
		Actor struct {
			ActorID string `json:"actor_id"`
		} `json:"actor"`
	}
	s.CallJSON(t, http.MethodPost, "/actors?namespace="+ns, map[string]any{"name": "diff", "runner_name_selector": "pool", "crash_policy": "sleep"}, &out)
	return out.Actor.ActorID
}

// reply is an answer of the public API: its status and the group.code of its error.
type reply struct {
	status int
	code   string
	body   []byte
}

func (r reply) String() string { return fmt.Sprintf("%d %s", r.status, r.code) }

// call sends method path with token as its bearer token ("" for none) and body (nil for
// none); the exchange must follow the contract.
func (s *scopedEngine) call(t *testing.T, token, method, path string, body any) reply {
	t.Helper()
	return s.send(t, token, method, path, body, false)
}

// callOffContract is call for a request the contract does not describe: a pending operation,
// or one without the namespace query that a namespace token stands in for.
func (s *scopedEngine) callOffContract(t *testing.T, token, method, path string, body any) reply {
	t.Helper()
	return s.send(t, token, method, path, body, true)
}

func (s *scopedEngine) send(t *testing.T, token, method, path string, body any, unchecked bool) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if unchecked {
		req = openapitest.Unchecked(req)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct{ Group, Code string }
	_ = json.Unmarshal(b, &e)
	r := reply{status: resp.StatusCode, body: b}
	if e.Group != "" {
		r.code = e.Group + "." + e.Code
	}
	return r
}

// Every operation of the public API contract (so that a new endpoint is covered without
// editing this test), called with each kind of token that must not reach it: absent, wrong,
// expired, of the wrong role, of another namespace (by the namespace query, and by direct id
// with no namespace). Each refusal must be the documented error; a 2xx, or any other answer,
// counts as a bypass.
func TestScopedTokensOnEveryEndpoint(t *testing.T) {
	s := startScoped(t)
	actorA := s.actor(t, "team-a")
	ops, err := openapitest.Operations()
	if err != nil {
		t.Fatal(err)
	}
	params := strings.NewReplacer("{actor_id}", actorA, "{runner_id}", actorA, "{runner_name}", "pool", "{key}", "a2V5", "{envoy_key}", "env-1")
	attempts, bypasses := 0, 0
	expect := func(what string, got reply, status int, code string) {
		attempts++
		if got.status != status || got.code != code {
			bypasses++
			t.Errorf("%s: %v, want %d %s (%s)", what, got, status, code, got.body)
		}
	}
	for _, op := range ops {
		if op.Path == "/health" || op.Path == "/metadata" {
			continue
		}
		var body any
		if op.Method == http.MethodPost || op.Method == http.MethodPut {
			body = map[string]any{}
		}
		path := params.Replace(op.Path)
		scoped := op.Path != "/datacenters" && op.Path != "/namespaces" && op.Pending == ""
		inA := path
		if scoped {
			inA += "?namespace=team-a"
		}
		name := op.Method + " " + op.Path
		call := s.call
		if op.Pending != "" {
			call = s.callOffContract
		}
		expect(name+" without a token", call(t, "", op.Method, inA, body), 401, "api.unauthorized")
		expect(name+" with a wrong token", call(t, "wrong", op.Method, inA, body), 403, "api.forbidden")
		expect(name+" with an expired token", call(t, s.tokens["a-expired"], op.Method, inA, body), 403, "api.forbidden")
		expect(name+" with a runner token", call(t, s.tokens["a-runner"], op.Method, inA, body), 403, "api.forbidden")
		if op.Method != http.MethodGet {
			expect(name+" with a read token", call(t, s.tokens["a-read"], op.Method, inA, body), 403, "api.forbidden")
		} else if r := call(t, s.tokens["a-read"], op.Method, inA, body); op.Pending == "" && (r.status == 401 || r.status == 403) {
			t.Errorf("%s with a read token of its namespace: refused, %v", name, r)
		}
		switch {
		case op.Method == http.MethodPost && op.Path == "/namespaces":
			expect(name+" with a namespace's admin token", call(t, s.tokens["a-admin"], op.Method, inA, body), 403, "api.forbidden")
		case scoped:
			expect(name+" of team-a with team-b's admin token", call(t, s.tokens["b-admin"], op.Method, inA, body), 404, "namespace.not_found")
			if strings.Contains(op.Path, "{actor_id}") {
				expect(name+" by id of team-a's actor with team-b's admin token", s.callOffContract(t, s.tokens["b-admin"], op.Method, path, body), 404, "actor.not_found")
			}
			if r := call(t, s.tokens["a-admin"], op.Method, inA, body); r.status == 401 || r.status == 403 || r.code == "namespace.not_found" {
				t.Errorf("%s with team-a's admin token: refused, %v", name, r)
			}
		}
	}

	// Lists: a namespace token sees its namespace only, whatever the query asks.
	var nss struct {
		Namespaces []struct{ Name string } `json:"namespaces"`
	}
	for _, q := range []string{"", "?name=team-a", "?name=default"} {
		r := s.call(t, s.tokens["b-admin"], http.MethodGet, "/namespaces"+q, nil)
		_ = json.Unmarshal(r.body, &nss)
		attempts++
		for _, n := range nss.Namespaces {
			if n.Name != "team-b" {
				bypasses++
				t.Errorf("GET /namespaces%s with team-b's token lists %s", q, n.Name)
			}
		}
	}
	var actors struct {
		Actors []struct {
			ActorID string `json:"actor_id"`
		} `json:"actors"`
	}
	r := s.callOffContract(t, s.tokens["b-admin"], http.MethodGet, "/actors?actor_ids="+actorA, nil)
	attempts++
	if err := json.Unmarshal(r.body, &actors); r.status != 200 || err != nil || len(actors.Actors) != 0 {
		bypasses++
		t.Errorf("GET /actors?actor_ids=<team-a's> with team-b's token: %v %s", r, r.body)
	}
	t.Logf("figure: scoped tokens on %d operations: %d refusals checked, %d bypasses", len(ops), attempts, bypasses)
}

// The runner and envoy sockets take the admin token and an admin or runner token of their
// namespace; anything else is closed with 1008 and the error's code.
func TestScopedTokensOnSockets(t *testing.T) {
	s := startScoped(t)
	runnerPath := func(ns string) string {
		return "/runners/connect?protocol_version=7&namespace=" + ns + "&runner_key=k1"
	}
	envoyPath := func(ns string) string {
		return "/envoys/connect?protocol_version=8&namespace=" + ns + "&pool_name=pool&envoy_key=key1&version=1"
	}
	attempts, bypasses := 0, 0
	for _, socket := range []struct {
		name string
		path func(string) string
	}{{"runner", runnerPath}, {"envoy", envoyPath}} {
		for _, c := range []struct {
			what, token, ns, want string
		}{
			{"no token", "", "team-a", "api.unauthorized"},
			{"a wrong token", "wrong", "team-a", "api.forbidden"},
			{"an expired token", s.tokens["a-expired"], "team-a", "api.forbidden"},
			{"a read token", s.tokens["a-read"], "team-a", "api.forbidden"},
			{"team-a's runner token in team-b", s.tokens["a-runner"], "team-b", "api.forbidden"},
			{"team-b's admin token in team-a", s.tokens["b-admin"], "team-a", "api.forbidden"},
		} {
			attempts++
			code, reason := socketClose(t, s.URL, socket.path(c.ns), c.token)
			if code != websocket.StatusPolicyViolation || !strings.HasPrefix(reason, c.want+"#") {
				bypasses++
				t.Errorf("%s socket with %s: closed %d %q, want 1008 %s", socket.name, c.what, code, reason, c.want)
			}
		}
	}
	t.Logf("figure: scoped tokens on the runner and envoy sockets: %d refusals checked, %d bypasses", attempts, bypasses)
}

// socketClose dials a socket with token and returns the close frame that ends it (0 when it
// stays open for a second).
func socketClose(t *testing.T, base, path, token string) (websocket.StatusCode, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	protocols := []string{"rivet"}
	if token != "" {
		protocols = append(protocols, "rivet_token."+token)
	}
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+path, &websocket.DialOptions{Subprotocols: protocols})
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	defer c.CloseNow()
	rctx, rcancel := context.WithTimeout(ctx, time.Second)
	defer rcancel()
	_, _, err = c.Read(rctx)
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return ce.Code, ce.Reason
	}
	return 0, ""
}

// End to end with scoped tokens: the npm runner and the Go runner SDK connect with team-a's
// runner token, the Go client creates an actor with team-a's admin token and lists it with
// the read token, the actor answers through the gateway, and team-b's token sees none of it.
// A runner token revoked while the engine runs no longer connects.
func TestScopedTokensEndToEnd(t *testing.T) {
	harness.NeedNode(t)
	s := startScoped(t)
	ctx, cancel := context.WithTimeout(context.Background(), soon)
	defer cancel()
	npm := harness.StartNode(t, "npm runner", "gateway-runner.mjs", []string{"BERTH_ENDPOINT=" + s.URL,
		"BERTH_NAMESPACE=team-a", "RUNNER_NAME=echo", "RUNNER_TOKEN=" + s.tokens["a-runner"]})
	npm.AwaitEv("connected", soon)

	clientOf := func(token string) *client.Client {
		c, err := client.New(s.URL, client.WithToken(token), client.WithNamespace("team-a"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, err := clientOf(s.tokens["a-admin"]).Actors().Create(ctx, client.ActorCreateOptions{Name: "echo", Pool: "echo", CrashPolicy: client.CrashDestroy})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(s.URL + "/gateway/" + string(a.ActorId) + "/hello")
	if err != nil {
		t.Fatal(err)
	}
	var echo struct {
		ActorID string `json:"actorId"`
	}
	err = json.NewDecoder(resp.Body).Decode(&echo)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || echo.ActorID != string(a.ActorId) {
		t.Fatalf("gateway: %d %+v %v", resp.StatusCode, echo, err)
	}
	listed, err := clientOf(s.tokens["a-read"]).Actors().List(ctx, client.ActorListOptions{Name: "echo"})
	if err != nil || !slices.ContainsFunc(listed.Items, func(x client.Actor) bool { return x.ActorId == a.ActorId }) {
		t.Errorf("the read token lists %v, %v; want the actor", listed, err)
	}
	if _, err := clientOf(s.tokens["a-read"]).Actors().Create(ctx, client.ActorCreateOptions{Name: "echo", Pool: "echo"}); !isAPIError(err, "api", "forbidden") {
		t.Errorf("create with the read token: %v", err)
	}
	if _, err := clientOf(s.tokens["b-admin"]).Actors().List(ctx, client.ActorListOptions{Name: "echo"}); !isAPIError(err, "namespace", "not_found") {
		t.Errorf("team-b's token listing team-a: %v", err)
	}

	// The Go runner SDK with the runner token.
	rec := runnertest.NewRecorder()
	cfg := runnertest.Config(s.URL, rec)
	cfg.Name, cfg.Namespace, cfg.Token = "go-pool", "team-a", s.tokens["a-runner"]
	runnertest.Start(t, runnertest.NewRunner(t, cfg))
	if id := runnertest.Next(t, rec.Connected, "OnConnected"); id == "" {
		t.Fatal("the Go runner connected without a runner id")
	}

	// Revoked while the engine runs, the runner token no longer connects.
	s.revoke(t, "a-runner")
	eventually(t, "the revoked runner token refused", func() bool {
		code, reason := socketClose(t, s.URL, "/runners/connect?protocol_version=7&namespace=team-a&runner_key=late", s.tokens["a-runner"])
		return code == websocket.StatusPolicyViolation && strings.HasPrefix(reason, "api.forbidden#")
	})
}

func isAPIError(err error, group, code string) bool {
	var e *client.APIError
	return errors.As(err, &e) && e.Group == group && e.Code == code
}

// The dashboard with a namespace's read token: it logs in, sees that namespace only (in the
// API it reads and in the actor states), and the session ends when the token is revoked. A
// runner token cannot log in.
func TestScopedTokensOnTheDashboard(t *testing.T) {
	s := startScoped(t)
	actorA, actorB := s.actor(t, "team-a"), s.actor(t, "team-b")
	login := func(token string) (*http.Client, int) {
		jar, _ := cookiejar.New(nil)
		browser := &http.Client{Jar: jar, Timeout: 10 * time.Second}
		resp, err := browser.PostForm(s.URL+"/ui/login", url.Values{"token": {token}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return browser, resp.StatusCode
	}
	get := func(browser *http.Client, path string) (int, string) {
		resp, err := browser.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if _, status := login(s.tokens["a-runner"]); status != http.StatusForbidden {
		t.Errorf("login with a runner token: %d, want 403", status)
	}
	browser, status := login(s.tokens["a-read"])
	if status != http.StatusOK {
		t.Fatalf("login with a read token: %d", status)
	}
	if status, body := get(browser, "/ui/api/namespaces"); status != 200 || !strings.Contains(body, `"team-a"`) || strings.Contains(body, "team-b") || strings.Contains(body, `"default"`) {
		t.Errorf("namespaces through the dashboard: %d %s", status, body)
	}
	if status, body := get(browser, "/ui/actor-states?actor_ids="+actorA+","+actorB); status != 200 || !strings.Contains(body, actorA) || strings.Contains(body, actorB) {
		t.Errorf("actor states of team-a's and team-b's actors: %d %s", status, body)
	}

	s.revoke(t, "a-read")
	eventually(t, "the revoked token's session ended", func() bool {
		status, _ := get(browser, "/ui/api/namespaces")
		return status == http.StatusUnauthorized
	})
}
