package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/berthhq/berth/ops/actor"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// span is what the OTLP receiver keeps of an exported span.
type span struct{ name, traceID, spanID, parentID string }

// otlpReceiver is an in-process OTLP/HTTP collector: it decodes the protobuf export
// requests posted to /v1/traces.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				o.spans = append(o.spans, span{s.Name, hex.EncodeToString(s.TraceId), hex.EncodeToString(s.SpanId), hex.EncodeToString(s.ParentSpanId)})
			}
		}
	}
	o.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

func (o *otlpReceiver) byName() map[string]span {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := map[string]span{}
	for _, s := range o.spans {
		m[s.name] = s
	}
	return m
}

// scrape returns the metrics page.
func scrape(t *testing.T, e *Engine) string {
	t.Helper()
	res, err := http.Get("http://" + e.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// metricValue is the value of the series line starting with series, or -1.
func metricValue(page, series string) float64 {
	for line := range strings.SplitSeq(page, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// One request through the gateway with tracing on: the client's trace continues through
// guard, pegboard and the runner tunnel, is exported over OTLP/HTTP, and the actor receives
// the tunnel span as its traceparent; the access line carries the ray and request ids; the
// request, gateway, store, ping and census metrics carry the right labels.
func TestObservabilityThroughTheGateway(t *testing.T) {
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	cfg := testConfig("tok")
	cfg.OTel.Endpoint = collector.URL
	cfg.Pegboard.RunnerUpdatePingIntervalMs = 100
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e, err := Start(context.Background(), Options{Config: cfg, Log: log, Observability: ObservabilityOptions{CensusInterval: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	shutdown := func() {
		if !stopped {
			stopped = true
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := e.Shutdown(sctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		}
	}
	defer shutdown()
	if !e.obs.tracing.Enabled {
		t.Fatal("tracing is off with otel.endpoint set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := newEchoRunner(t, ctx, e)
	a, err := e.lifecycle.Actors.Create(ctx, actor.CreateInput{Namespace: defaultNS(t, e), NamespaceName: "default",
		Name: "echo", Selector: "pool", CrashPolicy: actor.CrashSleep})
	if err != nil {
		t.Fatal(err)
	}
	<-r.starts

	const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+e.PublicAddr().String()+"/gateway/"+a.ActorID.String()+"/traced", nil)
	req.Header.Set("traceparent", "00-"+clientTrace+"-00f067aa0ba902b7-01")
	req.Header.Set("x-request-id", "req-from-client-1")
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var echoed struct {
		Headers map[string]string `json:"headers"`
	}
	if res.StatusCode != 200 || json.Unmarshal(body, &echoed) != nil {
		t.Fatalf("gateway: %d %s", res.StatusCode, body)
	}
	ray, reqID := res.Header.Get("x-rivet-ray-id"), res.Header.Get("x-request-id")
	if ray == "" || reqID != "req-from-client-1" || echoed.Headers["x-request-id"] != reqID {
		t.Fatalf("ray %q, request id %q, actor saw %q", ray, reqID, echoed.Headers["x-request-id"])
	}
	tp := regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-01$`).FindStringSubmatch(echoed.Headers["traceparent"])
	if tp == nil || tp[1] != clientTrace || tp[2] == "00f067aa0ba902b7" {
		t.Fatalf("actor's traceparent %q: want the client's trace with the tunnel span as parent", echoed.Headers["traceparent"])
	}
	// An API call, for the route label of the public API.
	if rep := call(t, client, e.PublicAddr(), "/namespaces", "tok"); rep.status != 200 {
		t.Fatalf("/namespaces: %d", rep.status)
	}

	// Metrics: poll until a pong and a census have been recorded.
	var page string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		page = scrape(t, e)
		if metricValue(page, `berth_actors{state="running"}`) == 1 && metricValue(page, `berth_ping_rtt_seconds_count{kind="runner"}`) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("census or pong not recorded:\n%s", grepBerth(page))
		}
	}
	for series, want := range map[string]func(float64) bool{
		`berth_http_requests_total{listener="api-public",route="gateway",status="200"}`:          func(v float64) bool { return v == 1 },
		`berth_http_requests_total{listener="api-public",route="/namespaces",status="200"}`:      func(v float64) bool { return v == 1 },
		`berth_http_requests_total{listener="api-public",route="/runners/connect",status="101"}`: func(v float64) bool { return v == 1 },
		`berth_http_request_duration_seconds_count{listener="api-public",route="gateway"}`:       func(v float64) bool { return v == 1 },
		`berth_gateway_phase_seconds_count{phase="resolve"}`:                                     func(v float64) bool { return v == 1 },
		`berth_gateway_phase_seconds_count{phase="response"}`:                                    func(v float64) bool { return v == 1 },
		`berth_gateway_retries_total{protocol="http"}`:                                           func(v float64) bool { return v == 0 },
		`berth_gateway_retries_total{protocol="websocket"}`:                                      func(v float64) bool { return v == 0 },
		`berth_udb_commit_seconds_count`:                                                         func(v float64) bool { return v > 0 },
		`berth_udb_conflicts_total`:                                                              func(v float64) bool { return v >= 0 },
		`berth_runners{state="active"}`:                                                          func(v float64) bool { return v == 1 },
		`berth_runners{state="draining"}`:                                                        func(v float64) bool { return v == 0 },
		`berth_envoys{state="active"}`:                                                           func(v float64) bool { return v == 0 },
		`berth_actors{state="pending"}`:                                                          func(v float64) bool { return v == 0 },
		`berth_pending_allocations`:                                                              func(v float64) bool { return v == 0 },
		`berth_census_truncated`:                                                                 func(v float64) bool { return v == 0 },
	} {
		if v := metricValue(page, series); !want(v) {
			t.Errorf("%s = %v", series, v)
		}
	}

	// The access line of the gateway request carries its ray and request ids.
	found := false
	for _, l := range logs.lines() {
		if l["msg"] == "request" && l["route"] == "gateway" && l["ray_id"] == ray && l["request_id"] == reqID && l["status"] == float64(200) {
			found = true
		}
	}
	if !found {
		t.Errorf("no access line with ray_id %s and request_id %s", ray, reqID)
	}

	// Spans: exported at shutdown at the latest, all in the client's trace.
	cancel()
	shutdown()
	spans := recv.byName()
	server, resolve, tunnel := spans["POST gateway"], spans["pegboard.resolve_route"], spans["runner.tunnel"]
	if server.traceID != clientTrace || server.parentID != "00f067aa0ba902b7" {
		t.Fatalf("server span %+v; spans %v", server, spans)
	}
	if resolve.traceID != clientTrace || resolve.parentID != server.spanID || tunnel.parentID != server.spanID {
		t.Errorf("resolve %+v, tunnel %+v: want children of the server span %s", resolve, tunnel, server.spanID)
	}
	if tunnel.spanID != tp[2] {
		t.Errorf("the actor's parent span %s is not the tunnel span %s", tp[2], tunnel.spanID)
	}
}

func grepBerth(page string) string {
	var out []string
	for line := range strings.SplitSeq(page, "\n") {
		if strings.HasPrefix(line, "berth_") && !strings.Contains(line, "_bucket") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// Without otel.endpoint the tracer is a no-op: the gateway forwards the client's
// traceparent unchanged and creates no spans.
func TestTracingOffForwardsTraceparent(t *testing.T) {
	e := startEngine(t, testConfig("tok"))
	if e.obs.tracing.Enabled {
		t.Fatal("tracing on without otel.endpoint")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := newEchoRunner(t, ctx, e)
	a, err := e.lifecycle.Actors.Create(ctx, actor.CreateInput{Namespace: defaultNS(t, e), NamespaceName: "default",
		Name: "echo", Selector: "pool", CrashPolicy: actor.CrashSleep})
	if err != nil {
		t.Fatal(err)
	}
	<-r.starts
	const given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+e.PublicAddr().String()+"/gateway/"+a.ActorID.String()+"/x", nil)
	req.Header.Set("traceparent", given)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var echoed struct {
		Headers map[string]string `json:"headers"`
	}
	if err := json.NewDecoder(res.Body).Decode(&echoed); err != nil {
		t.Fatal(err)
	}
	// The actor gets the request's ray id, as on Rivet; a request id only when the client
	// sent one.
	ray := res.Header.Get("x-rivet-ray-id")
	if echoed.Headers["traceparent"] != given || ray == "" || echoed.Headers["x-rivet-ray-id"] != ray {
		t.Fatalf("actor saw traceparent %q, x-rivet-ray-id %q (answered %q)", echoed.Headers["traceparent"], echoed.Headers["x-rivet-ray-id"], ray)
	}
	if id, ok := echoed.Headers["x-request-id"]; ok || res.Header.Get("x-request-id") != "" {
		t.Fatalf("x-request-id %q reached the actor, %q the client; the client sent none", id, res.Header.Get("x-request-id"))
	}
}
