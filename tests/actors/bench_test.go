package actors

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/sdk/runner"
	"github.com/berthhq/berth/tests/internal/harness"
)

// benchConfig is BenchmarkActors' configuration, from the environment.
type benchConfig struct {
	Latency  int           // ACTORS_BENCH_LATENCY, default 1000: actors created one at a time
	Clients  int           // ACTORS_BENCH_CLIENTS, default 16: concurrent creators
	Window   time.Duration // ACTORS_BENCH_WINDOW, default 10s: how long they create
	Sleeping int           // ACTORS_BENCH_SLEEPING, default 100000: sleeping actors measured for the memory figure
	Warmup   int           // ACTORS_BENCH_WARMUP, default 200000: sleeping actors created before them
	DBQuery  string        // ACTORS_BENCH_DB_QUERY: appended to the store URL, e.g. ?sync=false
}

func loadBenchConfig(b *testing.B) benchConfig {
	b.Helper()
	c := benchConfig{Latency: 1000, Clients: 16, Window: 10 * time.Second, Sleeping: 100000, Warmup: 200000}
	for name, into := range map[string]*int{"ACTORS_BENCH_LATENCY": &c.Latency, "ACTORS_BENCH_CLIENTS": &c.Clients, "ACTORS_BENCH_SLEEPING": &c.Sleeping, "ACTORS_BENCH_WARMUP": &c.Warmup} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				b.Fatalf("%s=%q: want a positive integer", name, v)
			}
			*into = n
		}
	}
	c.DBQuery = os.Getenv("ACTORS_BENCH_DB_QUERY")
	if c.DBQuery != "" && !strings.HasPrefix(c.DBQuery, "?") {
		b.Fatalf("ACTORS_BENCH_DB_QUERY=%q: want a query string such as ?sync=false", c.DBQuery)
	}
	if v := os.Getenv("ACTORS_BENCH_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			b.Fatalf("ACTORS_BENCH_WINDOW=%q: want a duration of at least 1s", v)
		}
		c.Window = d
	}
	return c
}

// BenchmarkActors runs one berth process (embedded file store, default pegboard timings)
// with benchRunners Go runners (sdk/runner, in this process, benchSlots slots each) whose
// actor starts at once, and measures from the client side:
//
//   - create-to-running, over ACTORS_BENCH_LATENCY actors created one after the other:
//     create_p50/p99_ms runs from just before POST /actors is sent until the runner's Start is
//     called for the actor (the start command arrived; Start returns at once and the runner
//     sends Running); connectable_p50/p99_ms runs until GET /actors shows its connectable_ts
//     (the engine has applied Running), polled back to back once Start was called;
//     post_p50_ms is the POST's own answer time;
//   - creates per second with ACTORS_BENCH_CLIENTS (16) clients creating for
//     ACTORS_BENCH_WINDOW (10 s): every create must succeed (any failure fails the
//     benchmark), and every created actor must then start on a runner;
//   - memory per sleeping actor: a fresh engine with a pool whose runner has gone, so that
//     each actor created with crash policy sleep sleeps at once (no_capacity); a round of
//     ACTORS_BENCH_WARMUP (200,000) creates, then one of ACTORS_BENCH_SLEEPING (100,000), the
//     engine's VmRSS (/proc) settled after each (see sleepingMemory):
//     rss_mib_per_100k_sleeping is the second round's growth, what sleeping actors cost once
//     the bounded caches are full; rss_cold_… the first round's, per 100,000.
//
// It runs once whatever b.N is. Goals (issue 5 item 8): create-to-running p50 ≤ 3 ms, ≥ 1,000
// creates/s, RSS growth ≤ 10 MiB per 100,000 sleeping actors.
func BenchmarkActors(b *testing.B) {
	cfg := loadBenchConfig(b)
	b.ReportMetric(0, "ns/op") // fixed work, not per op
	loadBefore := loadavg()

	e := harness.NewEngine(b, harness.Settings{}, "file://"+filepath.Join(b.TempDir(), "db")+cfg.DBQuery)
	e.Start()
	starts := newStartLog()
	for i := range benchRunners {
		startBenchRunner(b, e.URL, "bench", fmt.Sprintf("bench-%d", i), benchSlots, starts)
	}
	c := newBenchClient(b, e.URL)

	// Create-to-running, one at a time.
	var post, start, conn []time.Duration
	for range cfg.Latency {
		t0 := time.Now()
		aid, err := c.create("bench", "sleep")
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		ts := <-starts.wait(aid)
		if err := c.awaitConnectable(aid, 10*time.Second); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		post, start, conn = append(post, t1.Sub(t0)), append(start, ts.Sub(t0)), append(conn, t2.Sub(t0))
	}
	slices.Sort(post)
	slices.Sort(start)
	slices.Sort(conn)

	// Creates per second.
	created, failed, errs, postLat, elapsed := c.createFor(cfg.Clients, cfg.Window, "bench", "sleep")
	rate := float64(len(created)) / elapsed.Seconds()
	if failed > 0 {
		b.Errorf("%d of %d creates failed; first errors:\n%s", failed, failed+len(created), strings.Join(errs, "\n"))
	}
	var notStarted int
	deadline := time.After(60 * time.Second)
	for _, aid := range created {
		select {
		case <-starts.wait(aid):
		case <-deadline:
			notStarted++
		}
	}
	if notStarted > 0 {
		b.Errorf("%d of the %d actors created under load did not start within 60 s", notStarted, len(created))
	}
	slices.Sort(postLat)

	// Memory per sleeping actor, on a fresh engine.
	mem := sleepingMemory(b, cfg)

	loadAfter := loadavg()
	b.ReportMetric(ms(pct(start, 50)), "create_p50_ms")
	b.ReportMetric(ms(pct(start, 99)), "create_p99_ms")
	b.ReportMetric(ms(pct(conn, 50)), "connectable_p50_ms")
	b.ReportMetric(ms(pct(conn, 99)), "connectable_p99_ms")
	b.ReportMetric(ms(pct(post, 50)), "post_p50_ms")
	b.ReportMetric(rate, "creates/s")
	b.ReportMetric(float64(failed), "create_failures")
	b.ReportMetric(mem.warmPer, "rss_mib_per_100k_sleeping")
	b.ReportMetric(mem.growth, "rss_cold_mib_per_100k_sleeping")
	b.Logf("create-to-running (%d actors, one at a time): to the runner's Start p50 %.2f ms p99 %.2f ms; to connectable_ts in GET p50 %.2f ms p99 %.2f ms; POST answered p50 %.2f ms p99 %.2f ms",
		cfg.Latency, ms(pct(start, 50)), ms(pct(start, 99)), ms(pct(conn, 50)), ms(pct(conn, 99)), ms(pct(post, 50)), ms(pct(post, 99)))
	b.Logf("creates: %d in %v with %d clients = %.0f/s, %d failed, %d not started; POST under load p50 %.2f ms p99 %.2f ms max %.2f ms",
		len(created), elapsed.Round(time.Millisecond), cfg.Clients, rate, failed, notStarted, ms(pct(postLat, 50)), ms(pct(postLat, 99)), ms(pct(postLat, 100)))
	b.Logf("sleeping: %d actors created in %v (%.0f/s); engine VmRSS settled %.1f MiB before, %.1f after %d actors, %.1f after %d (heap in use after GC %.1f, %.1f, %.1f MiB; VmHWM %.1f MiB): +%.1f MiB per 100,000 sleeping actors once warm, +%.1f MiB per 100,000 from empty (caches filling included)",
		cfg.Warmup, mem.took.Round(time.Millisecond), float64(cfg.Warmup)/mem.took.Seconds(), mem.before, mem.cold, cfg.Warmup, mem.warm, cfg.Warmup+cfg.Sleeping,
		mem.heap[0], mem.heap[1], mem.heap[2], mem.peak, mem.warmPer, mem.growth)
	b.Logf("load average before %s, after %s", loadBefore, loadAfter)
}

const (
	benchRunners = 4
	benchSlots   = 10000
)

type memResult struct {
	before  float64       // VmRSS before the first actor, settled, MiB
	cold    float64       // VmRSS after the cfg.Warmup actors, settled, MiB
	warm    float64       // VmRSS after cfg.Sleeping more, settled, MiB
	peak    float64       // VmHWM, MiB
	heap    [3]float64    // go_memstats_heap_inuse_bytes at before, cold, warm (after a GC), MiB
	growth  float64       // (cold − before) per 100,000 actors, MiB: caches filling included
	warmPer float64       // (warm − cold) per 100,000 actors, MiB: what each sleeping actor costs
	took    time.Duration // to create the cfg.Warmup
}

// sleepingMemory creates cfg.Warmup and then cfg.Sleeping actors that sleep at once on a
// fresh engine, and measures its memory settled before, between and after them. The first round
// also fills what is bounded but starts empty (the store's block cache and memtables, the
// conflict window of recent commits, the Go heap's working size); the second round's
// growth is what sleeping actors themselves cost. Settled: after a GC (the engine serves
// pprof here) and once VmRSS has stopped falling.
func sleepingMemory(b *testing.B, cfg benchConfig) memResult {
	e := harness.NewEngine(b, harness.Settings{Env: []string{"BERTH__metrics__pprof=true"}}, "file://"+filepath.Join(b.TempDir(), "db")+cfg.DBQuery)
	e.Start()
	// A runner of the pool connects once (the pool's runner config is made) and leaves.
	r := startBenchRunner(b, e.URL, "dormant", "dormant", 1, newStartLog())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Shutdown(ctx, true); err != nil {
		b.Fatal(err)
	}
	c := newBenchClient(b, e.URL)
	if _, err := c.create("dormant", "sleep"); err != nil { // one first: lazy initialisations
		b.Fatal(err)
	}
	var m memResult
	m.before, m.heap[0] = settle(b, e)
	t0 := time.Now()
	createSleeping(b, c, cfg.Clients, cfg.Warmup)
	m.took = time.Since(t0)
	m.cold, m.heap[1] = settle(b, e)
	createSleeping(b, c, cfg.Clients, cfg.Sleeping)
	m.warm, m.heap[2] = settle(b, e)
	m.peak = procStatusMiB(b, e.PID(), "VmHWM:")
	m.growth = (m.cold - m.before) * 100000 / float64(cfg.Warmup)
	m.warmPer = (m.warm - m.cold) * 100000 / float64(cfg.Sleeping)
	return m
}

// createSleeping creates n sleeping actors with clients clients.
func createSleeping(b *testing.B, c *benchClient, clients, n int) {
	var next, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if _, err := c.create("dormant", "sleep"); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	wg.Wait()
	if bad := failed.Load(); bad > 0 {
		b.Errorf("%d of %d creates of sleeping actors failed; first: %v", bad, n, firstErr.Load())
	}
}

// settle lets the store's conflict window pass, makes the engine collect its garbage, waits until its VmRSS stops falling (the Go
// runtime returns freed memory to the system gradually; at most 30 s) and returns VmRSS and
// the heap in use, in MiB.
func settle(b *testing.B, e *harness.Engine) (rss, heap float64) {
	b.Helper()
	// The store keeps the conflict history of the last 5 s of commits (FoundationDB's
	// window) and forgets it within a second after: memory of the burst, not of the actors.
	time.Sleep(time.Duration(udb.MVCCWindowVersions/udb.VersionsPerSecond)*time.Second + 1500*time.Millisecond)
	profile := strings.TrimSuffix(e.MetricsURL(), "/metrics") + "/debug/pprof/heap?gc=1"
	resp, err := http.Get(profile)
	if err != nil {
		b.Fatalf("GC through %s: %v", profile, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	rss = rssMiB(b, e.PID())
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for still, deadline := 0, time.Now().Add(30*time.Second); still < 4 && time.Now().Before(deadline); {
		<-tick.C
		now := rssMiB(b, e.PID())
		if now > rss-0.25 {
			still++ // no longer falling: four readings (2 s) in a row
		} else {
			still = 0
		}
		rss = min(rss, now)
	}
	heap, held := goMemMiB(e)
	b.Logf("settled: VmRSS %.1f MiB; Go heap in use %.1f MiB, held by the Go runtime %.1f MiB, the rest (the store's caches and memtables, outside the Go heap) %.1f MiB",
		rss, heap, held, rss-held)
	return rss, heap
}

// startLog records when the runners' Start was called for each actor.
type startLog struct {
	mu      sync.Mutex
	at      map[string]time.Time
	waiters map[string]chan time.Time
}

func newStartLog() *startLog {
	return &startLog{at: map[string]time.Time{}, waiters: map[string]chan time.Time{}}
}

func (s *startLog) record(aid string) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.at[aid]; ok {
		return // a later generation
	}
	s.at[aid] = now
	if ch, ok := s.waiters[aid]; ok {
		ch <- now
		delete(s.waiters, aid)
	}
}

// wait returns a channel that receives the time actor aid was first started.
func (s *startLog) wait(aid string) <-chan time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan time.Time, 1)
	if t, ok := s.at[aid]; ok {
		ch <- t
	} else {
		s.waiters[aid] = ch
	}
	return ch
}

// benchActor starts at once.
type benchActor struct{ starts *startLog }

func (a benchActor) Start(_ context.Context, ac *runner.ActorContext) error {
	a.starts.record(ac.ID())
	return nil
}

func (benchActor) Stop(context.Context, *runner.ActorContext) error { return nil }

// startBenchRunner connects a Go runner of pool hosting actors named "bench"; the benchmark's
// cleanup shuts it down.
func startBenchRunner(b *testing.B, endpoint, pool, key string, slots uint32, starts *startLog) *runner.Runner {
	b.Helper()
	r, err := runner.New(runner.Config{
		Endpoint: endpoint, Namespace: "default", Name: pool, Key: key, TotalSlots: slots,
		Logger: slog.New(slog.DiscardHandler),
		Actors: map[string]func() runner.Actor{"bench": func() runner.Actor { return benchActor{starts} }},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = r.Shutdown(ctx, true)
	})
	return r
}

// benchClient calls the public API without the contract checks of the tests' client.
type benchClient struct {
	url    string
	client *http.Client
}

func newBenchClient(b *testing.B, url string) *benchClient {
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}
	b.Cleanup(tr.CloseIdleConnections)
	return &benchClient{url: url, client: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

// create creates an actor named "bench" in pool and returns its id; any answer but 200 is an
// error.
func (c *benchClient) create(pool, policy string) (string, error) {
	body := fmt.Sprintf(`{"name":"bench","runner_name_selector":%q,"crash_policy":%q}`, pool, policy)
	resp, err := c.client.Post(c.url+"/actors?namespace=default", "application/json", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("POST /actors: %d %s", resp.StatusCode, b)
	}
	var out struct {
		Actor struct {
			ActorID string `json:"actor_id"`
		} `json:"actor"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Actor.ActorID == "" {
		return "", fmt.Errorf("POST /actors: %v in %s", err, b)
	}
	return out.Actor.ActorID, nil
}

// awaitConnectable polls GET /actors?actor_ids= back to back until connectable_ts is set.
func (c *benchClient) awaitConnectable(aid string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		resp, err := c.client.Get(c.url + "/actors?namespace=default&actor_ids=" + aid)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /actors: %d %s", resp.StatusCode, b)
		}
		if bytes.Contains(b, []byte(`"connectable_ts":`)) && !bytes.Contains(b, []byte(`"connectable_ts":null`)) {
			return nil
		}
	}
	return fmt.Errorf("actor %s not connectable within %v", aid, within)
}

// createFor creates actors from clients goroutines for window; it returns the ids created,
// the failures with their first errors, each POST's time and the time taken.
func (c *benchClient) createFor(clients int, window time.Duration, pool, policy string) (ids []string, failed int, errs []string, lat []time.Duration, elapsed time.Duration) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	t0 := time.Now()
	end := t0.Add(window)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []string
			var myLat []time.Duration
			var myFailed int
			var myErrs []string
			for time.Now().Before(end) {
				s := time.Now()
				aid, err := c.create(pool, policy)
				myLat = append(myLat, time.Since(s))
				if err != nil {
					myFailed++
					if len(myErrs) < 3 {
						myErrs = append(myErrs, err.Error())
					}
					continue
				}
				mine = append(mine, aid)
			}
			mu.Lock()
			defer mu.Unlock()
			ids, lat, failed = append(ids, mine...), append(lat, myLat...), failed+myFailed
			errs = append(errs, myErrs...)
		}()
	}
	wg.Wait()
	return ids, failed, errs, lat, time.Since(t0)
}

// pct is the p-th percentile of sorted ds (p = 100: the largest).
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, len(ds)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// rssMiB is VmRSS of process pid.
func rssMiB(b *testing.B, pid int) float64 { return procStatusMiB(b, pid, "VmRSS:") }

// procStatusMiB reads field (VmRSS:, VmHWM:) of process pid's /proc status, in MiB.
func procStatusMiB(b *testing.B, pid int, field string) float64 {
	b.Helper()
	v, err := readProcStatus(pid, field)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// readProcStatus reads field of /proc/pid/status, in MiB.
func readProcStatus(pid int, field string) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			if err != nil {
				return 0, fmt.Errorf("%s %q: %v", field, v, err)
			}
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// goMemMiB reads the engine's Go memory from its metrics endpoint, in MiB: the heap in use
// (go_memstats_heap_inuse_bytes) and what the Go runtime holds from the system
// (go_memstats_sys_bytes less go_memstats_heap_released_bytes); zeros if it cannot be read.
func goMemMiB(e *harness.Engine) (heapInUse, held float64) {
	u := e.MetricsURL()
	if u == "" {
		return 0, 0
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Get(u)
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	var sys, released float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		f, _ := strconv.ParseFloat(v, 64)
		switch name {
		case "go_memstats_heap_inuse_bytes":
			heapInUse = f / (1 << 20)
		case "go_memstats_sys_bytes":
			sys = f
		case "go_memstats_heap_released_bytes":
			released = f
		}
	}
	return heapInUse, (sys - released) / (1 << 20)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
