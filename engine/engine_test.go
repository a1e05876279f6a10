package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/berthhq/berth/engine/config"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testConfig is the default config on loopback, random ports, in memory.
func testConfig(token string) *config.Config {
	c := config.Default()
	c.Database.URL = "mem://"
	c.Guard.Host, c.Guard.Port = "127.0.0.1", 0
	c.APIPeer.Host, c.APIPeer.Port = "127.0.0.1", 0
	c.Metrics.Host, c.Metrics.Port = "127.0.0.1", 0
	c.Auth.AdminToken = token
	return c
}

func startEngine(t *testing.T, cfg *config.Config) *Engine {
	t.Helper()
	return startEngineOpts(t, Options{Config: cfg})
}

// startEngineOpts is startEngine with opts (their Log and Build set here).
func startEngineOpts(t *testing.T, opts Options) *Engine {
	t.Helper()
	opts.Log, opts.Build = quiet, apihttp.BuildInfo{Version: "test", GitSHA: "abc", BuildTimestamp: "now", GoVersion: "go1.26"}
	e, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return e
}

type reply struct {
	status int
	header http.Header
	body   string
}

func call(t *testing.T, client *http.Client, addr net.Addr, path, token string) reply {
	t.Helper()
	return callMethod(t, client, http.MethodGet, addr, path, token)
}

func callMethod(t *testing.T, client *http.Client, method string, addr net.Addr, path, token string) reply {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr.String()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, strings.TrimSpace(string(b))}
}

func TestEngineServesBothAPIs(t *testing.T) {
	e := startEngine(t, testConfig(""))
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	for _, addr := range []net.Addr{e.PublicAddr(), e.PeerAddr()} {
		r := call(t, client, addr, "/health", "")
		if r.status != 200 || r.body != `{"status":"ok","runtime":"engine","version":"test"}` {
			t.Errorf("%s /health: %d %s", addr, r.status, r.body)
		}
		ray, err := id.Parse(r.header.Get(apihttp.HeaderRayID))
		if err != nil || ray.Label() != 1 {
			t.Errorf("%s ray id %q: %v", addr, r.header.Get(apihttp.HeaderRayID), err)
		}
		r = call(t, client, addr, "/metadata", "")
		var md apihttp.MetadataResponse
		if err := json.Unmarshal([]byte(r.body), &md); err != nil || r.status != 200 || md.Runtime != "engine" ||
			md.GitSHA != "abc" || md.EnvoyProtocolVersion != 8 || md.RunnerProtocolVersion != 7 {
			t.Errorf("%s /metadata: %d %s", addr, r.status, r.body)
		}
		r = call(t, client, addr, "/datacenters", "")
		if r.status != 200 || r.body != `{"datacenters":[{"label":1,"name":"default","url":"http://127.0.0.1:6420"}],"pagination":{"cursor":null}}` {
			t.Errorf("%s /datacenters: %d %s", addr, r.status, r.body)
		}
		r = call(t, client, addr, "/datacenters?limit=1&cursor=x", "")
		if r.status != 400 || r.header.Get(apihttp.HeaderError) != "api.bad_request" ||
			!strings.Contains(r.body, `"field":"cursor"`) || !strings.Contains(r.body, "cursor: unknown query parameter") {
			t.Errorf("%s unknown query parameter: %d %s", addr, r.status, r.body)
		}
	}
	if e.DB() == nil {
		t.Error("no store")
	}
}

func TestEngineAuth(t *testing.T) {
	e := startEngine(t, testConfig("s3cret"))
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for _, addr := range []net.Addr{e.PublicAddr(), e.PeerAddr()} {
		tests := []struct {
			path, token string
			status      int
			body        string
		}{
			{"/health", "", 200, ""},
			{"/metadata", "", 200, ""},
			{"/datacenters", "", 401, `{"group":"api","code":"unauthorized","message":"Authentication required"}`},
			{"/datacenters", "wrong", 403, `{"group":"api","code":"forbidden","message":"Access denied"}`},
			{"/datacenters", "s3cret", 200, ""},
			{"/datacenters?bogus=1", "s3cret", 400, ""},
		}
		for _, tt := range tests {
			r := call(t, client, addr, tt.path, tt.token)
			if r.status != tt.status || (tt.body != "" && r.body != tt.body) {
				t.Errorf("%s %s token %q: %d %s, want %d %s", addr, tt.path, tt.token, r.status, r.body, tt.status, tt.body)
			}
		}
	}
}

func TestEngineShutdown(t *testing.T) {
	e, err := Start(context.Background(), Options{Config: testConfig(""), Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	addr := e.PublicAddr().String()
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Shutdown", addr)
	}
}

func TestStartUndoesOnFailure(t *testing.T) {
	// Take a port, then ask the engine for it as the api-peer port: the public listener and
	// the store it opened first must be released.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg := testConfig("")
	cfg.APIPeer.Port = uint16(busy.Addr().(*net.TCPAddr).Port)
	_, err = Start(context.Background(), Options{Config: cfg, Log: quiet})
	want := fmt.Sprintf("the api-peer listener cannot bind %s: address already in use; change it with api_peer.port", busy.Addr())
	var le *ListenError
	if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &le) || le.Key != "api_peer" {
		t.Fatalf("Start = %v, want a ListenError containing %q", err, want)
	}

	bad := testConfig("")
	bad.Topology.DatacenterLabel = 9
	if _, err := Start(context.Background(), Options{Config: bad, Log: quiet}); err == nil ||
		!strings.Contains(err.Error(), "topology.datacenter_label: 9 is not the label") {
		t.Errorf("Start with a bad config = %v", err)
	}
	badDB := testConfig("")
	badDB.Database.URL = "fdb:///etc/fdb.cluster"
	if _, err := Start(context.Background(), Options{Config: badDB, Log: quiet}); err == nil || !strings.Contains(err.Error(), "open store") {
		t.Errorf("Start with an unavailable store = %v", err)
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Options{Config: testConfig(""), Log: quiet, ShutdownTimeout: time.Second}) }()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}

// TestStopAllDrains checks graceful shutdown on a slow handler: new connections are refused
// at once, the request in flight finishes; and one that outlives the deadline is cut off.
func TestStopAllDrains(t *testing.T) {
	for _, tc := range []struct {
		name     string
		finishes bool
	}{{"in-flight request finishes", true}, {"deadline cuts it off", false}} {
		t.Run(tc.name, func(t *testing.T) {
			started, release := make(chan struct{}), make(chan struct{})
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(started)
				<-release
				_, _ = io.WriteString(w, "done")
			})
			l, err := listen(context.Background(), "slow", "guard", []string{"127.0.0.1:0"}, h, limitsOf(config.Default().Guard), quiet)
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- l.serve() }()

			client := &http.Client{Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			got := make(chan string, 1)
			go func() {
				resp, err := client.Get("http://" + l.ln.Addr().String() + "/")
				if err != nil {
					got <- "error: " + err.Error()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				got <- string(b)
			}()
			<-started

			ctx, cancel := context.WithCancel(context.Background())
			stopped := make(chan error, 1)
			go func() { stopped <- stopAll(ctx, l) }()
			waitRefused(t, l.ln.Addr().String())

			if tc.finishes {
				close(release)
				if err := <-stopped; err != nil {
					t.Errorf("stopAll = %v", err)
				}
				if g := <-got; g != "done" {
					t.Errorf("in-flight request got %q", g)
				}
			} else {
				cancel() // the deadline passes with the request still running
				if err := <-stopped; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "slow: in-flight requests cut off") {
					t.Errorf("stopAll = %v", err)
				}
				if g := <-got; !strings.HasPrefix(g, "error: ") {
					t.Errorf("cut-off request got %q", g)
				}
				close(release)
			}
			cancel()
			if err := <-served; err != nil {
				t.Errorf("serve = %v", err)
			}
		})
	}
}

// waitRefused polls until addr refuses connections (the listener is closed at the start of
// shutdown).
func waitRefused(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s still accepts connections during shutdown", addr)
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:secret@db:5432/berth?sslmode=disable": "postgres://u:xxxxx@db:5432/berth?sslmode=disable",
		"file://data/berth": "file://data/berth",
		"postgres://%zz":    "(unparsable URL)",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// A connection that never began a request does not hold up Shutdown (net/http would wait
// 5 s for it: an http.Transport's spare dial looks like that).
func TestShutdownClosesIdleNewConnections(t *testing.T) {
	e, err := Start(context.Background(), Options{Config: testConfig(""), Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Dial("tcp", e.PublicAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// A request on another connection makes sure the server has accepted raw's by now.
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	call(t, client, e.PublicAddr(), "/health", "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a connection that sent nothing: %v", err)
	}
}

// TestDatacentersFollowListen starts an engine on a port other than 6420 with the default
// topology: /datacenters names the port it listens on, not the default's.
func TestDatacentersFollowListen(t *testing.T) {
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := probe.Addr().(*net.TCPAddr).Port
	probe.Close()
	cfg := testConfig("")
	cfg.Guard.Port = uint16(port)
	e := startEngine(t, cfg)
	r := call(t, http.DefaultClient, e.PublicAddr(), "/datacenters", "")
	want := fmt.Sprintf(`{"datacenters":[{"label":1,"name":"default","url":"http://127.0.0.1:%d"}],"pagination":{"cursor":null}}`, port)
	if r.status != 200 || r.body != want {
		t.Errorf("/datacenters: %d %s, want %s", r.status, r.body, want)
	}
}

// TestRootRedirectsBrowsers: a browser opening the engine's address is sent to the
// dashboard; an API client asking for / gets the API's JSON 404, as on the Rivet engine.
func TestRootRedirectsBrowsers(t *testing.T) {
	e := startEngine(t, testConfig(""))
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(method, accept string) *http.Response {
		req, err := http.NewRequest(method, "http://"+e.PublicAddr().String()+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	browser := "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		if resp := get(method, browser); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/ui" {
			t.Errorf("%s / as a browser: %d Location %q, want 302 /ui", method, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	r := call(t, http.DefaultClient, e.PublicAddr(), "/", "")
	if r.status != http.StatusNotFound || !strings.Contains(r.body, `"group":`) {
		t.Errorf("GET / as an API client: %d %s, want the JSON 404", r.status, r.body)
	}
	for _, accept := range []string{"application/json", "*/*"} {
		if resp := get(http.MethodGet, accept); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET / Accept %s: %d, want 404", accept, resp.StatusCode)
		}
	}
	if resp := get(http.MethodPost, browser); resp.StatusCode == http.StatusFound {
		t.Errorf("POST / as a browser was redirected")
	}
}
