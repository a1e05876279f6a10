package gatewaybench

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/bench/hops"
	"github.com/berthhq/berth/bench/sidebyside"
	"github.com/berthhq/berth/tests/internal/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

const (
	latencyRequests = 2000             // sequential requests recorded
	loadConns       = 16               // connections of the throughput loop
	loadFor         = 5 * time.Second  // how long the throughput loop runs
	wsRoundTrips    = 2000             // WebSocket echoes recorded (after sidebyside.Warmup)
	readyWithin     = 60 * time.Second // for engines, runners and actors to come up
)

// figures are one target's measurements.
type figures struct {
	httpP50, httpP99 time.Duration
	rps              float64
	loadErrs         int64
	cpuPerReq        time.Duration // engine CPU per request in the throughput loop
	nodeCPUPerReq    time.Duration // the node process's CPU per request in the same loop
	wsP50, wsP99     time.Duration

	// The same HTTP measurements with Go's net/http client (sidebyside.NetHTTPClient).
	netHTTPP50, netHTTPP99 time.Duration
	netHTTPRPS             float64
}

func BenchmarkGatewaySideBySide(b *testing.B) {
	harness.NeedNode(b)

	// The client names rotating addresses in X-Forwarded-For (sidebyside.XFF), which berth
	// believes only from a trusted proxy.
	berth := harness.StartEngine(b, harness.Settings{Configure: func(cfg map[string]any) {
		cfg["guard"].(map[string]any)["trusted_proxies"] = []string{"127.0.0.1"}
	}})
	refURL, refPID := harness.StartReference(b)
	plainPort := harness.FreePorts(b, 1)[0]

	plain := harness.StartNode(b, "plain-server", "bench-echo-runner.mjs", []string{"PLAIN_PORT=" + strconv.Itoa(plainPort)})
	plain.AwaitEv("plain", readyWithin)
	berthActor, berthRunner := echoActor(b, "berth", berth.URL)
	refActor, refRunner := echoActor(b, "reference", refURL)

	targets := []*sidebyside.Target{
		sidebyside.NewTarget("plain node", fmt.Sprintf("http://127.0.0.1:%d", plainPort), 0, plain.PID(), 1),
		sidebyside.NewTarget("berth", berth.URL+"/gateway/"+berthActor, berth.PID(), berthRunner, 2),
		sidebyside.NewTarget("rivet "+sidebyside.RefVersion, refURL+"/gateway/"+refActor, refPID, refRunner, 3),
	}
	ctx := b.Context()
	figs := make([]figures, len(targets))
	b.ResetTimer()
	// Each measurement runs on every target in turn, so that a busy machine weighs on all;
	// the sequential ones in rounds (inRounds).
	raw := inRounds(b, targets, latencyRequests, func(t *sidebyside.Target, warmup, n int) ([]time.Duration, error) {
		return sidebyside.HTTPLatency(ctx, t, sidebyside.RawClient, warmup, n)
	})
	viaNetHTTP := inRounds(b, targets, latencyRequests, func(t *sidebyside.Target, warmup, n int) ([]time.Duration, error) {
		return sidebyside.HTTPLatency(ctx, t, sidebyside.NetHTTPClient, warmup, n)
	})
	// The sequential measurements come before any throughput loop: a target measured right
	// after another's loop (the engine and its runner still collecting what 10 s at full
	// load left) paid for it in its tail.
	stopCapture := captureHops(b, targets[1:])
	ws := inRounds(b, targets, wsRoundTrips, func(t *sidebyside.Target, warmup, n int) ([]time.Duration, error) {
		return sidebyside.WSLatency(ctx, t, warmup, n)
	})
	stopCapture()
	for i := range targets {
		figs[i].httpP50, figs[i].httpP99 = sidebyside.Percentile(raw[i], 50), sidebyside.Percentile(raw[i], 99)
		figs[i].netHTTPP50, figs[i].netHTTPP99 = sidebyside.Percentile(viaNetHTTP[i], 50), sidebyside.Percentile(viaNetHTTP[i], 99)
		figs[i].wsP50, figs[i].wsP99 = sidebyside.Percentile(ws[i], 50), sidebyside.Percentile(ws[i], 99)
	}
	for i, t := range targets {
		l := sidebyside.HTTPLoad(ctx, t, sidebyside.RawClient, loadConns, loadFor)
		if l.FirstErr != nil {
			b.Logf("%s: first failed request: %v", t.Name, l.FirstErr)
		}
		figs[i].rps, figs[i].loadErrs, figs[i].cpuPerReq, figs[i].nodeCPUPerReq = l.RPS, l.Failed, l.CPUPerReq, l.NodeCPUPerReq
	}
	for i, t := range targets {
		l := sidebyside.HTTPLoad(ctx, t, sidebyside.NetHTTPClient, loadConns, loadFor)
		if l.FirstErr != nil {
			b.Logf("%s (net/http client): first failed request: %v", t.Name, l.FirstErr)
		}
		figs[i].netHTTPRPS = l.RPS
		figs[i].loadErrs += l.Failed
	}
	b.StopTimer()

	report(b, targets, figs)
	for i, f := range figs {
		if f.loadErrs > 0 {
			b.Errorf("%s: %d requests of the throughput loop failed", targets[i].Name, f.loadErrs)
		}
	}
}

// captureHops, with GATEWAY_BENCH_HOPS=1, records the engines' loopback traffic (tcpdump) from
// now until the returned function is called, which then logs each engine's WebSocket echoes
// split into hops (bench/hops; docs/benchmarks.md, "Where a WebSocket echo's time goes").
func captureHops(b *testing.B, engines []*sidebyside.Target) func() {
	if os.Getenv("GATEWAY_BENCH_HOPS") != "1" {
		return func() {}
	}
	ports := make([]int, len(engines))
	for i, t := range engines {
		u, err := url.Parse(t.HTTP)
		if err != nil {
			b.Fatal(err)
		}
		if ports[i], err = strconv.Atoi(u.Port()); err != nil {
			b.Fatalf("%s: port of %s: %v", t.Name, t.HTTP, err)
		}
	}
	stop, err := hops.Capture(b.TempDir(), ports...)
	if err != nil {
		b.Fatalf("GATEWAY_BENCH_HOPS: %v", err)
	}
	b.Cleanup(func() { _, _ = stop() }) // tcpdump ends with the benchmark, even one that failed
	return func() {
		pkts, err := stop()
		if err != nil {
			b.Fatalf("GATEWAY_BENCH_HOPS: %v", err)
		}
		us := func(d [3]time.Duration) string {
			return fmt.Sprintf("%7.1f %7.1f %7.1f", float64(d[0])/1e3, float64(d[1])/1e3, float64(d[2])/1e3)
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "%-14s %6s  %-23s  %-23s  %-23s  %-23s  %-23s\n", "µs p50 p90 p99", "echoes",
			"engine in", "runner", "engine out", "engine in+out", "client")
		for i, t := range engines {
			trips, err := hops.Trips(pkts, ports[i], 0)
			if err != nil {
				b.Fatalf("GATEWAY_BENCH_HOPS: %s: %v", t.Name, err)
			}
			s := hops.Summarize(trips)
			fmt.Fprintf(&sb, "%-14s %6d  %s  %s  %s  %s  %s\n", t.Name, s.Trips, us(s.EngineIn), us(s.Runner), us(s.EngineOut), us(s.Engine), us(s.Client))
		}
		b.Logf("WebSocket echoes split into hops (from the loopback capture; warm-up echoes included):\n%s", sb.String())
	}
}

// The sequential measurements are taken in latencyRounds rounds, every target in turn within
// a round, so that a slower or faster spell of the shared machine (the reference engine's p50
// ranged 2.4–3.4 ms between runs here) weighs on every target alike, not on whichever ran
// during it. A target's first round starts with sidebyside.Warmup unrecorded requests, its
// later ones with roundWarmup (the others ran meanwhile).
const (
	latencyRounds = 5
	roundWarmup   = 200
)

// inRounds runs measure on every target in turn, latencyRounds times, recording
// n/latencyRounds each time, and returns each target's recorded durations.
func inRounds(b *testing.B, targets []*sidebyside.Target, n int, measure func(t *sidebyside.Target, warmup, n int) ([]time.Duration, error)) [][]time.Duration {
	b.Helper()
	out := make([][]time.Duration, len(targets))
	for round := range latencyRounds {
		warmup := roundWarmup
		if round == 0 {
			warmup = sidebyside.Warmup
		}
		for i, t := range targets {
			d, err := measure(t, warmup, n/latencyRounds)
			if err != nil {
				b.Fatal(err)
			}
			out[i] = append(out[i], d...)
		}
	}
	return out
}

// report prints the table and reports berth's and the reference's figures and their ratios
// as metrics.
func report(b *testing.B, targets []*sidebyside.Target, figs []figures) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-24s", "")
	for _, t := range targets {
		fmt.Fprintf(&sb, "%14s", t.Name)
	}
	fmt.Fprintf(&sb, "%14s\n", "berth/rivet")
	row := func(name string, v func(figures) float64, format string) {
		fmt.Fprintf(&sb, "%-24s", name)
		for _, f := range figs {
			fmt.Fprintf(&sb, "%14s", fmt.Sprintf(format, v(f)))
		}
		fmt.Fprintf(&sb, "%14.3f\n", v(figs[1])/v(figs[2]))
	}
	row("http p50 ms", func(f figures) float64 { return ms(f.httpP50) }, "%.3f")
	row("http p99 ms", func(f figures) float64 { return ms(f.httpP99) }, "%.3f")
	row("req/s, 16 conns", func(f figures) float64 { return f.rps }, "%.0f")
	row("engine CPU ms/req", func(f figures) float64 { return ms(f.cpuPerReq) }, "%.3f")
	row("node CPU ms/req", func(f figures) float64 { return ms(f.nodeCPUPerReq) }, "%.3f")
	row("ws echo p50 ms", func(f figures) float64 { return ms(f.wsP50) }, "%.3f")
	row("ws echo p99 ms", func(f figures) float64 { return ms(f.wsP99) }, "%.3f")
	row("net/http: http p50 ms", func(f figures) float64 { return ms(f.netHTTPP50) }, "%.3f")
	row("net/http: http p99 ms", func(f figures) float64 { return ms(f.netHTTPP99) }, "%.3f")
	row("net/http: req/s", func(f figures) float64 { return f.netHTTPRPS }, "%.0f")
	b.Logf("gateway side by side (GOMAXPROCS of the load loop %d; sequential %d requests and %d WebSocket echoes in %d rounds, %d connections for %v; "+
		"HTTP with the raw client, then again with Go's net/http client):\n%s",
		runtime.GOMAXPROCS(0), latencyRequests, wsRoundTrips, latencyRounds, loadConns, loadFor, sb.String())

	berth, ref := figs[1], figs[2]
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(berth.httpP50), "berth-http-p50-ms")
	b.ReportMetric(ms(ref.httpP50), "rivet-http-p50-ms")
	b.ReportMetric(ms(berth.httpP50)/ms(ref.httpP50), "http-p50-ratio")
	b.ReportMetric(ms(berth.httpP99)/ms(ref.httpP99), "http-p99-ratio")
	b.ReportMetric(berth.rps, "berth-req/s")
	b.ReportMetric(ref.rps, "rivet-req/s")
	b.ReportMetric(berth.rps/ref.rps, "req/s-ratio")
	b.ReportMetric(ms(berth.wsP50), "berth-ws-p50-ms")
	b.ReportMetric(ms(ref.wsP50), "rivet-ws-p50-ms")
	b.ReportMetric(ms(berth.wsP50)/ms(ref.wsP50), "ws-p50-ratio")
	b.ReportMetric(ms(berth.wsP99)/ms(ref.wsP99), "ws-p99-ratio")
	b.ReportMetric(ms(berth.netHTTPP50)/ms(ref.netHTTPP50), "nethttp-http-p50-ratio")
	b.ReportMetric(berth.netHTTPRPS/ref.netHTTPRPS, "nethttp-req/s-ratio")
}

// echoActor starts the echo runner against the engine at url, creates one echo actor on it
// and waits until the actor answers through the gateway; it returns the actor's id and the
// runner's process id.
func echoActor(b *testing.B, name, url string) (string, int) {
	b.Helper()
	runner := harness.StartNode(b, name+"-runner", "bench-echo-runner.mjs", []string{"BERTH_ENDPOINT=" + url})
	runner.AwaitEv("connected", readyWithin)
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	body := `{"name":"echo","key":"bench","runner_name_selector":"bench","crash_policy":"sleep"}`
	deadline := time.Now().Add(readyWithin)
	var id string
	for id == "" {
		// The Rivet engine may not have the pool's runner config yet right after the
		// runner's first connect (actor.no_runner_config_configured): try again.
		resp, err := client.Post(url+"/actors?namespace=default", "application/json", strings.NewReader(body))
		if err == nil {
			var out struct {
				Actor struct {
					ActorID string `json:"actor_id"`
				} `json:"actor"`
			}
			b2, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && json.Unmarshal(b2, &out) == nil {
				id = out.Actor.ActorID
				break
			}
			err = fmt.Errorf("%d %s", resp.StatusCode, b2)
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: POST /actors: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
	for {
		err := sidebyside.Get(b.Context(), client, url+"/gateway/"+id+"/ready", "10.0.0.1")
		if err == nil {
			return id, runner.PID()
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: the echo actor does not answer: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
}
