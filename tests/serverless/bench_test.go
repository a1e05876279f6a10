package serverless

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthhq/berth/bench/sidebyside"
	"github.com/berthhq/berth/tests/internal/harness"
)

// benchRounds is how many actors each engine starts one after the other; burstSize how
// many it is asked for at once.
const (
	benchRounds = 10
	burstSize   = 100
)

// BenchmarkServerlessSideBySide starts actors of a serverless envoy pool on berth and on
// the Rivet engine 2.3.19 in one run, each engine with its own rivetkit 2.3.19 app served by
// rivetkit's serverless handler on loopback (docs/serverless.md § 7 has the reference's own
// figures):
//   - start: an actor created (POST /actors) until its first action answers through the
//     gateway, one after the other, the engines alternating; every one is a new POST
//     {url}/start, the app's envoy already connected (rivetkit keeps one per process);
//   - burst: burstSize actors created at once, each until its first answer (median, slowest).
//
// min_runners has no effect on envoy pools (the reference makes no /start ahead of demand),
// so they have no warm-pool row; runner pools (rivetkit 2.2.1) have (runnerPoolRows). The
// envoy and runner rows are sub-benchmarks (-bench 'ServerlessSideBySide/runner' runs the
// latter alone). Reported: berth-…-ms, ref-…-ms and their ratios.
func BenchmarkServerlessSideBySide(b *testing.B) {
	needApps(b)
	berth := startLoopbackEngine(b)
	refURL, _ := harness.StartReference(b)
	engines := []string{berth.URL, refURL}
	b.Logf("berth is %s, the reference %s", engines[0], engines[1])
	b.Run("envoy", func(b *testing.B) { report(b, envoyPoolRows(b, engines)) })
	b.Run("runner", func(b *testing.B) { report(b, runnerPoolRows(b, engines)) })
}

// envoyPoolRows runs the envoy-pool rows (rivetkit 2.3.19), each engine with its own app.
func envoyPoolRows(b *testing.B, engines []string) []row {
	for i, engine := range engines {
		app, _ := startApp(b, []string{"berth", "reference"}[i]+" app", filepath.Join(harness.NPMDir, "..", "npm23"), "serverless-app.mjs",
			"RIVET_ENDPOINT="+engine, "RIVET_RUN_SERVICES=0")
		body := map[string]any{"datacenters": map[string]any{"default": map[string]any{
			"serverless": map[string]any{"url": app, "request_lifespan": 3600}}}}
		if status, out := send(engine, http.MethodPut, "/runner-configs/bench?namespace=default", body); status != http.StatusOK {
			b.Fatalf("PUT on %s: %d %s", engine, status, out)
		}
		mustStart(b, engine, "bench", "warm") // the app's envoy connects
	}
	start := make([][]time.Duration, 2)
	for round := range benchRounds {
		for j := range engines {
			i := (round + j) % 2 // each engine goes first every other round
			start[i] = append(start[i], mustStart(b, engines[i], "bench", "s"+strconv.Itoa(round)))
		}
	}
	burst := make([][]time.Duration, 2)
	for i, engine := range engines {
		burst[i] = startMany(b, engine, "bench", burstSize)
	}
	return []row{{"start-p50", start, 50}, {"burst-p50", burst, 50}, {"burst-max", burst, 100}}
}

// row is one side-by-side figure: percentile p of each engine's times.
type row struct {
	name string
	d    [][]time.Duration
	p    float64
}

// report reports berth-…-ms, ref-…-ms and their ratio for each row.
func report(b *testing.B, rows []row) {
	for _, m := range rows {
		bm, ref := ms(sidebyside.Percentile(m.d[0], m.p)), ms(sidebyside.Percentile(m.d[1], m.p))
		b.ReportMetric(bm, "berth-"+m.name+"-ms")
		b.ReportMetric(ref, "ref-"+m.name+"-ms")
		b.ReportMetric(bm/ref, "ratio-"+m.name)
	}
}

// lastActor is the id of the last actor startOne started (for the warm rows' destroys).
var lastActor atomic.Value

// runnerPoolRows runs the runner-pool rows (rivetkit 2.2.1, docs/serverless.md § 5), each
// engine with its own 2.2.1 app and three pools:
//   - runner-start: an actor of an empty pool of one slot per runner until its first
//     answer: a new GET /start
//     and runner for each (the earlier actors stay awake on theirs);
//   - runner-warm: the same with min_runners: 1, the actor destroyed after each round, so
//     each lands on the warm runner with no /start;
//   - runner-burst: burstSize actors at once on an empty pool of 10 slots per runner (10
//     requests and runners; median, slowest).
func runnerPoolRows(b *testing.B, engines []string) []row {
	for i, engine := range engines {
		app, _ := startApp(b, []string{"berth", "reference"}[i]+" 2.2.1 app", harness.NPMDir, "serverless-app.mjs", "RIVET_ENDPOINT="+engine)
		for pool, extra := range map[string]map[string]any{"r-start": nil, "r-warm": {"min_runners": 1}, "r-burst": {"slots_per_runner": 10}} {
			sl := map[string]any{"url": app, "request_lifespan": 3600, "slots_per_runner": 1}
			for k, v := range extra {
				sl[k] = v
			}
			body := map[string]any{"datacenters": map[string]any{"default": map[string]any{"serverless": sl}}}
			if status, out := send(engine, http.MethodPut, "/runner-configs/"+pool+"?namespace=default", body); status != http.StatusOK {
				b.Fatalf("PUT %s on %s: %d %s", pool, engine, status, out)
			}
		}
		mustStart(b, engine, "r-warm", "warm-up") // the warm runner is connected
		destroy(b, engine, lastActor.Load().(string))
	}
	cold, warm := make([][]time.Duration, 2), make([][]time.Duration, 2)
	for round := range benchRounds {
		for j := range engines {
			i := (round + j) % 2
			cold[i] = append(cold[i], mustStart(b, engines[i], "r-start", "c"+strconv.Itoa(round)))
			warm[i] = append(warm[i], mustStart(b, engines[i], "r-warm", "w"+strconv.Itoa(round)))
			destroy(b, engines[i], lastActor.Load().(string))
		}
	}
	// Under heavy load either engine may fail some of the burst (the reference's creates
	// answered 500 after their transaction retries, load average 18): how many is reported.
	burst := make([][]time.Duration, 2)
	for i, engine := range engines {
		var errs []error
		burst[i], errs = tryMany(engine, "r-burst", burstSize)
		b.ReportMetric(float64(len(errs)), []string{"berth", "ref"}[i]+"-runner-burst-failed")
		if len(errs) > 0 {
			b.Logf("%d of %d actors failed on %s, the first: %v", len(errs), burstSize, engine, errs[0])
		}
		if len(burst[i]) > 0 {
			b.Logf("%s's burst: %d answered, median %v, slowest %v", engine, len(burst[i]),
				sidebyside.Percentile(burst[i], 50), sidebyside.Percentile(burst[i], 100))
		}
	}
	rows := []row{{"runner-start-p50", cold, 50}, {"runner-warm-p50", warm, 50}}
	if len(burst[0]) == 0 || len(burst[1]) == 0 {
		b.Logf("no burst rows: every actor of the burst failed on one engine")
		return rows
	}
	return append(rows, row{"runner-burst-p50", burst, 50}, row{"runner-burst-max", burst, 100})
}

// destroy destroys actor aid on engine.
func destroy(tb testing.TB, engine, aid string) {
	tb.Helper()
	if status, out := send(engine, http.MethodDelete, "/actors/"+aid+"?namespace=default", nil); status != http.StatusOK {
		tb.Fatalf("destroy %s on %s: %d %s", aid, engine, status, out)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// mustStart is startOne, failing tb on an error.
func mustStart(tb testing.TB, engine, pool, key string) time.Duration {
	tb.Helper()
	d, err := startOne(engine, pool, key)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// startOne creates an actor of pool on engine with key and calls its increment
// action until it answers 200 (the gateway of either engine may answer an error while the
// actor starts); it returns the time from the create to that answer.
func startOne(engine, pool, key string) (time.Duration, error) {
	t0 := time.Now()
	status, out := send(engine, http.MethodPost, "/actors?namespace=default",
		map[string]any{"name": "counter", "key": key, "runner_name_selector": pool, "crash_policy": "sleep"})
	if status != http.StatusOK {
		return 0, fmt.Errorf("create on %s: %d %s", engine, status, out)
	}
	var created struct {
		Actor struct {
			ActorID string `json:"actor_id"`
		} `json:"actor"`
	}
	if err := json.Unmarshal(out, &created); err != nil {
		return 0, err
	}
	deadline := t0.Add(60 * time.Second)
	for {
		status, out = send(engine, http.MethodPost, "/gateway/"+created.Actor.ActorID+"/action/increment", map[string]any{"args": []int{1}})
		if status == http.StatusOK {
			lastActor.Store(created.Actor.ActorID)
			return time.Since(t0), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("actor %s on %s: no answer in 60 s, last %d %s", key, engine, status, out)
		}
		time.Sleep(10 * time.Millisecond) // retry interval while the actor starts
	}
}

// startMany runs n startOne at once and returns their times, failing tb if any failed.
func startMany(tb testing.TB, engine, pool string, n int) []time.Duration {
	tb.Helper()
	out, errs := tryMany(engine, pool, n)
	if len(errs) > 0 {
		tb.Fatalf("%d of %d actors failed on %s, the first: %v", len(errs), n, engine, errs[0])
	}
	return out
}

// tryMany runs n startOne at once and returns the times of those that answered and the
// errors of the others.
func tryMany(engine, pool string, n int) ([]time.Duration, []error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	out := make([]time.Duration, 0, n)
	prefix := fmt.Sprintf("burst-%d", time.Now().UnixNano())
	for i := range n {
		wg.Go(func() {
			d, err := startOne(engine, pool, prefix+"-"+strconv.Itoa(i))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			out = append(out, d)
		})
	}
	wg.Wait()
	return out, errs
}

// send makes one JSON request to engine (no token: both engines run without one here).
func send(engine, method, path string, body any) (int, []byte) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(method, engine+path, bytes.NewReader(b))
	if err != nil {
		return 0, []byte(err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Rivet-Encoding", "json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp.StatusCode, out.Bytes()
}
