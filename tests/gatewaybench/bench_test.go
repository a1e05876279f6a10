package gatewaybench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/tests/internal/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

const (
	refVersion = "2.3.19"
	refPackage = "@rivetkit/engine-cli-linux-x64-musl@" + refVersion

	latencyWarmup   = 200              // requests before the latency is recorded
	latencyRequests = 2000             // sequential requests recorded
	loadConns       = 16               // connections of the throughput loop
	loadFor         = 5 * time.Second  // how long the throughput loop runs
	wsRoundTrips    = 2000             // WebSocket echoes recorded (after latencyWarmup)
	readyWithin     = 60 * time.Second // for engines, runners and actors to come up

	// Both engines limit each client IP to 10,000 requests per 60 s (guard.rate_limit, the
	// first X-Forwarded-For entry names the client); each connection moves to a new
	// address every perAddress requests so that the limit never answers instead of the actor.
	perAddress = 4000
)

// target is one system under test: an echo actor's base URL for HTTP and WebSocket.
type target struct {
	name string
	http string // http://host:port/gateway/{actor_id} or the plain server's http://host:port
	ws   string // the same as ws://
	pid  int    // the engine's process, for its CPU time; 0 for the plain server
	node int    // the node process behind it (the echo runner, or the plain server)
	idx  int    // this target's part of the X-Forwarded-For addresses
}

// figures are one target's measurements.
type figures struct {
	httpP50, httpP99 time.Duration
	rps              float64
	loadErrs         int64
	cpuPerReq        time.Duration // engine CPU per request in the throughput loop
	nodeCPUPerReq    time.Duration // the node process's CPU per request in the same loop
	wsP50, wsP99     time.Duration
}

func BenchmarkGatewaySideBySide(b *testing.B) {
	harness.NeedNode(b)
	refBin := referenceBinary(b)

	berth := harness.StartEngine(b, harness.Settings{})
	refURL, refPID := startReference(b, refBin)
	plainPort := harness.FreePorts(b, 1)[0]

	plain := harness.StartNode(b, "plain-server", "bench-echo-runner.mjs", []string{"PLAIN_PORT=" + strconv.Itoa(plainPort)})
	plain.AwaitEv("plain", readyWithin)
	berthActor, berthRunner := echoActor(b, "berth", berth.URL)
	refActor, refRunner := echoActor(b, "reference", refURL)

	targets := []*target{
		{name: "plain node", http: fmt.Sprintf("http://127.0.0.1:%d", plainPort), node: plain.PID(), idx: 1},
		{name: "berth", http: berth.URL + "/gateway/" + berthActor, pid: berth.PID(), node: berthRunner, idx: 2},
		{name: "rivet " + refVersion, http: refURL + "/gateway/" + refActor, pid: refPID, node: refRunner, idx: 3},
	}
	for _, t := range targets {
		t.ws = "ws" + strings.TrimPrefix(t.http, "http")
	}
	figs := make([]figures, len(targets))
	b.ResetTimer()
	// Each measurement runs on every target in turn, so that a busy machine weighs on all.
	for i, t := range targets {
		figs[i].httpP50, figs[i].httpP99 = httpLatency(b, t)
	}
	for i, t := range targets {
		figs[i].rps, figs[i].loadErrs, figs[i].cpuPerReq, figs[i].nodeCPUPerReq = httpLoad(b, t)
	}
	for i, t := range targets {
		figs[i].wsP50, figs[i].wsP99 = wsLatency(b, t)
	}
	b.StopTimer()

	report(b, targets, figs)
	for i, f := range figs {
		if f.loadErrs > 0 {
			b.Errorf("%s: %d requests of the throughput loop failed", targets[i].name, f.loadErrs)
		}
	}
}

// report prints the table and reports berth's and the reference's figures and their ratios
// as metrics.
func report(b *testing.B, targets []*target, figs []figures) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-24s", "")
	for _, t := range targets {
		fmt.Fprintf(&sb, "%14s", t.name)
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
	b.Logf("gateway side by side (GOMAXPROCS of the load loop %d; sequential %d requests and %d WebSocket echoes, %d connections for %v):\n%s",
		runtime.GOMAXPROCS(0), latencyRequests, wsRoundTrips, loadConns, loadFor, sb.String())

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
}

// xff is the client address of request n on connection conn of target t.
func xff(t *target, conn, n int) string {
	return fmt.Sprintf("10.%d.%d.%d", t.idx, conn, n/perAddress%250)
}

// get sends one GET to url on client and checks the answer is 200 "ok".
func get(client *http.Client, url, from string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Forwarded-For", from)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		return fmt.Errorf("GET %s: %d %q", url, resp.StatusCode, body)
	}
	return nil
}

// oneConn is a client that keeps one connection alive.
func oneConn() (*http.Client, func()) {
	tr := &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, DisableCompression: true}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}, tr.CloseIdleConnections
}

// httpLatency sends sequential requests on one keep-alive connection and returns p50 and p99.
func httpLatency(b *testing.B, t *target) (p50, p99 time.Duration) {
	client, done := oneConn()
	defer done()
	url := t.http + "/bench"
	d := make([]time.Duration, 0, latencyRequests)
	for n := range latencyWarmup + latencyRequests {
		start := time.Now()
		if err := get(client, url, xff(t, 100, n)); err != nil {
			b.Fatalf("%s: %v", t.name, err)
		}
		if n >= latencyWarmup {
			d = append(d, time.Since(start))
		}
	}
	return percentiles(d)
}

// httpLoad runs loadConns closed loops, one keep-alive connection each, for loadFor and
// returns the requests per second, the failed requests, and the engine's and the node
// process's CPU per request.
func httpLoad(b *testing.B, t *target) (rps float64, errs int64, cpu, nodeCPU time.Duration) {
	url := t.http + "/bench"
	ctx, cancel := context.WithTimeout(context.Background(), loadFor)
	defer cancel()
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	cpu0, node0 := cpuTime(t.pid), cpuTime(t.node)
	start := time.Now()
	for c := range loadConns {
		wg.Go(func() {
			client, done := oneConn()
			defer done()
			for n := 0; ctx.Err() == nil; n++ {
				if err := get(client, url, xff(t, c, n)); err != nil {
					if failed.Add(1) == 1 {
						firstErr.Store(err)
					}
					continue
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, node1 := cpuTime(t.pid), cpuTime(t.node)
	if err, _ := firstErr.Load().(error); err != nil {
		b.Logf("%s: first failed request: %v", t.name, err)
	}
	if n := time.Duration(ok.Load()); n > 0 {
		cpu, nodeCPU = (cpu1-cpu0)/n, (node1-node0)/n
	}
	return float64(ok.Load()) / elapsed.Seconds(), failed.Load(), cpu, nodeCPU
}

// wsLatency opens one WebSocket to the actor and returns the echo round trip's p50 and p99.
func wsLatency(b *testing.B, t *target) (p50, p99 time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, _, err := websocket.Dial(ctx, t.ws+"/ws", &websocket.DialOptions{
		Subprotocols: []string{"rivet"},
		HTTPHeader:   http.Header{"X-Forwarded-For": {xff(t, 200, 0)}},
	})
	if err != nil {
		b.Fatalf("%s: WebSocket: %v", t.name, err)
	}
	defer c.CloseNow()
	d := make([]time.Duration, 0, wsRoundTrips)
	for n := range latencyWarmup + wsRoundTrips {
		msg := []byte("echo " + strconv.Itoa(n))
		start := time.Now()
		if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
			b.Fatalf("%s: WebSocket write: %v", t.name, err)
		}
		_, got, err := c.Read(ctx)
		if err != nil {
			b.Fatalf("%s: WebSocket read: %v", t.name, err)
		}
		if !bytes.Equal(got, msg) {
			b.Fatalf("%s: WebSocket echo %q, want %q", t.name, got, msg)
		}
		if n >= latencyWarmup {
			d = append(d, time.Since(start))
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
	return percentiles(d)
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(d)
	return d[len(d)*50/100], d[len(d)*99/100]
}

// cpuTime is the user plus system CPU time of process pid so far (0 for pid 0).
func cpuTime(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command (which may hold spaces) start after the last ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks
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
		err := get(client, url+"/gateway/"+id+"/ready", "10.0.0.1")
		if err == nil {
			return id, runner.PID()
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: the echo actor does not answer: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
}

// referenceBinary returns the rivet-engine binary: BERTH_RIVET_ENGINE, else the one in the
// user's cache directory, installed there with npm if missing. It skips b when there is none.
func referenceBinary(b *testing.B) string {
	b.Helper()
	if p := os.Getenv("BERTH_RIVET_ENGINE"); p != "" {
		return p
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		b.Skipf("no cache directory for the Rivet engine (%v); set BERTH_RIVET_ENGINE", err)
	}
	dir := filepath.Join(cache, "berth", "rivet-engine-"+refVersion)
	bin := filepath.Join(dir, "node_modules", "@rivetkit", "engine-cli-linux-x64-musl", "rivet-engine")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	b.Logf("installing %s (97 MB) into %s", refPackage, dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Skipf("cannot install the Rivet engine: %v", err)
	}
	cmd := exec.Command("npm", "install", "--prefix", dir, "--no-save", "--no-audit", "--no-fund", refPackage)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Skipf("cannot install the Rivet engine (%v): %s; set BERTH_RIVET_ENGINE", err, out)
	}
	if _, err := os.Stat(bin); err != nil {
		b.Skipf("npm installed %s but %s is missing", refPackage, bin)
	}
	return bin
}

// startReference runs the Rivet engine on loopback ports with its store in a temporary
// directory, as rivet-engine.md §12 says (no RUST_BACKTRACE, load shedding off, telemetry
// off), and waits until it answers; it returns its URL and process id.
func startReference(b *testing.B, bin string) (string, int) {
	b.Helper()
	ports := harness.FreePorts(b, 3)
	dir := b.TempDir()
	cfg := map[string]any{
		"guard":    map[string]any{"host": "127.0.0.1", "port": ports[0]},
		"api_peer": map[string]any{"host": "127.0.0.1", "port": ports[1]},
		"metrics":  map[string]any{"host": "127.0.0.1", "port": ports[2]},
		"runtime":  map[string]any{"worker_load_shedding_curve": [][2]int{{100000, 1000}, {100001, 999}}},
	}
	raw, _ := json.Marshal(cfg)
	config := filepath.Join(dir, "rivet.json")
	if err := os.WriteFile(config, raw, 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", config, "start")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RUST_BACKTRACE=") && !strings.HasPrefix(kv, "RIVET_") && !strings.HasPrefix(kv, "RIVET__") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HOME="+dir, "XDG_DATA_HOME="+dir, "RIVET__TELEMETRY__ENABLED=false")
	p := harness.StartProc(b, "rivet-engine", cmd)
	url := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(readyWithin)
	for {
		resp, err := client.Get(url + "/metadata")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url, p.PID()
			}
		}
		select {
		case <-p.Exited():
			b.Fatalf("rivet-engine exited before it answered:\n%s", harness.Tail(p.Stderr(), 30))
		case <-time.After(50 * time.Millisecond): // polling interval
		}
		if time.Now().After(deadline) {
			b.Fatalf("rivet-engine does not answer /metadata after %v (last error %v)", readyWithin, err)
		}
	}
}
