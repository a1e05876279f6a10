package apihttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
)

// logBuffer collects JSON log lines; safe for concurrent handlers.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(l.buf.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func newTestEcho(t *testing.T, opts Options) (*echo.Echo, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	opts.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return New(opts), logs
}

type response struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, h http.Handler, method, target string, header ...string) response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return response{w.Code, w.Header(), w.Body.String()}
}

func TestErrorHandler(t *testing.T) {
	e, logs := newTestEcho(t, Options{DatacenterLabel: 3})
	secret := errors.New("disk on fire at /var/lib/secret")
	e.GET("/rerr", func(c echo.Context) error { return rerr.NamespaceNotFound("nope") })
	e.GET("/wrapped", func(c echo.Context) error {
		return errors.Join(errors.New("context"), rerr.BadRequest("limit", "too big"))
	})
	e.GET("/plain", func(c echo.Context) error { return secret })
	e.GET("/internal", func(c echo.Context) error { return rerr.Internal(secret) })
	e.GET("/corrupt", func(c echo.Context) error { return rerr.Corrupt("RunnerKey", "3 bytes") })
	e.GET("/panic", func(c echo.Context) error { panic("boom") })
	e.GET("/echo400", func(c echo.Context) error { return echo.NewHTTPError(http.StatusBadRequest, "bad thing") })
	e.GET("/committed", func(c echo.Context) error {
		_ = c.String(http.StatusOK, "partial")
		return secret
	})
	e.POST("/only-post", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })

	tests := []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/rerr", 404, `{"group":"namespace","code":"not_found","message":"Namespace 'nope' does not exist.","metadata":{"namespace":"nope"}}`},
		{"GET", "/wrapped", 400, `{"group":"api","code":"bad_request","message":"Request is invalid: limit: too big","metadata":{"field":"limit","reason":"limit: too big"}}`},
		{"GET", "/plain", 500, `{"group":"core","code":"internal_error","message":"An internal error occurred"}`},
		{"GET", "/internal", 500, `{"group":"core","code":"internal_error","message":"An internal error occurred"}`},
		{"GET", "/corrupt", 500, `{"group":"core","code":"internal_error","message":"An internal error occurred"}`},
		{"GET", "/panic", 500, `{"group":"core","code":"internal_error","message":"An internal error occurred"}`},
		{"GET", "/echo400", 400, `{"group":"api","code":"bad_request","message":"Request is invalid: bad thing","metadata":{"reason":"bad thing"}}`},
		{"GET", "/no/such/route", 404, `{"group":"api","code":"not_found","message":"The requested resource was not found"}`},
		{"GET", "/only-post", 405, `{"group":"api","code":"method_not_allowed","message":"Method not allowed"}`},
		{"GET", "/committed", 200, `partial`},
		{"HEAD", "/no/such/route", 404, ``},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.path, func(t *testing.T) {
			r := do(t, e, tt.method, tt.path)
			if r.status != tt.status || r.body != tt.body {
				t.Errorf("got %d %s\nwant %d %s", r.status, r.body, tt.status, tt.body)
			}
			if tt.status >= 400 && tt.path != "/committed" {
				if ct := r.header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q", ct)
				}
				var w struct{ Group, Code string }
				if tt.body != "" {
					_ = json.Unmarshal([]byte(tt.body), &w)
					if got := r.header.Get(HeaderError); got != w.Group+"."+w.Code {
						t.Errorf("%s = %q", HeaderError, got)
					}
				}
			}
			ray := r.header.Get(HeaderRayID)
			rid, err := id.Parse(ray)
			if err != nil || rid.Label() != 3 {
				t.Errorf("ray id %q: %v (label %d)", ray, err, rid.Label())
			}
			if strings.Contains(r.body, "secret") || strings.Contains(r.body, "boom") {
				t.Errorf("the cause leaked to the client: %s", r.body)
			}
		})
	}
	if got := do(t, e, "GET", "/only-post").header.Get("Allow"); !strings.Contains(got, "POST") {
		t.Errorf("405 Allow = %q", got)
	}

	// Each failed request is logged once by the error handler, with its ray id and full cause.
	logs.buf.Reset()
	r := do(t, e, "GET", "/plain")
	var failed []map[string]any
	for _, l := range logs.lines(t) {
		if l["msg"] == "request failed" {
			failed = append(failed, l)
		}
	}
	if len(failed) != 1 {
		t.Fatalf("got %d 'request failed' lines, want 1: %v", len(failed), failed)
	}
	l := failed[0]
	if l["level"] != "ERROR" || l["ray_id"] != r.header.Get(HeaderRayID) || l["error_key"] != "core.internal_error" ||
		!strings.Contains(l["error"].(string), "disk on fire") || l["status"] != float64(500) {
		t.Errorf("log line = %v", l)
	}
}

func TestRayIDInContext(t *testing.T) {
	e, logs := newTestEcho(t, Options{})
	var seen string
	e.GET("/x", func(c echo.Context) error {
		ctx := c.Request().Context()
		seen = RayID(ctx)
		Logger(ctx).Info("inside")
		return c.NoContent(http.StatusNoContent)
	})
	r1 := do(t, e, "GET", "/x")
	if seen == "" || seen != r1.header.Get(HeaderRayID) {
		t.Fatalf("RayID in handler = %q, header %q", seen, r1.header.Get(HeaderRayID))
	}
	if r2 := do(t, e, "GET", "/x"); r2.header.Get(HeaderRayID) == r1.header.Get(HeaderRayID) {
		t.Errorf("two requests share ray id %q", seen)
	}
	found := false
	for _, l := range logs.lines(t) {
		if l["msg"] == "inside" && l["ray_id"] == r1.header.Get(HeaderRayID) {
			found = true
		}
	}
	if !found {
		t.Errorf("handler log line lacks the ray id: %v", logs.lines(t))
	}
}

func TestBearerAuth(t *testing.T) {
	var token string
	var hasToken bool
	handler := func(c echo.Context) error {
		token, hasToken = Token(c.Request().Context())
		return c.JSON(http.StatusOK, map[string]string{"ok": "yes"})
	}
	e, _ := newTestEcho(t, Options{Auth: auth.Admin("s3cret")})
	for _, p := range []string{"/health", "/metadata", "/datacenters"} {
		e.GET(p, handler)
	}
	tests := []struct {
		name, path, auth string
		status           int
		code             string
	}{
		{"health open", "/health", "", 200, ""},
		{"metadata open", "/metadata", "", 200, ""},
		{"missing", "/datacenters", "", 401, "api.unauthorized"},
		{"empty bearer", "/datacenters", "Bearer ", 401, "api.unauthorized"},
		{"other scheme", "/datacenters", "Basic czNjcmV0", 401, "api.unauthorized"},
		{"wrong", "/datacenters", "Bearer nope", 403, "api.forbidden"},
		{"prefix of token", "/datacenters", "Bearer s3cre", 403, "api.forbidden"},
		{"right", "/datacenters", "Bearer s3cret", 200, ""},
		{"scheme case", "/datacenters", "bearer s3cret", 200, ""},
		{"unknown route needs a token first", "/nope", "", 401, "api.unauthorized"},
		{"unknown route with token", "/nope", "Bearer s3cret", 404, "api.not_found"},
		{"trailing slash is not public", "/health/", "", 401, "api.unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.auth != "" {
				hdr = []string{"Authorization", tt.auth}
			}
			r := do(t, e, "GET", tt.path, hdr...)
			if r.status != tt.status || (tt.code != "" && r.header.Get(HeaderError) != tt.code) {
				t.Errorf("got %d %s, want %d %s", r.status, r.body, tt.status, tt.code)
			}
			if tt.status == 401 && r.header.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("401 without WWW-Authenticate: %v", r.header)
			}
		})
	}

	// Without an admin token everything is open, and a presented token is kept for forwarding.
	open, _ := newTestEcho(t, Options{})
	open.GET("/datacenters", handler)
	if r := do(t, open, "GET", "/datacenters"); r.status != 200 || hasToken {
		t.Errorf("open API: %d, token %q %v", r.status, token, hasToken)
	}
	if r := do(t, open, "GET", "/datacenters", "Authorization", "Bearer abc"); r.status != 200 || token != "abc" {
		t.Errorf("open API with token: %d, token %q", r.status, token)
	}
}

func TestCommonHandlers(t *testing.T) {
	e, _ := newTestEcho(t, Options{})
	b := BuildInfo{Version: "1.2.3", GitSHA: "abc", BuildTimestamp: "2026-01-01T00:00:00Z", GoVersion: "go1.26"}
	topo := Topology{Local: 2, Datacenters: []Datacenter{
		{Name: "b", Label: 2, PublicURL: "http://b"},
		{Name: "a", Label: 1, IsLeader: true, PublicURL: "http://a"},
	}}
	e.GET("/health", HealthHandler(b))
	e.GET("/metadata", MetadataHandler(b))
	e.GET("/datacenters", DatacentersHandler(topo))
	tests := []struct{ path, body string }{
		{"/health", `{"status":"ok","runtime":"engine","version":"1.2.3"}`},
		{"/metadata", `{"runtime":"engine","version":"1.2.3","git_sha":"abc","build_timestamp":"2026-01-01T00:00:00Z","go_version":"go1.26","envoy_protocol_version":8,"runner_protocol_version":7}`},
		{"/datacenters", `{"datacenters":[{"label":1,"name":"a","url":"http://a"},{"label":2,"name":"b","url":"http://b"}],"pagination":{"cursor":null}}`},
	}
	for _, tt := range tests {
		r := do(t, e, "GET", tt.path)
		if r.status != 200 || strings.TrimSpace(r.body) != tt.body {
			t.Errorf("%s: %d %s\nwant %s", tt.path, r.status, r.body, tt.body)
		}
	}
	r := do(t, e, "GET", "/datacenters?limit=5")
	if r.status != 400 || !strings.Contains(r.body, `"field":"limit"`) {
		t.Errorf("unknown param: %d %s", r.status, r.body)
	}
}

func TestClientWentAway(t *testing.T) {
	e, logs := newTestEcho(t, Options{})
	started := make(chan struct{})
	e.GET("/slow", func(c echo.Context) error {
		close(started)
		<-c.Request().Context().Done()
		return c.Request().Context().Err()
	})
	srv := httptest.NewServer(e)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/slow", nil)
	done := make(chan error, 1)
	go func() {
		resp, err := srv.Client().Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		done <- err
	}()
	<-started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("client error = %v", err)
	}
	srv.Close() // waits for the handler to return
	for _, l := range logs.lines(t) {
		if l["level"] == "ERROR" {
			t.Errorf("a client that went away is not an error: %v", l)
		}
	}
}

// A namespace token's request is kept to its namespace: a route that takes one gets the
// token's when the query names none (the rest of the query untouched), another is
// namespace.not_found, and the routes without a namespace are left as they are.
func TestScopedNamespace(t *testing.T) {
	tok := auth.NewToken()
	file := filepath.Join(t.TempDir(), "tokens.json")
	if err := auth.WriteFile(file, auth.File{Tokens: []auth.Entry{{ID: "a", Namespace: "team-a", Role: auth.RoleAdmin, SHA256: auth.Hash(tok)}}}); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(auth.Options{AdminToken: "admin", TokensFile: file})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := newTestEcho(t, Options{Auth: a})
	seen := func(c echo.Context) error {
		g := auth.FromContext(c.Request().Context())
		return c.String(http.StatusOK, g.Namespace+"|"+c.Request().URL.RawQuery)
	}
	e.GET("/actors", seen)
	e.GET("/namespaces", seen)
	for _, tc := range []struct {
		target string
		status int
		body   string
	}{
		{"/actors", 200, "team-a|namespace=team-a"},
		{"/actors?name=x%2Fy&limit=2", 200, "team-a|name=x%2Fy&limit=2&namespace=team-a"},
		{"/actors?namespace=team-a", 200, "team-a|namespace=team-a"},
		{"/actors?namespace=team-b", 404, `"code":"not_found"`},
		{"/actors?namespace=team-a&namespace=default", 404, `"code":"not_found"`},
		{"/namespaces", 200, "team-a|"},
	} {
		got := do(t, e, http.MethodGet, tc.target, "Authorization", "Bearer "+tok)
		if got.status != tc.status || !strings.Contains(got.body, tc.body) {
			t.Errorf("GET %s: %d %s, want %d %s", tc.target, got.status, got.body, tc.status, tc.body)
		}
	}
}
