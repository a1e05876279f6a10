package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/pkg/id"
)

// HTTP through the direct, token and header-routed forms reaches the actor with method,
// path and query byte-exact, body and headers; the gateway adds its own headers.
func TestHTTPEcho(t *testing.T) {
	e := startEngine(t)
	r := startRunner(t, e, "echo")
	a := e.createActor("echo", "http")
	r.await("actorStart", func(ev event) bool { return ev.ActorID == a.ActorID })

	body := []byte("ping\x00body\xff")
	for _, tc := range []struct{ name, target, wantPath string }{
		{"direct", "/gateway/" + a.ActorID + "/hello/world?a=1&b=x+y%20z&c=%2F&&d", "/hello/world?a=1&b=x+y%20z&c=%2F&&d"},
		{"token", "/gateway/" + a.ActorID + "@secret/t?x=1", "/t?x=1"},
		{"no rest", "/gateway/" + a.ActorID, "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("PUT", e.url+"/", bytes.NewReader(body))
			setTarget(req, tc.target)
			req.Header.Add("X-Multi", "a")
			req.Header.Add("X-Multi", "b")
			req.Header.Set("X-Custom", "Value With Spaces")
			req.Header.Set("Origin", "https://app.example")
			resp, b := e.do(req)
			got := decodeEcho(t, resp, b)
			if got.ActorID != a.ActorID || got.Method != "PUT" || got.Path != tc.wantPath || !bytes.Equal(got.Body, body) {
				t.Fatalf("echo %+v, want PUT %s with the body", got, tc.wantPath)
			}
			if got.Headers["x-multi"] != "a, b" || got.Headers["x-custom"] != "Value With Spaces" || got.Headers["x-forwarded-for"] != "127.0.0.1" {
				t.Fatalf("headers the actor saw: %v", got.Headers)
			}
			if resp.Header.Get("X-Rivet-Ray-Id") == "" || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
				resp.Header.Get("Access-Control-Allow-Credentials") != "true" || resp.Header.Get("Access-Control-Expose-Headers") != "*" {
				t.Fatalf("gateway headers %v", resp.Header)
			}
		})
	}

	t.Run("header routing", func(t *testing.T) {
		resp, b := e.get("/request/sub?q=%20x", http.Header{"X-Rivet-Target": {"actor"}, "X-Rivet-Actor": {a.ActorID}, "X-Rivet-Token": {"t"}})
		got := decodeEcho(t, resp, b)
		if got.ActorID != a.ActorID || got.Path != "/request/sub?q=%20x" {
			t.Fatalf("echo %+v", got)
		}
		for h := range got.Headers {
			if h == "x-rivet-target" || h == "x-rivet-actor" || h == "x-rivet-token" {
				t.Fatalf("routing header %s reached the actor", h)
			}
		}
		resp, b = e.get("/request", http.Header{"X-Rivet-Target": {"actor"}, "X-Rivet-Actor": {a.ActorID}, "X-Rivet-Skip-Ready-Wait": {"1"}})
		if got := decodeEcho(t, resp, b); got.Path != "/request" {
			t.Fatalf("echo %+v", got)
		}
	})

	t.Run("preflight", func(t *testing.T) {
		req, _ := http.NewRequest("OPTIONS", e.url+"/gateway/"+a.ActorID+"/x", nil)
		req.Header.Set("Origin", "https://app.example")
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "x-rivet-encoding")
		resp, _ := e.do(req)
		if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Headers") != "x-rivet-encoding" ||
			resp.Header.Get("Access-Control-Max-Age") != "86400" || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
			t.Fatalf("preflight %d %v", resp.StatusCode, resp.Header)
		}
	})

	t.Run("routing errors", func(t *testing.T) {
		for _, tc := range []struct {
			name, target string
			header       http.Header
			status       int
			errKey       string
		}{
			{"actor target on another path", "/echo", http.Header{"X-Rivet-Target": {"actor"}, "X-Rivet-Actor": {a.ActorID}}, 404, "guard.no_route"},
			{"unknown target", "/anything", http.Header{"X-Rivet-Target": {"nope"}}, 404, "guard.no_route"},
			{"missing x-rivet-actor", "/request", http.Header{"X-Rivet-Target": {"actor"}}, 400, "guard.missing_header"},
			{"bad x-rivet-actor", "/request", http.Header{"X-Rivet-Target": {"actor"}, "X-Rivet-Actor": {"zz"}}, 400, "api.bad_request"},
			{"bad skip-ready-wait", "/request", http.Header{"X-Rivet-Target": {"actor"}, "X-Rivet-Actor": {a.ActorID}, "X-Rivet-Skip-Ready-Wait": {"yes"}}, 400, "guard.invalid_header"},
			{"bad skip-ready-wait on a path", "/gateway/" + a.ActorID + "/x", http.Header{"X-Rivet-Skip-Ready-Wait": {"maybe"}}, 400, "guard.invalid_header"},
			{"malformed id", "/gateway/not-an-id/x", nil, 400, "api.bad_request"},
			{"unknown actor", "/gateway/" + id.New(1).String() + "/x", nil, 404, "actor.not_found"},
		} {
			resp, b := e.get(tc.target, tc.header)
			if resp.StatusCode != tc.status || resp.Header.Get("X-Rivet-Error") != tc.errKey {
				t.Errorf("%s: %d %q %s, want %d %s", tc.name, resp.StatusCode, resp.Header.Get("X-Rivet-Error"), b, tc.status, tc.errKey)
			}
		}
		// No target and no route: the public API's own 404.
		if resp, b := e.get("/no/such/route", nil); resp.StatusCode != 404 || !strings.Contains(string(b), `"not_found"`) {
			t.Errorf("unknown path without a target: %d %s", resp.StatusCode, b)
		}
	})
}

// WebSockets through the path, header (subprotocol) and query forms echo text and binary.
func TestWebSocketEcho(t *testing.T) {
	e := startEngine(t)
	r := startRunner(t, e, "echo")
	a := e.createActor("echo", "ws")
	r.await("actorStart", func(ev event) bool { return ev.ActorID == a.ActorID })
	ws := "ws" + strings.TrimPrefix(e.url, "http")
	ctx, cancel := context.WithTimeout(context.Background(), soon)
	defer cancel()
	for _, tc := range []struct {
		name, url, wantPath string
		protocols           []string
		wantRivet           bool
	}{
		{"path", ws + "/gateway/" + a.ActorID + "/connect?x=1", "/connect?x=1", []string{"rivet", "rivet_encoding.json"}, true},
		{"path, no rivet offered", ws + "/gateway/" + a.ActorID + "/plain", "/plain", nil, false},
		{"subprotocol target", ws + "/any/path?y=2", "/any/path?y=2", []string{"rivet", "rivet_target.actor", "rivet_actor." + url.QueryEscape(a.ActorID), "rivet_skip_ready_wait"}, true},
		{"query", ws + "/gateway/echo/q?rvt-namespace=default&rvt-method=get&rvt-key=ws", "/q", []string{"rivet"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, resp, err := websocket.Dial(ctx, tc.url, &websocket.DialOptions{Subprotocols: tc.protocols})
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.CloseNow()
			if got := resp.Header.Get("Sec-WebSocket-Protocol"); (got == "rivet") != tc.wantRivet || (!tc.wantRivet && got != "") {
				t.Fatalf("subprotocol %q", got)
			}
			if ev := r.await("wsOpen", func(ev event) bool { return ev.ActorID == a.ActorID }); ev.Path != tc.wantPath {
				t.Fatalf("actor saw path %q, want %q", ev.Path, tc.wantPath)
			}
			for _, m := range []struct {
				typ  websocket.MessageType
				data []byte
			}{{websocket.MessageText, []byte("hi-text")}, {websocket.MessageBinary, []byte{0, 1, 2, 0xff}}} {
				if err := c.Write(ctx, m.typ, m.data); err != nil {
					t.Fatal(err)
				}
				typ, data, err := c.Read(ctx)
				if err != nil || typ != m.typ || !bytes.Equal(data, m.data) {
					t.Fatalf("echo of %q: %v %q %v", m.data, typ, data, err)
				}
			}
			_ = c.Close(websocket.StatusNormalClosure, "bye")
		})
	}
	// A WebSocket that cannot be routed is accepted and closed with the error.
	c, _, err := websocket.Dial(ctx, ws+"/gateway/echo/x?rvt-namespace=default&rvt-method=get&rvt-key=nobody", &websocket.DialOptions{Subprotocols: []string{"rivet"}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusInternalError || !strings.HasPrefix(ce.Reason, "actor.not_found#") {
		t.Fatalf("unrouted WebSocket: %v", err)
	}
}

// Query routing gets or creates the actor by key, with input, and keeps the actor's own
// query parameters byte-exact.
func TestQueryRouting(t *testing.T) {
	e := startEngine(t)
	r := startRunner(t, e, "echo")
	input := []byte{0xa1, 0x61, 'n', 0x18, 42} // CBOR {"n": 42}
	in := base64.RawURLEncoding.EncodeToString(input)
	target := "/gateway/echo/p/q?a=%2B1&rvt-namespace=default&rvt-method=getOrCreate&rvt-pool=echo&rvt-key=a%2Fb,,c" +
		"&rvt-input=" + in + "&rvt-crash-policy=destroy&rvt-region=default&b=x+y"
	resp, b := e.get(target, nil)
	got := decodeEcho(t, resp, b)
	if got.Path != "/p/q?a=%2B1&b=x+y" {
		t.Fatalf("actor saw %q", got.Path)
	}
	start := r.await("actorStart", func(ev event) bool { return ev.ActorID == got.ActorID })
	if start.Name != "echo" || start.Key == nil || *start.Key != `a\/b/\0/c` || start.Input == nil || *start.Input != base64.StdEncoding.EncodeToString(input) {
		t.Fatalf("actor started as %+v", start)
	}
	if a := e.actor(got.ActorID); a.Key == nil || *a.Key != `a\/b/\0/c` {
		t.Fatalf("actor listed as %+v", a)
	}
	// The same key again, by getOrCreate and by get: the same actor.
	for _, tg := range []string{
		"/gateway/echo?rvt-namespace=default&rvt-method=getOrCreate&rvt-runner=echo&rvt-key=a%2Fb,,c",
		"/gateway/echo/x?rvt-method=get&rvt-namespace=default&rvt-key=a%2Fb%2C%2Cc",
	} {
		resp, b := e.get(tg, nil)
		if again := decodeEcho(t, resp, b); again.ActorID != got.ActorID {
			t.Fatalf("%s reached %s, want %s", tg, again.ActorID, got.ActorID)
		}
	}
	// No key: the key "/".
	resp, b = e.get("/gateway/echo?rvt-namespace=default&rvt-method=getOrCreate&rvt-pool=echo", nil)
	nokey := decodeEcho(t, resp, b)
	if a := e.actor(nokey.ActorID); a.Key == nil || *a.Key != "/" || nokey.ActorID == got.ActorID {
		t.Fatalf("keyless actor %+v", a)
	}
}

// Every rvt-* rule answers its error, with x-rivet-error and no actor reached.
func TestQueryErrors(t *testing.T) {
	e := startEngine(t)
	startRunner(t, e, "echo")
	const ns = "rvt-namespace=default"
	b64 := base64.RawURLEncoding.EncodeToString
	for _, tc := range []struct {
		target string
		status int
		errKey string
	}{
		{"/gateway/?" + ns + "&rvt-method=get", 400, "guard.query_empty_actor_name"},
		{"/gateway/echo@tok/x?" + ns + "&rvt-method=get", 400, "guard.query_path_token_syntax"},
		{"/gateway/%ff?" + ns + "&rvt-method=get", 400, "guard.query_invalid_percent_encoding"},
		{"/gateway/echo?" + ns + "&rvt-method=get&rvt-key=%ff", 400, "guard.query_invalid_percent_encoding"},
		{"/gateway/echo?" + ns + "&rvt-method=get&rvt-method=get", 400, "guard.query_duplicate_param"},
		{"/gateway/echo?" + ns + "&rvt-method=get&rvt-bogus=1", 400, "guard.query_invalid_params"},
		{"/gateway/echo?rvt-method=get", 400, "guard.query_invalid_params"},
		{"/gateway/echo?" + ns, 400, "guard.query_invalid_params"},
		{"/gateway/echo?" + ns + "&rvt-method=list", 400, "guard.query_invalid_params"},
		{"/gateway/echo?" + ns + "&rvt-method=get&rvt-skip-ready-wait=yes", 400, "guard.query_invalid_params"},
		{"/gateway/echo?" + ns + "&rvt-method=get&rvt-input=" + b64([]byte{1}), 400, "guard.query_get_disallowed_params"},
		{"/gateway/echo?" + ns + "&rvt-method=get&rvt-region=default", 400, "guard.query_get_disallowed_params"},
		{"/gateway/echo?" + ns + "&rvt-method=get&rvt-crash-policy=sleep", 400, "guard.query_get_disallowed_params"},
		{"/gateway/echo?" + ns + "&rvt-method=get&rvt-runner=echo", 400, "guard.query_get_disallowed_params"},
		{"/gateway/echo?" + ns + "&rvt-method=getOrCreate&rvt-key=k", 400, "guard.query_missing_pool"},
		{"/gateway/echo?" + ns + "&rvt-method=getOrCreate&rvt-pool=echo&rvt-input=AQ==", 400, "guard.query_invalid_base64_input"},
		{"/gateway/echo?" + ns + "&rvt-method=getOrCreate&rvt-pool=echo&rvt-input=" + b64([]byte{0x62, 'a'}), 400, "guard.query_invalid_cbor_input"},
		{"/gateway/echo?" + ns + "&rvt-method=getOrCreate&rvt-pool=echo&rvt-crash-policy=never", 400, "guard.query_invalid_params"},
		{"/gateway/echo?" + ns + "&rvt-method=getOrCreate&rvt-pool=echo&rvt-region=mars", 404, "datacenter.not_found"},
		{"/gateway/echo?rvt-namespace=nowhere&rvt-method=get", 404, "namespace.not_found"},
		{"/gateway/echo?" + ns + "&rvt-method=get&rvt-key=nobody", 404, "actor.not_found"},
		{"/gateway/echo?" + ns + "&rvt-method=getOrCreate&rvt-pool=nopool&rvt-key=k", 400, "actor.no_runner_config_configured"},
	} {
		resp, b := e.get(tc.target, nil)
		if resp.StatusCode != tc.status || resp.Header.Get("X-Rivet-Error") != tc.errKey || resp.Header.Get("X-Echo") != "" {
			t.Errorf("%s: %d %q %s, want %d %s", tc.target, resp.StatusCode, resp.Header.Get("X-Rivet-Error"), b, tc.status, tc.errKey)
			continue
		}
		var body struct{ Group, Code string }
		if err := json.Unmarshal(b, &body); err != nil || body.Group+"."+body.Code != tc.errKey {
			t.Errorf("%s: body %s", tc.target, b)
		}
	}
}

// An actor put to sleep through a request is woken by the next one, as a new generation.
func TestSleepAndWake(t *testing.T) {
	e := startEngine(t)
	r := startRunner(t, e, "echo")
	a := e.createActor("echo", "sleepy")
	first := r.await("actorStart", func(ev event) bool { return ev.ActorID == a.ActorID })
	base := "/gateway/" + a.ActorID
	if resp, b := e.get(base+"/sleep", nil); resp.StatusCode != 200 || string(b) != "sleeping" {
		t.Fatalf("/sleep: %d %s", resp.StatusCode, b)
	}
	r.await("actorStop", func(ev event) bool { return ev.ActorID == a.ActorID && ev.Generation == first.Generation })
	deadline := time.Now().Add(soon)
	for e.actor(a.ActorID).SleepTs == nil {
		if time.Now().After(deadline) {
			t.Fatal("actor not asleep after its stop")
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	resp, b := e.get(base+"/again?z=1", nil)
	got := decodeEcho(t, resp, b)
	if got.Path != "/again?z=1" || got.Generation != first.Generation+1 {
		t.Fatalf("after sleep: %+v (first generation %d)", got, first.Generation)
	}
	r.await("actorStart", func(ev event) bool { return ev.ActorID == a.ActorID && ev.Generation == first.Generation+1 })
}

// Requests keep succeeding while the actor moves from a drained runner to another one.
func TestRetriesWhileActorMoves(t *testing.T) {
	e := startEngine(t)
	r1 := startRunner(t, e, "echo")
	a := e.createActor("echo", "mover")
	r1.await("actorStart", func(ev event) bool { return ev.ActorID == a.ActorID })
	r2 := startRunner(t, e, "echo")

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	var served, servedByR2 atomic.Int64
	for range 4 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				req, _ := http.NewRequest("POST", e.url+"/gateway/"+a.ActorID+"/n", strings.NewReader("x"))
				resp, err := e.client.Do(req)
				if err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
					return
				}
				var got echo
				err = json.NewDecoder(resp.Body).Decode(&got)
				resp.Body.Close()
				if resp.StatusCode != 200 || err != nil {
					mu.Lock()
					failures = append(failures, resp.Status+" "+resp.Header.Get("X-Rivet-Error"))
					mu.Unlock()
					continue
				}
				served.Add(1)
				if got.RunnerID == r2.runnerID {
					servedByR2.Add(1)
				}
			}
		})
	}
	waitFor(t, "requests served by the first runner", func() bool { return served.Load() >= 20 })
	e.apiJSON("POST", "/runners/"+r1.runnerID+"/drain?namespace=default", nil, nil)
	r2.await("actorStart", func(ev event) bool { return ev.ActorID == a.ActorID })
	waitFor(t, "requests served by the second runner", func() bool { return servedByR2.Load() >= 20 })
	cancel()
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d requests failed while the actor moved: %v", len(failures), int(served.Load())+len(failures), failures)
	}
}

// waitFor polls cond every 10 ms until it holds, failing after soon.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(soon)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, soon)
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
}
