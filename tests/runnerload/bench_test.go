package runnerload

import (
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pingTxnMetric is the engine's histogram of the transaction recording a runner's pong.
const pingTxnMetric = "berth_runner_ping_txn_seconds"

// pingPeriod is the engine's mean ping interval: 3 s plus 0–127 ms of uniform jitter.
const pingPeriod = 3*time.Second + 63500*time.Microsecond

// benchConfig is BenchmarkRunnerFleet's configuration, from environment variables.
type benchConfig struct {
	Runners int           // RUNNERLOAD_RUNNERS, default 5000
	Window  time.Duration // RUNNERLOAD_WINDOW, default 60s: the measured steady window
	Rate    int           // RUNNERLOAD_RATE, default 250: new connections per second
	Settle  time.Duration // RUNNERLOAD_SETTLE, default 5s: from the last registration to the window
	GODEBUG string        // RUNNERLOAD_ENGINE_GODEBUG: GODEBUG for the engine, e.g. gctrace=1
	DBQuery string        // RUNNERLOAD_DB_QUERY: appended to the store URL, e.g. ?sync=false
	// RUNNERLOAD_BERTH (see buildBerth) runs a prebuilt engine binary.
}

func loadBenchConfig(tb testing.TB) benchConfig {
	tb.Helper()
	c := benchConfig{Runners: 5000, Window: 60 * time.Second, Rate: 250, Settle: 5 * time.Second}
	positive := func(name string, into *int) {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				tb.Fatalf("%s=%q: want a positive integer", name, v)
			}
			*into = n
		}
	}
	duration := func(name string, into *time.Duration) {
		if v := os.Getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				tb.Fatalf("%s=%q: want a duration such as 60s", name, v)
			}
			*into = d
		}
	}
	positive("RUNNERLOAD_RUNNERS", &c.Runners)
	positive("RUNNERLOAD_RATE", &c.Rate)
	duration("RUNNERLOAD_WINDOW", &c.Window)
	duration("RUNNERLOAD_SETTLE", &c.Settle)
	c.GODEBUG = os.Getenv("RUNNERLOAD_ENGINE_GODEBUG")
	c.DBQuery = os.Getenv("RUNNERLOAD_DB_QUERY")
	if c.DBQuery != "" && !strings.HasPrefix(c.DBQuery, "?") {
		tb.Fatalf("RUNNERLOAD_DB_QUERY=%q: want a query string such as ?sync=false", c.DBQuery)
	}
	if c.Window < time.Second {
		tb.Fatalf("RUNNERLOAD_WINDOW=%v: want at least 1s", c.Window)
	}
	return c
}

// BenchmarkRunnerFleet starts one berth process (embedded file store) and connects
// RUNNERLOAD_RUNNERS simulated runners (default 5,000) from this process over loopback,
// RUNNERLOAD_RATE a second; once all are registered and RUNNERLOAD_SETTLE has passed, it
// measures a steady window of RUNNERLOAD_WINDOW (default 60 s) in which the engine pings
// each runner every 3 s and records each pong in a transaction. It reports the ping
// transaction's p50 and p99 (from the engine's berth_runner_ping_txn_seconds histogram,
// scraped at both ends of the window), the engine's CPU over the window as % of one core
// (utime+stime from /proc), its resident memory at the end and its peak, and the load
// generator's view: pings received per second and sockets dropped.
//
// It runs once whatever b.N is: the window is the measurement (B/op and allocs/op under
// -benchmem are the load generator's, over the window). Goals (issue 4 item 7):
// p99 ≤ 10 ms, CPU ≤ 50% of a core, RSS ≤ 200 MiB at 5,000 runners.
func BenchmarkRunnerFleet(b *testing.B) {
	cfg := loadBenchConfig(b)
	raiseFDLimit(b, uint64(cfg.Runners)+1024)
	// Every simulated runner connects from 127.0.0.1: the per-address caps would refuse most.
	env := []string{"BERTH__guard__max_connections_per_client=0", "BERTH__guard__max_websockets_per_client=0"}
	if cfg.GODEBUG != "" {
		env = append(env, "GODEBUG="+cfg.GODEBUG)
	}
	e := startEngine(b, buildBerth(b, b.TempDir()), cfg.DBQuery, env...)
	client := &http.Client{Timeout: 10 * time.Second}
	idle := takeSnapshot(b, e, client, nil)

	f := startFleet(fleetOptions{URL: e.wsURL(), N: cfg.Runners, Rate: cfg.Rate})
	b.Cleanup(f.close) // before the engine's cleanup kills it
	rampTimeout := time.Duration(cfg.Runners/cfg.Rate)*2*time.Second + 60*time.Second
	if _, err := f.waitRegistered(rampTimeout); err != nil {
		b.Fatal(err)
	}
	registered := takeSnapshot(b, e, client, f)
	b.Logf("%d runners registered in %v (%.0f/s asked); engine CPU while ramping %.1f%% of a core, RSS %.1f MiB",
		cfg.Runners, registered.at.Sub(idle.at).Round(time.Millisecond), float64(cfg.Rate),
		cpuPct(idle, registered), mib(registered.mem.RSS))

	if !e.sleep(cfg.Settle) {
		b.Fatalf("engine exited while settling:\n%s", e.tail(40))
	}
	b.ResetTimer()
	start := takeSnapshot(b, e, client, f)
	if !e.sleep(cfg.Window) {
		b.Fatalf("engine exited during the window:\n%s", e.tail(40))
	}
	end := takeSnapshot(b, e, client, f)
	b.StopTimer()

	r := summarize(b, cfg, start, end)
	b.Log(r.line)
	for _, l := range r.detail {
		b.Log(l)
	}
	b.ReportMetric(0, "ns/op") // one run of a fixed window: a per-op time means nothing
	b.ReportMetric(r.p50*1000, "ping_p50_ms")
	b.ReportMetric(r.p99*1000, "ping_p99_ms")
	b.ReportMetric(r.cpuPct, "engine_cpu_pct")
	b.ReportMetric(mib(end.mem.RSS), "engine_rss_mib")
	b.ReportMetric(mib(end.mem.HWM), "engine_hwm_mib")
	b.ReportMetric(r.pingsPerSec, "pings/s")
	b.ReportMetric(float64(end.dropped), "dropped")
}

// snapshot is what the benchmark knows at one instant: the engine's CPU time, memory and
// metrics, and the load generator's counters.
type snapshot struct {
	at      time.Time
	cpu     time.Duration // the engine's
	selfCPU time.Duration // the load generator's (this process)
	mem     procMem
	metrics map[string]float64
	loadavg string

	pings, dropped, pongErrs int64
	delay, gap               []bucket
	reasons                  string // why runners failed or dropped
}

func takeSnapshot(tb testing.TB, e *engineProc, client *http.Client, f *fleet) snapshot {
	tb.Helper()
	s := snapshot{at: time.Now()}
	var err error
	if s.cpu, err = procCPU(e.pid()); err != nil {
		tb.Fatal(err)
	}
	if s.selfCPU, err = procCPU(os.Getpid()); err != nil {
		tb.Fatal(err)
	}
	if s.mem, err = readProcMem(e.pid()); err != nil {
		tb.Fatal(err)
	}
	if s.metrics, err = scrape(client, e.metricsURL()); err != nil {
		tb.Fatalf("scrape the engine's metrics: %v", err)
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		s.loadavg = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	if f != nil {
		s.pings, s.dropped, s.pongErrs = f.pings.Load(), f.dropped.Load(), f.pongErrs.Load()
		s.delay, s.gap = f.delay.snapshot(), f.gap.snapshot()
		s.reasons = f.reasonSummary()
	}
	return s
}

// sleep waits d unless the engine exits first; false when it did.
func (e *engineProc) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-e.exited:
		return false
	}
}

func cpuPct(a, b snapshot) float64 {
	return 100 * float64(b.cpu-a.cpu) / float64(b.at.Sub(a.at))
}

func mib(bytes uint64) float64 { return float64(bytes) / (1 << 20) }

// result is the window's figures.
type result struct {
	p50, p99    float64 // ping transaction, seconds
	cpuPct      float64
	pingsPerSec float64
	line        string   // the summary
	detail      []string // the load generator's timings and the engine's Go runtime
}

func summarize(tb testing.TB, cfg benchConfig, start, end snapshot) result {
	tb.Helper()
	var r result
	secs := end.at.Sub(start.at).Seconds()
	b0, ok0 := promBuckets(start.metrics, pingTxnMetric)
	b1, ok1 := promBuckets(end.metrics, pingTxnMetric)
	if !ok0 || !ok1 {
		tb.Fatalf("the engine's /metrics has no %s", pingTxnMetric)
	}
	d, err := deltaBuckets(b0, b1)
	if err != nil {
		tb.Fatal(err)
	}
	txns := d[len(d)-1].Count
	r.p50, r.p99 = quantile(d, 0.50), quantile(d, 0.99)
	r.cpuPct = cpuPct(start, end)
	pings := end.pings - start.pings
	r.pingsPerSec = float64(pings) / secs
	want := float64(cfg.Runners) / pingPeriod.Seconds()
	r.line = fmt.Sprintf("runners=%d window=%.1fs store=file://…/db%s: ping txn p50=%.3fms p99=%.3fms (%.0f txns, %.0f/s; mean %.3fms) | "+
		"engine cpu=%.1f%% of a core (%.0fµs per ping txn), rss=%.1fMiB, hwm=%.1fMiB, threads=%d | "+
		"generator: %.0f pings/s (expected %.0f), %d dropped in window (%d total), %d pong writes failed, cpu=%.1f%% | load %s → %s",
		cfg.Runners, secs, cfg.DBQuery, r.p50*1000, r.p99*1000, txns, txns/secs, meanMs(start.metrics, end.metrics, pingTxnMetric),
		r.cpuPct, float64((end.cpu-start.cpu).Microseconds())/txns, mib(end.mem.RSS), mib(end.mem.HWM), end.mem.Threads,
		r.pingsPerSec, want, end.dropped-start.dropped, end.dropped, end.pongErrs,
		100*float64(end.selfCPU-start.selfCPU)/float64(end.at.Sub(start.at)), start.loadavg, end.loadavg)
	if dd, err := deltaBuckets(start.delay, end.delay); err == nil {
		gd, _ := deltaBuckets(start.gap, end.gap)
		r.detail = append(r.detail, fmt.Sprintf("generator: ping delivery (engine ts → read) p50=%.0fms p99=%.0fms; "+
			"gap between pings on a socket p50=%.0fms p99=%.0fms max≤%.0fms",
			1000*quantile(dd, 0.5), 1000*quantile(dd, 0.99), 1000*quantile(gd, 0.5), 1000*quantile(gd, 0.99), 1000*maxBucket(gd)))
	}
	if end.dropped > 0 || end.pongErrs > 0 {
		r.detail = append(r.detail, "drops: "+dropSummary(end))
	}
	r.detail = append(r.detail, runtimeSummary(start.metrics, end.metrics, secs, txns))
	return r
}

func dropSummary(s snapshot) string {
	return fmt.Sprintf("%d dropped, %d pong writes failed: %s", s.dropped, s.pongErrs, s.reasons)
}

// meanMs is the histogram's mean over the window, in milliseconds.
func meanMs(a, b map[string]float64, name string) float64 {
	n := b[name+"_count"] - a[name+"_count"]
	if n == 0 {
		return math.NaN()
	}
	return 1000 * (b[name+"_sum"] - a[name+"_sum"]) / n
}

// maxBucket is the upper bound of the highest non-empty bucket.
func maxBucket(bs []bucket) float64 {
	for i := len(bs) - 1; i > 0; i-- {
		if bs[i].Count > bs[i-1].Count {
			return bs[i].LE
		}
	}
	if len(bs) > 0 && bs[0].Count > 0 {
		return bs[0].LE
	}
	return 0
}

// runtimeSummary describes the engine's Go runtime over the window from its go_* and
// process_* series: where memory and CPU go besides the transactions themselves.
func runtimeSummary(a, b map[string]float64, secs, txns float64) string {
	delta := func(k string) float64 { return b[k] - a[k] }
	perTxn := func(v float64) float64 {
		if txns == 0 {
			return math.NaN()
		}
		return v / txns
	}
	alloc := delta("go_memstats_alloc_bytes_total")
	mallocs := delta("go_memstats_mallocs_total")
	gcs := delta("go_gc_duration_seconds_count")
	return fmt.Sprintf("engine runtime: goroutines=%.0f sockets=%.0f heap_inuse=%.1fMiB stack_inuse=%.1fMiB sys=%.1fMiB next_gc=%.1fMiB | "+
		"window: alloc %.1fMiB/s (%.1fKiB and %.0f mallocs per ping txn), %.0f GCs (%.2f/s, STW total %.1fms), process_cpu %.1f%%",
		b["go_goroutines"], b["berth_runner_sockets"], mib(uint64(b["go_memstats_heap_inuse_bytes"])),
		mib(uint64(b["go_memstats_stack_inuse_bytes"])), mib(uint64(b["go_memstats_sys_bytes"])),
		mib(uint64(b["go_memstats_next_gc_bytes"])),
		alloc/secs/(1<<20), perTxn(alloc)/1024, perTxn(mallocs), gcs, gcs/secs,
		1000*delta("go_gc_duration_seconds_sum"), 100*delta("process_cpu_seconds_total")/secs)
}
