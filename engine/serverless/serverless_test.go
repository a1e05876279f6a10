package serverless

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/outbound"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded" // mem://
)

var loopback = outbound.Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}

func fetcher(p outbound.Policy) Fetcher {
	return Fetcher{Client: outbound.NewClient(outbound.Options{Policy: p}), Policy: p, UserAgent: "berth/test"}
}

const envoyMeta = `{"actorNames":{"counter":{"metadata":{}}},"envoy":{"kind":{"serverless":{}},"version":1},"envoyProtocolVersion":8,"runtime":"rivetkit","version":"2.3.19"}`

// endpoint answers /metadata with status and body, and counts calls.
func endpoint(t *testing.T, status int, body string) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/rivet/metadata" {
			http.NotFound(w, r)
			return
		}
		n.Add(1)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func check(t *testing.T, f Fetcher, url string, headers map[string]string) string {
	t.Helper()
	b, err := json.Marshal(f.HealthCheck(context.Background(), url, headers))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHealthCheck(t *testing.T) {
	f := fetcher(loopback)
	ok, _ := endpoint(t, 200, envoyMeta)
	if got := check(t, f, " "+ok.URL+"/api/rivet/ ", nil); got != `{"success":{"version":"2.3.19"}}` {
		t.Errorf("rivetkit 2.3.19: %s", got)
	}
	runner, _ := endpoint(t, 200, `{"runtime":"rivetkit","version":"2.2.1","runner":{"kind":{"serverless":{}},"version":1}}`)
	if got := check(t, f, runner.URL+"/api/rivet", nil); got != `{"success":{"version":"2.2.1"}}` {
		t.Errorf("rivetkit 2.2.1: %s", got)
	}
	boom, _ := endpoint(t, 500, "boom")
	notJSON, _ := endpoint(t, 200, "not json")
	other, _ := endpoint(t, 200, `{"runtime":"other","version":"1.0.0"}`)
	v99, _ := endpoint(t, 200, `{"runtime":"rivetkit","version":"9","envoyProtocolVersion":99}`)
	long, _ := endpoint(t, 503, strings.Repeat("é", 1500))
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	for _, tc := range []struct {
		name, url string
		headers   map[string]string
		want      string
	}{
		{"500", boom.URL + "/api/rivet", nil, `{"failure":{"error":{"message":"serverless metadata request returned status 500","metadata":{"body":"boom","kind":"non_success_status","status_code":500}}}}`},
		{"not json", notJSON.URL + "/api/rivet", nil, `"kind":"invalid_response_json"`},
		{"schema", other.URL + "/api/rivet", nil, `{"failure":{"error":{"message":"serverless runtime other version 1.0.0 is unsupported","metadata":{"kind":"invalid_response_schema","runtime":"other","version":"1.0.0"}}}}`},
		{"version 99", v99.URL + "/api/rivet", nil, `{"failure":{"error":{"message":"envoy protocol version 99 is not supported (max supported: 8)","metadata":{"envoy_protocol_version":99,"kind":"invalid_envoy_protocol_version","max_supported_envoy_protocol_version":8}}}}`},
		{"long body", long.URL + "/api/rivet", nil, strings.Repeat("é", 1024) + `...[truncated]`},
		{"refused", closed.URL + "/api/rivet", nil, `{"failure":{"error":{"message":"failed to reach serverless endpoint","metadata":{"kind":"request_failed"}}}}`},
		{"not a url", "not a url", nil, `{"failure":{"error":{"message":"invalid serverless metadata request","metadata":{"kind":"invalid_request"}}}}`},
		{"bad header", ok.URL, map[string]string{"bad name": "v"}, `"kind":"invalid_request"`},
		{"private", "http://10.0.0.1/api", nil, `{"failure":{"error":{"details":"address 10.0.0.1 is not an allowed destination (private)","message":"serverless endpoint is not an allowed destination","metadata":{"kind":"destination_blocked","reason":"address 10.0.0.1 is not an allowed destination (private)"}}}}`},
	} {
		if got := check(t, f, tc.url, tc.headers); !strings.Contains(got, tc.want) {
			t.Errorf("%s: %s\nwant %s", tc.name, got, tc.want)
		}
	}
	// Loopback is refused by default, at call time for a name.
	if got := check(t, fetcher(outbound.Policy{}), ok.URL+"/api/rivet", nil); !strings.Contains(got, `(loopback)","metadata":{"kind":"destination_blocked"`) &&
		!strings.Contains(got, `"details":"address 127.0.0.1 is not an allowed destination (loopback)"`) {
		t.Errorf("default policy: %s", got)
	}
	if got := check(t, fetcher(outbound.Policy{}), strings.Replace(ok.URL, "127.0.0.1", "localhost", 1), nil); !strings.Contains(got, `host \"localhost\" resolved to no allowed addresses`) {
		t.Errorf("default policy, localhost: %s", got)
	}
	// A hanging endpoint: request_timed_out when the call's deadline passes.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := f.Fetch(ctx, hang.URL, nil); err == nil || err.Kind() != "request_timed_out" || err.Message != "serverless metadata request timed out" {
		t.Errorf("hang: %v", err)
	}
}

func TestHeadersSent(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		io.WriteString(w, envoyMeta)
	}))
	defer srv.Close()
	if _, err := fetcher(loopback).Fetch(context.Background(), srv.URL, map[string]string{"X-Upper": "secret"}); err != nil {
		t.Fatal(err)
	}
	h := <-got
	if h.Get("x-upper") != "secret" || h.Get("accept") != "*/*" || h.Get("user-agent") != "berth/test" {
		t.Errorf("headers %v", h)
	}
}

func TestPollTimings(t *testing.T) {
	ms := func(v uint64) *uint64 { return &v }
	for _, tc := range []struct {
		p    *uint64
		want time.Duration
	}{{nil, 10 * time.Second}, {ms(1000), 5 * time.Second}, {ms(7000), 7 * time.Second}, {ms(0), 5 * time.Second}} {
		if got := PollInterval(keys.ServerlessRunnerConfig{MetadataPollInterval: tc.p}); got != tc.want {
			t.Errorf("PollInterval(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	i := 5 * time.Second
	for n, want := range map[int]time.Duration{1: 5 * time.Second, 2: 10 * time.Second, 3: 20 * time.Second, 4: 40 * time.Second, 20: i << 8} {
		if got := Backoff(i, n); got != want {
			t.Errorf("Backoff(5s, %d) = %v, want %v", n, got, want)
		}
	}
}

// store opens an empty store with a serverless pool "sl" of url in a namespace.
func store(t *testing.T, url string) (udb.Database, id.ID) { return storeWith(t, url, "") }

// storeWith opens an empty store with namespace "default" and its serverless pool "sl" of
// url, with the config's extra fields (JSON text after a comma).
func storeWith(t *testing.T, url, extra string) (udb.Database, id.ID) {
	t.Helper()
	ctx := context.Background()
	db, err := udb.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ns := id.New(1)
	cfg, err := runnerconfig.ParseRequest([]byte(`{"serverless":{"url":"`+url+`","request_lifespan":3600`+extra+`}}`), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := udb.Transact(ctx, db, func(tx udb.Transaction) (struct{}, error) {
		if _, err := namespace.Create(ctx, tx, namespace.CreateInput{NamespaceID: ns, Name: "default", DisplayName: "Default"}); err != nil {
			return struct{}{}, err
		}
		_, err := runnerconfig.Upsert(ctx, tx, runnerconfig.UpsertInput{Namespace: ns, Name: "sl", Config: cfg})
		return struct{}{}, err
	}); err != nil {
		t.Fatal(err)
	}
	return db, ns
}

func protocolVersion(t *testing.T, db udb.Database, ns id.ID) *uint16 {
	t.Helper()
	ctx := context.Background()
	e, err := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) (runnerconfig.Entry, error) {
		return runnerconfig.Get(ctx, r, runnerconfig.GetInput{Namespace: ns, Name: "sl"})
	})
	if err != nil {
		t.Fatal(err)
	}
	return e.ProtocolVersion
}

func TestRefresh(t *testing.T) {
	ctx := context.Background()
	srv, n := endpoint(t, 200, envoyMeta)
	db, ns := store(t, srv.URL+"/api/rivet")
	s := New(db, fetcher(loopback), slog.New(slog.DiscardHandler))
	if err := s.Refresh(ctx, ns, "sl"); err != nil {
		t.Fatal(err)
	}
	if pv := protocolVersion(t, db, ns); pv == nil || *pv != 8 || n.Load() != 1 {
		t.Fatalf("protocol version %v after %d calls, want 8 after 1", pv, n.Load())
	}
	e, ok := rerr.As(s.Refresh(ctx, ns, "nope"))
	if !ok || !rerr.Is(e, rerr.CodeCoreInternalError) {
		t.Errorf("unknown pool: %v", e)
	}
	bad, _ := endpoint(t, 500, "boom")
	db2, ns2 := store(t, bad.URL+"/api/rivet")
	e, ok = rerr.As(New(db2, fetcher(loopback), slog.New(slog.DiscardHandler)).Refresh(ctx, ns2, "sl"))
	if !ok || !rerr.Is(e, rerr.CodeServerlessRunnerPoolFailedToFetchMetadata) || e.Status != 400 ||
		e.Message != "Failed to fetch serverless metadata: {reason}." {
		t.Fatalf("failed fetch: %v", e)
	}
	if b, _ := json.Marshal(e.Metadata); string(b) != `{"reason":{"message":"serverless metadata request returned status 500","metadata":{"body":"boom","kind":"non_success_status","status_code":500}}}` {
		t.Errorf("failed fetch metadata: %s", b)
	}
}

func TestPollerFindsPool(t *testing.T) {
	srv, n := endpoint(t, 200, envoyMeta)
	db, ns := store(t, srv.URL+"/api/rivet")
	s := New(db, fetcher(loopback), slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for protocolVersion(t, db, ns) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no protocol version after 5 s (%d calls)", n.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
