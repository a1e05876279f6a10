package rivetkit23

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/bench/sidebyside"
	"github.com/berthhq/berth/tests/internal/harness"
	"github.com/berthhq/berth/tests/proc"
)

// BenchmarkRivetkit23SideBySide runs berth (file store, each commit synced), berth on a file
// store without fsync (sync=false) and the Rivet engine 2.3.19 side by side, each with its own
// copy of the same rivetkit 2.3.19 app (tests/npm23/rivetkit-bench.mjs, one envoy), and
// measures through each engine's gateway with query routing, one sequential
// request at a time on one keep-alive connection:
//
//   - the round trip of a plain action (counter.get: no write),
//   - of an action that inserts one row into the actor's SQLite database (rows.insert: the
//     actor commits its dirty pages to the engine before it answers),
//   - of an action that reads it (rows.count: pages from the actor's cache),
//   - inside the actor, the time the SQLite VFS waited on the engine for each insert's commit
//     (rivetkit's native database metrics),
//   - from the envoy client's Prometheus histogram, the mean time of its SqliteCommit and
//     SqliteGetPages requests to the engine (GetPages happen only when an actor wakes with a
//     cold page cache: wakeActors actors are put to sleep and each woken once),
//   - the engine's CPU per insert action.
//
// rivetkit's envoy socket does not set TCP_NODELAY (seen with strace): a small frame it sends
// while an earlier one is unacknowledged waits for the engine's delayed ACK (40 ms on Linux).
// The GetPages of a wake, sent right behind the actor's start events, pays that on both
// engines (~40 ms; with TCP_NODELAY forced on node's sockets by an LD_PRELOAD shim it was
// 3–6 ms on both); the raw cost of a GetPages in berth is engine/hostsock's
// BenchmarkSqliteGetPages.
//
// The engines alternate: each repetition measures every engine, the first changing each time.
// Run alone, once (it starts six processes and takes about a minute):
//
//	go test -run '^$' -bench Rivetkit23SideBySide -benchtime 1x ./tests/rivetkit23/
//
// It skips without node, and when the reference binary cannot be had (see
// sidebyside.ReferenceBinary); it fails when tests/npm23 is not installed.
func BenchmarkRivetkit23SideBySide(b *testing.B) {
	needRivetkit23Bench(b)
	load0 := loadAverage()
	refURL, refPID := harness.StartReference(b)

	be := harness.NewEngine(b, harness.Settings{}, "file://"+b.TempDir())
	be.Start()
	nosync := harness.NewEngine(b, harness.Settings{}, "file://"+b.TempDir()+"?sync=false")
	nosync.Start()
	engines := []*benchEngine{
		newBenchEngine(b, "berth", be.URL, be.PID(), 1),
		newBenchEngine(b, "berth nosync", nosync.URL, nosync.PID(), 2),
		newBenchEngine(b, "rivet "+sidebyside.RefVersion, refURL, refPID, 3),
	}
	for _, e := range engines {
		e.warmUp()
	}

	b.ResetTimer()
	before := make([]sqliteRequests, len(engines))
	for i, e := range engines {
		before[i] = e.scrape()
	}
	for rep := range benchReps {
		for k := range engines {
			e := engines[(k+rep)%len(engines)] // alternate which engine goes first
			e.measure(rep)
		}
	}
	for i, e := range engines {
		e.commitReq = e.scrape().minus(before[i]).commit
	}
	for _, e := range engines {
		e.measureWakes()
	}
	b.StopTimer()

	reportRivetkit23(b, engines, load0, loadAverage())
}

const (
	benchWarmup = 50  // actions of each kind before anything is recorded
	benchReps   = 4   // repetitions, alternating the engines
	benchPerRep = 125 // recorded actions of each kind per engine and repetition
	wakeActors  = 30  // actors put to sleep and woken once each (the wake p50 and GetPages figures)
)

// benchEngine is one engine with its app, and what was measured through it.
type benchEngine struct {
	b      *testing.B
	name   string
	url    string
	pid    int // the engine's process, for its CPU time
	idx    int // this engine's part of the client addresses
	app    *harness.Proc
	client *http.Client
	sent   int // requests sent, for the client address

	plain, write, read []time.Duration // action round trips
	commitWait         []time.Duration // per insert: the VFS's wait on the engine's commit
	commits            int             // commits those inserts made
	writeCPU           time.Duration   // engine CPU during the write loops
	commitReq          reqStat         // the envoy client's SqliteCommit requests, write loops
	getPagesReq        reqStat         // its SqliteGetPages requests, during the wakes
	wake               []time.Duration // round trip of the first action of a sleeping actor
}

// newBenchEngine starts the bench app against the engine at url and waits until its envoy
// is ready.
func newBenchEngine(b *testing.B, name, url string, pid, idx int) *benchEngine {
	b.Helper()
	node, err := filepath.Abs(node22)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(node, "rivetkit-bench.mjs")
	cmd.Dir = npm23Dir
	cmd.Env = append(os.Environ(), "BERTH_ENDPOINT="+url, "RIVET_RUN_SERVICES=0")
	app := harness.StartProc(b, name+"-app", cmd)
	app.AwaitEv("ready", stepWithin)
	tr := &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	return &benchEngine{b: b, name: name, url: url, pid: pid, idx: idx, app: app,
		client: &http.Client{Transport: tr, Timeout: stepWithin}}
}

// action runs action of the actor of kind name with key once, query-routed (getOrCreate),
// and returns its status, its output and how long it took.
func (e *benchEngine) action(name, key, action string, args ...any) (int, json.RawMessage, time.Duration, error) {
	if args == nil {
		args = []any{}
	}
	q := url.Values{"rvt-namespace": {"default"}, "rvt-method": {"getOrCreate"}, "rvt-runner": {"default"},
		"rvt-key": {key}, "rvt-crash-policy": {"sleep"}}
	body, err := json.Marshal(map[string]any{"args": args})
	if err != nil {
		return 0, nil, 0, err
	}
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/gateway/%s/action/%s?%s", e.url, name, action, q.Encode()), bytes.NewReader(body))
	if err != nil {
		return 0, nil, 0, err
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("x-rivet-encoding", "json")
	// Both engines limit a client address to 10,000 requests a minute: move on every 4,000.
	req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.23.%d.%d", e.idx, e.sent/4000%250))
	e.sent++
	start := time.Now()
	res, err := e.client.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	took := time.Since(start)
	if err != nil {
		return 0, nil, 0, err
	}
	if res.StatusCode != http.StatusOK {
		return res.StatusCode, b, took, nil
	}
	var out struct {
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return 0, nil, 0, fmt.Errorf("%s.%s: %s: %w", name, action, b, err)
	}
	return res.StatusCode, out.Output, took, nil
}

// mustAction is action that fails the benchmark unless the answer is 200.
func (e *benchEngine) mustAction(name, key, action string, args ...any) (json.RawMessage, time.Duration) {
	e.b.Helper()
	status, out, took, err := e.action(name, key, action, args...)
	if err != nil || status != http.StatusOK {
		e.b.Fatalf("%s: %s.%s on %q: %d %s %v", e.name, name, action, key, status, out, err)
	}
	return out, took
}

// warmUp creates the measured actors, waiting until they answer (a fresh engine may need a
// moment for the envoy pool's runner configuration), then runs benchWarmup actions of each
// kind unrecorded.
func (e *benchEngine) warmUp() {
	e.b.Helper()
	deadline := time.Now().Add(stepWithin)
	for _, a := range []struct{ name, action string }{{"counter", "get"}, {"rows", "count"}} {
		for {
			status, out, _, err := e.action(a.name, "bench", a.action)
			if err == nil && status == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				e.b.Fatalf("%s: %s.%s does not answer within %v: %d %s %v", e.name, a.name, a.action, stepWithin, status, out, err)
			}
			time.Sleep(200 * time.Millisecond) // polling interval while the actor starts
		}
	}
	for i := range benchWarmup {
		e.mustAction("counter", "bench", "get")
		e.mustAction("rows", "bench", "insert", "warm-up "+strconv.Itoa(i))
		e.mustAction("rows", "bench", "count")
	}
}

// measure records benchPerRep actions of each kind.
func (e *benchEngine) measure(rep int) {
	e.b.Helper()
	for range benchPerRep {
		_, d := e.mustAction("counter", "bench", "get")
		e.plain = append(e.plain, d)
	}
	cpu0 := proc.CPUTime(e.pid)
	for i := range benchPerRep {
		out, d := e.mustAction("rows", "bench", "insert", fmt.Sprintf("row %d.%d", rep, i))
		e.write = append(e.write, d)
		var ins struct {
			CommitNs int64 `json:"commitNs"`
			Commits  int   `json:"commits"`
		}
		if err := json.Unmarshal(out, &ins); err != nil {
			e.b.Fatalf("%s: rows.insert: %s: %v", e.name, out, err)
		}
		if ins.Commits >= 0 { // -1: the app has no native metrics
			e.commitWait = append(e.commitWait, time.Duration(ins.CommitNs))
			e.commits += ins.Commits
		}
	}
	e.writeCPU += proc.CPUTime(e.pid) - cpu0
	for range benchPerRep {
		_, d := e.mustAction("rows", "bench", "count")
		e.read = append(e.read, d)
	}
}

// measureWakes gives wakeActors fresh actors a row each, puts them to sleep, and then wakes
// each once with a read: a woken actor's database starts with a cold page cache, so it asks
// the engine for pages. Each actor wakes only once (the Rivet engine delays repeated wakes
// of one actor).
func (e *benchEngine) measureWakes() {
	e.b.Helper()
	key := func(i int) string { return "wake-" + strconv.Itoa(i) }
	for i := range wakeActors {
		e.mustAction("rows", key(i), "insert", "before sleeping")
	}
	for i := range wakeActors {
		e.mustAction("rows", key(i), "goToSleep")
	}
	for range wakeActors {
		e.app.Await("sleep", stepWithin, func(ev harness.Event) bool { return ev.Ev == "sleep" })
	}
	time.Sleep(time.Second) // let the engine record the stops before the wakes
	before := e.scrape()
	for i := range wakeActors {
		out, d := e.mustAction("rows", key(i), "count")
		if string(out) != "1" {
			e.b.Fatalf("%s: rows.count on %q after waking = %s, want 1", e.name, key(i), out)
		}
		e.wake = append(e.wake, d)
	}
	e.getPagesReq = e.scrape().minus(before).getPages
}

// reqStat is the sum and count of a Prometheus histogram.
type reqStat struct {
	sum   float64 // seconds
	count float64
}

func (s reqStat) mean() time.Duration {
	if s.count == 0 {
		return 0
	}
	return time.Duration(s.sum / s.count * float64(time.Second))
}

// sqliteRequests is the envoy client's SQLite request histogram by kind.
type sqliteRequests struct{ commit, getPages reqStat }

func (a sqliteRequests) minus(b sqliteRequests) sqliteRequests {
	return sqliteRequests{
		commit:   reqStat{a.commit.sum - b.commit.sum, a.commit.count - b.commit.count},
		getPages: reqStat{a.getPages.sum - b.getPages.sum, a.getPages.count - b.getPages.count},
	}
}

// scrape asks the app for its SQLite request histogram (the "metrics" command).
func (e *benchEngine) scrape() sqliteRequests {
	e.b.Helper()
	e.app.Send("metrics")
	ev := e.app.AwaitEv("metrics", stepWithin)
	var r sqliteRequests
	sc := bufio.NewScanner(strings.NewReader(ev.Body))
	for sc.Scan() {
		// name_sum{kind="commit"} 0.0051
		series, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			e.b.Fatalf("%s: metrics line %q: %v", e.name, sc.Text(), err)
		}
		var s *reqStat
		switch {
		case strings.Contains(series, `kind="commit"`):
			s = &r.commit
		case strings.Contains(series, `kind="get_pages"`):
			s = &r.getPages
		default:
			continue
		}
		if strings.Contains(series, "_sum{") {
			s.sum += v
		} else {
			s.count += v
		}
	}
	return r
}

// reportRivetkit23 prints the table and reports the figures of berth (engines[0]) and of the
// reference (the last engine) and their ratios; the other berth columns are in the table only.
func reportRivetkit23(b *testing.B, engines []*benchEngine, load0, load1 string) {
	ref := engines[len(engines)-1]
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	pct := func(d []time.Duration, p float64) float64 { return ms(sidebyside.Percentile(d, p)) }
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-40s", "")
	for _, e := range engines {
		fmt.Fprintf(&sb, "%14s", e.name)
	}
	for _, e := range engines[:len(engines)-1] {
		fmt.Fprintf(&sb, "%20s", e.name+"/rivet")
	}
	sb.WriteString("\n")
	row := func(name string, v func(*benchEngine) float64, metric string) {
		fmt.Fprintf(&sb, "%-40s", name)
		for _, e := range engines {
			fmt.Fprintf(&sb, "%14.3f", v(e))
		}
		for _, e := range engines[:len(engines)-1] {
			fmt.Fprintf(&sb, "%20.3f", v(e)/v(ref))
		}
		sb.WriteString("\n")
		if metric != "" {
			x, y := v(engines[0]), v(ref)
			b.ReportMetric(x, "berth-"+metric)
			b.ReportMetric(y, "rivet-"+metric)
			b.ReportMetric(x/y, metric+"-ratio")
		}
	}
	row("plain action p50 ms", func(e *benchEngine) float64 { return pct(e.plain, 50) }, "plain-p50-ms")
	row("plain action p99 ms", func(e *benchEngine) float64 { return pct(e.plain, 99) }, "plain-p99-ms")
	row("SQLite insert action p50 ms", func(e *benchEngine) float64 { return pct(e.write, 50) }, "insert-p50-ms")
	row("SQLite insert action p99 ms", func(e *benchEngine) float64 { return pct(e.write, 99) }, "insert-p99-ms")
	row("SQLite read action p50 ms", func(e *benchEngine) float64 { return pct(e.read, 50) }, "read-p50-ms")
	row("SQLite read action p99 ms", func(e *benchEngine) float64 { return pct(e.read, 99) }, "read-p99-ms")
	row("insert − plain, p50 ms", func(e *benchEngine) float64 { return pct(e.write, 50) - pct(e.plain, 50) }, "")
	row("commit wait in the VFS p50 ms", func(e *benchEngine) float64 { return pct(e.commitWait, 50) }, "commit-p50-ms")
	row("commit wait in the VFS p99 ms", func(e *benchEngine) float64 { return pct(e.commitWait, 99) }, "commit-p99-ms")
	row("commits per insert", func(e *benchEngine) float64 { return float64(e.commits) / float64(len(e.commitWait)) }, "")
	row("envoy SqliteCommit mean ms", func(e *benchEngine) float64 { return ms(e.commitReq.mean()) }, "commit-req-mean-ms")
	row("envoy SqliteCommit requests", func(e *benchEngine) float64 { return e.commitReq.count }, "")
	row("engine CPU per insert action ms", func(e *benchEngine) float64 { return ms(e.writeCPU) / float64(len(e.write)) }, "insert-cpu-ms")
	row("wake (first action) p50 ms", func(e *benchEngine) float64 { return pct(e.wake, 50) }, "wake-p50-ms")
	row("envoy SqliteGetPages mean ms (wakes)", func(e *benchEngine) float64 { return ms(e.getPagesReq.mean()) }, "getpages-mean-ms")
	row("envoy SqliteGetPages requests (wakes)", func(e *benchEngine) float64 { return e.getPagesReq.count }, "")
	// The table goes to stdout whole: the testing package keeps only the first ten lines of
	// a benchmark's log.
	fmt.Printf("rivetkit 2.3.19 side by side: %d sequential actions of each kind per engine after %d warm-up, in %d alternating repetitions; %d wakes; load average %s before, %s after:\n%s",
		benchReps*benchPerRep, benchWarmup, benchReps, wakeActors, load0, load1, sb.String())
	b.Logf("load average %s before, %s after", load0, load1)
	b.ReportMetric(0, "ns/op")
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	return strings.Join(f[:min(3, len(f))], " ")
}

// needRivetkit23Bench is needRivetkit23 for a benchmark.
func needRivetkit23Bench(b *testing.B) {
	b.Helper()
	harness.NeedNode(b)
	for _, p := range []string{node22, filepath.Join(npm23Dir, "node_modules", "rivetkit", "package.json")} {
		if _, err := os.Stat(p); err != nil {
			b.Fatalf("%s is missing: run `npm install --prefix tests/npm --no-save` and `npm install --prefix tests/npm23 --no-save` (%v)", p, err)
		}
	}
}
