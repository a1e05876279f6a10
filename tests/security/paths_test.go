package security

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/berthhq/berth/sdk/runner"
	"github.com/berthhq/berth/sdk/runner/runnertest"
	"github.com/berthhq/berth/tests/internal/harness"
)

// pathActor answers every request with its own id and the request-target it was given, and
// counts the requests of each actor in hits.
type pathActor struct {
	ac   *runner.ActorContext
	hits *pathHits
}

type pathHits struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *pathHits) of(aid string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[aid]
}

func (a *pathActor) Start(_ context.Context, ac *runner.ActorContext) error { a.ac = ac; return nil }
func (a *pathActor) Stop(context.Context, *runner.ActorContext) error       { return nil }

func (a *pathActor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.hits.mu.Lock()
	a.hits.n[a.ac.ID()]++
	a.hits.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"actor": a.ac.ID(), "uri": r.RequestURI})
}

// Paths with traversal and odd escapes in /gateway/...: a trick in the part that names the
// actor gets a JSON 4xx and reaches no actor and no other route; a trick after a valid actor
// id reaches that actor only, with its path exactly as sent.
func TestGatewayPathTricks(t *testing.T) {
	e := startLimited(t, nil)
	hits := &pathHits{n: map[string]int{}}
	cfg := runnertest.Config(e.URL, nil)
	cfg.Actors = map[string]func() runner.Actor{"paths": func() runner.Actor { return &pathActor{hits: hits} }}
	r := runnertest.NewRunner(t, cfg)
	runnertest.Start(t, r)
	a, b := createPaths(t, e), createPaths(t, e)
	addr := hostPort(e)

	refused := []struct{ name, target, header string }{
		{"dot-dot", "/gateway/../actors?namespace=default", ""},
		{"encoded dot-dot", "/gateway/%2e%2e/actors?namespace=default", ""},
		{"encoded dot-dot and slash", "/gateway/%2E%2E%2Factors?namespace=default", ""},
		{"dot-dot, encoded slash", "/gateway/..%2factors?namespace=default", ""},
		{"encoded slash to another actor", "/gateway/" + a + "%2F..%2F" + b + "/x", ""},
		{"encoded slash to the API", "/gateway/" + a + "%2f..%2f..%2factors?namespace=default", ""},
		{"double encoding", "/gateway/%252e%252e/actors?namespace=default", ""},
		{"double-encoded slash", "/gateway/" + a + "%252F..%252F" + b + "/x", ""},
		{"encoded backslash", "/gateway/" + a + "%5c..%5c" + b + "/x", ""},
		{"encoded NUL", "/gateway/%00/x", ""},
		{"encoded NUL after the id", "/gateway/" + a + "%00/x", ""},
		{"raw NUL", "/gateway/\x00/x", ""},
		{"raw NUL after the id", "/gateway/" + a + "\x00/x", ""},
		{"overlong dot-dot", "/gateway/%c0%ae%c0%ae/actors?namespace=default", ""},
		{"overlong slash", "/gateway/" + a + "%c0%af..%c0%af" + b + "/x", ""},
		{"single dot", "/gateway/./" + a + "/x", ""},
		{"empty segment", "/gateway//" + a + "/x", ""},
		{"encoded prefix", "/%67ateway/" + a + "/x", ""},
		{"query routing by an id", "/gateway/" + a + "/x?rvt-namespace=default&rvt-method=get", ""},
		{"header routing, encoded slash", "/request/x", "X-Rivet-Target: actor\r\nX-Rivet-Actor: " + a + "%2F..%2F" + b},
		{"header routing, dot-dot", "/request/x", "X-Rivet-Target: actor\r\nX-Rivet-Actor: ../" + b},
		{"header routing off /request", "/actors?namespace=default", "X-Rivet-Target: actor\r\nX-Rivet-Actor: " + a},
	}
	reached := []struct{ name, target, header, uri string }{
		{"dot-dot after the id", "/gateway/" + a + "/../" + b + "/x", "", "/../" + b + "/x"},
		{"encoded dot-dot after the id", "/gateway/" + a + "/%2e%2e/%2e%2e/actors", "", "/%2e%2e/%2e%2e/actors"},
		{"encoded NUL after the id's slash", "/gateway/" + a + "/%00", "", "/%00"},
		{"overlong after the id", "/gateway/" + a + "/%c0%ae%c0%ae/", "", "/%c0%ae%c0%ae/"},
		{"token with an encoded slash", "/gateway/" + a + "@t%2F..%2F" + b + "/x", "", "/x"},
		{"header routing, dot-dot in the path", "/request/../" + b, "X-Rivet-Target: actor\r\nX-Rivet-Actor: " + a, "/request/../" + b},
	}
	get := func(target, header string) answer {
		if header != "" {
			header += "\r\n"
		}
		return exchange(addr, "GET "+target+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"+header+"\r\n")
	}
	bypasses := 0
	for _, c := range refused {
		ans := get(c.target, c.header)
		if ans.status < 400 || ans.status > 499 || ans.errorKey() == "" {
			bypasses++
			t.Errorf("%s (%q): %v, want a JSON 4xx", c.name, c.target, ans)
		}
	}
	for _, c := range reached {
		ans := get(c.target, c.header)
		var got struct{ Actor, URI string }
		if ans.status != 200 || json.Unmarshal(ans.body, &got) != nil || got.Actor != a || got.URI != c.uri {
			bypasses++
			t.Errorf("%s (%q): %v, want actor %s with %q", c.name, c.target, ans, a, c.uri)
		}
	}
	if n := hits.of(b); n != 0 {
		bypasses++
		t.Errorf("the other actor got %d requests; no path named it", n)
	}
	if n := hits.of(a); n != len(reached) {
		t.Errorf("the actor got %d requests, want %d", n, len(reached))
	}
	healthy(t, e)
	t.Logf("figure: gateway path tricks: %d attempts (%d naming the actor oddly: JSON 4xx; %d odd after a valid id: that actor only, path as sent), %d bypasses, 0 crashes",
		len(refused)+len(reached), len(refused), len(reached), bypasses)
}

// createPaths creates an actor "paths" of the pool "pool" and returns its id.
func createPaths(t *testing.T, e *harness.Engine) string {
	t.Helper()
	var out struct {
		Actor struct {
			ActorID string `json:"actor_id"`
		} `json:"actor"`
	}
	e.CallJSON(t, http.MethodPost, "/actors?namespace=default",
		map[string]any{"name": "paths", "runner_name_selector": "pool", "crash_policy": "destroy"}, &out)
	if strings.TrimSpace(out.Actor.ActorID) == "" {
		t.Fatal("no actor id")
	}
	return out.Actor.ActorID
}
