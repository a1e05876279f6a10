package storecost

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthhq/berth/engine"
	"github.com/berthhq/berth/engine/config"
	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/pkg/udb/udbcount"
	"github.com/berthhq/berth/sdk/client"
	"github.com/berthhq/berth/sdk/runner"
	"github.com/berthhq/berth/tests/internal/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

const (
	pool      = "bench"
	actorName = "echo"
	// within bounds every wait for the engine.
	within = 60 * time.Second
	// pingSockets is how many runners (or envoys) ping in the ping benchmarks, minPongs how
	// many pongs they measure at least.
	pingSockets = 30
	minPongs    = 20 * pingSockets
)

var quiet = slog.New(slog.DiscardHandler)

// BenchmarkStoreCost reports the store's cost of each user operation on each driver that
// runs here: the embedded store, and PostgreSQL with BERTH_TEST_POSTGRES_URL (`source
// .ci/postgres.sh`). FoundationDB cannot run on this machine; the counts are taken at the
// udb interface, which every driver shares, so they are what FoundationDB would be asked.
func BenchmarkStoreCost(b *testing.B) {
	b.Run("embedded", func(b *testing.B) { benchStore(b, func(testing.TB) string { return "mem://" }) })
	b.Run("postgres", func(b *testing.B) {
		base := os.Getenv("BERTH_TEST_POSTGRES_URL")
		if base == "" {
			b.Skip("BERTH_TEST_POSTGRES_URL is not set: no PostgreSQL server (`source .ci/postgres.sh` starts one)")
		}
		benchStore(b, func(tb testing.TB) string { return harness.SharedStore(tb, base) })
	})
}

func benchStore(b *testing.B, store func(testing.TB) string) {
	f := start(b, store(b), quietTimings)
	f.connect(b, false, "actors")
	ctx := b.Context()
	seq := 0
	next := func(what string) string { seq++; return what + "-" + strconv.Itoa(seq) }

	b.Run("create", func(b *testing.B) {
		f.measure(b, func() {
			f.running(b, f.create(b, client.ActorCreateOptions{}))
		})
	})
	b.Run("get-or-create-new", func(b *testing.B) {
		f.measure(b, func() {
			a, created, err := f.api.Actors().GetOrCreate(ctx, f.opts(next("goc")))
			if err != nil || !created {
				b.Fatalf("get-or-create of a new key: created %v, %v", created, err)
			}
			f.running(b, a.ActorId)
		})
	})
	b.Run("get-or-create-existing", func(b *testing.B) {
		key := next("goc-existing")
		aid := f.keyed(b, key)
		f.measure(b, func() {
			got, created, err := f.api.Actors().GetOrCreate(ctx, f.opts(key))
			if err != nil || created || got.ActorId != aid {
				b.Fatalf("get-or-create of an existing key: %s created %v, %v; want %s", got.ActorId, created, err, aid)
			}
		})
	})
	b.Run("gateway-request", func(b *testing.B) {
		aid := f.create(b, client.ActorCreateOptions{})
		f.running(b, aid)
		f.request(b, aid) // the first request resolves the route
		f.measure(b, func() { f.request(b, aid) })
	})
	b.Run("gateway-request-uncached", func(b *testing.B) {
		// Each actor's first request resolves its route.
		f.measureEach(b, false, func(aid string) { f.request(b, aid) })
	})
	b.Run("gateway-request-by-key", func(b *testing.B) {
		key := next("by-key")
		aid := f.keyed(b, key)
		for _, method := range []string{"get", "getOrCreate&rvt-runner=" + pool} {
			path := "/gateway/" + actorName + "/?rvt-namespace=default&rvt-key=" + key + "&rvt-method=" + method
			f.get(b, path, aid) // the first request resolves the route
			b.Run(strings.Split(method, "&")[0], func(b *testing.B) { f.measure(b, func() { f.get(b, path, aid) }) })
		}
	})
	b.Run("list-page", func(b *testing.B) {
		for range 20 { // at least a page
			f.running(b, f.create(b, client.ActorCreateOptions{}))
		}
		f.measure(b, func() {
			page, err := f.api.Actors().List(ctx, client.ActorListOptions{Name: actorName, Limit: 20})
			if err != nil || len(page.Items) != 20 {
				b.Fatalf("list: %d actors, %v", len(page.Items), err)
			}
		})
	})
	b.Run("sleep", func(b *testing.B) { f.measureEach(b, false, func(aid string) { f.sleep(b, aid) }) })
	b.Run("wake", func(b *testing.B) {
		f.measureEach(b, true, func(aid string) {
			f.request(b, aid) // a request to a sleeping actor wakes it
			f.running(b, aid)
		})
	})
	b.Run("destroy", func(b *testing.B) {
		f.measureEach(b, false, func(aid string) {
			if err := f.api.Actors().Destroy(ctx, aid); err != nil {
				b.Fatal(err)
			}
			f.stopped(b, aid)
		})
	})
	b.Run("runner-ping", func(b *testing.B) { benchPings(b, store(b), false) })
	b.Run("envoy-ping", func(b *testing.B) { benchPings(b, store(b), true) })
	b.Run("envoy-actor-liveness", func(b *testing.B) { benchLiveness(b, store(b)) })
}

// timings pings runners and envoys every interval ms, with the eligible and lost thresholds
// (and a ping timeout of the lost threshold) given.
func timings(interval, eligible, lost uint32) func(*config.Pegboard) {
	return func(p *config.Pegboard) {
		p.RunnerUpdatePingIntervalMs, p.RunnerEligibleThreshold, p.RunnerLostThreshold, p.RunnerPingTimeoutMs = interval, eligible, lost, lost
		p.EnvoyUpdatePingInterval, p.EnvoyEligibleThreshold, p.EnvoyLostThreshold, p.EnvoyPingTimeout = interval, eligible, lost, lost
	}
}

var (
	// scaledTimings are a tenth of the default timings (ping interval 300 ms, eligible 1 s,
	// lost 1.5 s): the ratios that decide how often a ping or a check is written are the
	// defaults'.
	scaledTimings = timings(300, 1000, 1500)
	// quietTimings ping the hosts every 10 minutes, so that the operations' benchmarks count
	// no ping.
	quietTimings = timings(600_000, 1_200_000, 1_800_000)
)

// benchLiveness measures b.N liveness checks of actors running on an envoy: each checks
// its envoy's last ping every envoy lost threshold (a timer of its own), however idle.
// Only the timers' transactions are counted meanwhile.
func benchLiveness(b *testing.B, storeURL string) {
	f := start(b, storeURL, scaledTimings)
	f.envoyPool(b)
	f.connect(b, true, "liveness-envoy")
	f.waitPongs(b, "envoy", 1) // registered: an envoy is told its init before it is
	for range 50 {
		f.running(b, f.create(b, client.ActorCreateOptions{}))
	}
	f.settle(b)
	timersOnly.Store(true)
	defer timersOnly.Store(false)
	before := f.db.Counts()
	checks := func() int { c := f.db.Counts().Sub(before); return int(c.Transactions - c.Retries) }
	b.ResetTimer()
	deadline := time.Now().Add(within + time.Duration(b.N)*50*time.Millisecond)
	for checks() < b.N {
		if time.Now().After(deadline) {
			b.Fatalf("%d liveness checks, want %d", checks(), b.N)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.StopTimer()
	report(b, f.db.Counts().Sub(before), checks())
}

// benchPings measures b.N pongs of pingSockets runners (or envoys) pinged at scaledTimings.
func benchPings(b *testing.B, storeURL string, envoy bool) {
	f := start(b, storeURL, scaledTimings)
	kind := "runner"
	if envoy {
		kind = "envoy"
		f.envoyPool(b)
	}
	for i := range pingSockets {
		f.connect(b, envoy, fmt.Sprintf("ping-%s-%d", kind, i))
	}
	f.waitPongs(b, kind, f.pongs(b, kind)+2*pingSockets) // every socket registered and pinged
	before, pongs := f.db.Counts(), f.pongs(b, kind)
	b.ResetTimer()
	// At least minPongs: the counts and the pong count are read one after the other, so
	// either end may be off by a batch of pongs in flight.
	got := f.waitPongs(b, kind, pongs+max(b.N, minPongs))
	b.StopTimer()
	report(b, f.db.Counts().Sub(before), got-pongs)
}

// fixture is an engine on a counted store with one runner hosting echo actors.
type fixture struct {
	db      *udbcount.DB
	e       *engine.Engine
	base    string // the public URL
	hc      *http.Client
	api     *client.Client
	runners []*runner.Runner
	actors  *lifecycles
}

func start(b *testing.B, storeURL string, timings func(*config.Pegboard)) *fixture {
	b.Helper()
	cfg := config.Default()
	cfg.Database.URL = storeURL
	cfg.Guard.Host, cfg.Guard.Port = "127.0.0.1", 0
	cfg.APIPeer.Host, cfg.APIPeer.Port = "127.0.0.1", 0
	cfg.Metrics.Host, cfg.Metrics.Port = "127.0.0.1", 0
	cfg.Guard.RateLimitRequests = 0 // a benchmark's requests come from one address
	timings(&cfg.Pegboard)
	f := &fixture{hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: within}, actors: newLifecycles()}
	e, err := engine.Start(context.Background(), engine.Options{Config: cfg, Log: quiet,
		WrapStore: func(db udb.Database) udb.Database {
			f.db = udbcount.Wrap(db, udbcount.Options{Skip: skip})
			return f.db
		}})
	if err != nil {
		b.Fatal(err)
	}
	f.e, f.base = e, "http://"+e.PublicAddr().String()
	b.Cleanup(func() {
		for _, r := range f.runners {
			ctx, cancel := context.WithTimeout(context.Background(), within)
			_ = r.Shutdown(ctx, true)
			cancel()
			<-r.Done()
		}
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			b.Errorf("engine shutdown: %v", err)
		}
		f.hc.CloseIdleConnections()
	})
	if f.api, err = client.New(f.base, client.WithNamespace("default"), client.WithHTTPClient(f.hc)); err != nil {
		b.Fatal(err)
	}
	return f
}

// envoyPool gives the pool a config, which envoys need (a runner's registration makes one).
func (f *fixture) envoyPool(b *testing.B) {
	b.Helper()
	if _, err := f.api.RunnerConfigs().Upsert(b.Context(), pool, map[string]client.RunnerConfig{
		config.DefaultDatacenterName: {Normal: &client.RunnerConfigNormal{}},
	}); err != nil {
		b.Fatal(err)
	}
}

// connect starts a runner (or an envoy) keyed key that hosts echo actors, and waits until
// it is connected.
func (f *fixture) connect(b *testing.B, envoy bool, key string) {
	b.Helper()
	up := make(chan struct{})
	var once sync.Once
	r, err := runner.New(runner.Config{
		Endpoint: f.base, Namespace: "default", Name: pool, Key: key, TotalSlots: 1_000_000, Envoy: envoy, Logger: quiet,
		HTTPClient: &http.Client{Transport: &http.Transport{}},
		Hooks:      runner.Hooks{OnConnected: func(string) { once.Do(func() { close(up) }) }},
		Actors:     map[string]func() runner.Actor{actorName: func() runner.Actor { return &echo{l: f.actors} }},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	f.runners = append(f.runners, r)
	select {
	case <-up:
	case <-time.After(within):
		b.Fatal("the runner did not connect")
	}
}

// measure runs op b.N times, waits until the store is quiet, and reports what was counted
// meanwhile per op, and the op's own time as ns/op. The benchmark's timer runs throughout,
// the preparation included, so that b.N stays within the bench time.
func (f *fixture) measure(b *testing.B, op func()) {
	b.Helper()
	f.settle(b)
	before, start := f.db.Counts(), time.Now()
	for range b.N {
		op()
	}
	elapsed := time.Since(start)
	f.settle(b)
	report(b, f.db.Counts().Sub(before), b.N)
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/op")
}

// settle waits until every runner's events are acknowledged (the engine has recorded them)
// and the counts stay still for quietFor: what an operation set off in the background (a
// queue moved once a slot was freed) is then counted with it.
func (f *fixture) settle(b *testing.B) {
	const quietFor, poll = 150 * time.Millisecond, 10 * time.Millisecond
	deadline := time.Now().Add(within)
	last, since := f.db.Counts(), time.Now()
	for time.Since(since) < quietFor {
		if time.Now().After(deadline) {
			b.Fatal("the store did not settle")
		}
		time.Sleep(poll)
		c := f.db.Counts()
		if c != last || f.unacked() > 0 {
			last, since = c, time.Now()
		}
	}
}

func (f *fixture) unacked() int {
	n := 0
	for _, r := range f.runners {
		n += r.UnackedEvents()
	}
	return n
}

func (f *fixture) opts(key string) client.ActorCreateOptions {
	return client.ActorCreateOptions{Name: actorName, Key: key, Pool: pool, CrashPolicy: client.CrashSleep}
}

func (f *fixture) create(b *testing.B, o client.ActorCreateOptions) string {
	b.Helper()
	o.Name, o.Pool, o.CrashPolicy = actorName, pool, client.CrashSleep
	a, err := f.api.Actors().Create(b.Context(), o)
	if err != nil {
		b.Fatal(err)
	}
	return a.ActorId
}

// keyed gets or creates the actor of key and waits until it runs.
func (f *fixture) keyed(b *testing.B, key string) string {
	b.Helper()
	a, _, err := f.api.Actors().GetOrCreate(b.Context(), f.opts(key))
	if err != nil {
		b.Fatal(err)
	}
	f.running(b, a.ActorId)
	return a.ActorId
}

// running waits until the actor's latest start has run on the runner.
func (f *fixture) running(b *testing.B, aid string) {
	b.Helper()
	if !f.actors.await(aid, func(s state) bool { return s.starts > s.stops }) {
		b.Fatalf("actor %s did not start", aid)
	}
}

// stopped waits until the actor has stopped on the runner.
func (f *fixture) stopped(b *testing.B, aid string) {
	b.Helper()
	if !f.actors.await(aid, func(s state) bool { return s.starts == s.stops }) {
		b.Fatalf("actor %s did not stop", aid)
	}
}

func (f *fixture) sleep(b *testing.B, aid string) {
	b.Helper()
	if err := f.api.Actors().Sleep(b.Context(), aid); err != nil {
		b.Fatal(err)
	}
	f.stopped(b, aid)
}

// measureEach makes b.N running actors (asleep if asleep), then measures op on each.
func (f *fixture) measureEach(b *testing.B, asleep bool, op func(aid string)) {
	b.Helper()
	ids := f.prepare(b, asleep)
	i := 0
	f.measure(b, func() {
		op(ids[i])
		i++
	})
}

// prepare makes b.N running actors, asleep if asleep.
func (f *fixture) prepare(b *testing.B, asleep bool) []string {
	b.Helper()
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = f.create(b, client.ActorCreateOptions{})
		f.running(b, ids[i])
		if asleep {
			f.sleep(b, ids[i])
		}
	}
	return ids
}

// request sends GET / to the actor through the gateway and checks the echo's answer.
func (f *fixture) request(b *testing.B, aid string) {
	b.Helper()
	f.get(b, "/gateway/"+aid+"/", aid)
}

// get sends GET path to the gateway and checks that actor aid's echo answers.
func (f *fixture) get(b *testing.B, path, aid string) {
	b.Helper()
	res, err := f.hc.Get(f.base + path)
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || string(body) != aid {
		b.Fatalf("gateway: %d %q, %v; want 200 and the actor's id", res.StatusCode, body, err)
	}
}

// pongs is how many pongs of kind the engine has recorded (berth_ping_rtt_seconds).
func (f *fixture) pongs(b *testing.B, kind string) int {
	b.Helper()
	res, err := f.hc.Get("http://" + f.e.MetricsAddr().String() + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		b.Fatal(err)
	}
	prefix := `berth_ping_rtt_seconds_count{kind="` + kind + `"} `
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				b.Fatalf("metrics: %q: %v", line, err)
			}
			return n
		}
	}
	return 0
}

// waitPongs waits until the engine has recorded n pongs of kind and returns how many it has.
func (f *fixture) waitPongs(b *testing.B, kind string, n int) int {
	b.Helper()
	deadline := time.Now().Add(within + time.Duration(n)*10*time.Millisecond)
	for {
		if got := f.pongs(b, kind); got >= n {
			return got
		}
		if time.Now().After(deadline) {
			b.Fatalf("fewer than %d %s pongs recorded", n, kind)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// report reports the counts of n operations, per operation.
func report(b *testing.B, c udbcount.Counts, n int) {
	per := func(v int64) float64 { return float64(v) / float64(n) }
	b.ReportMetric(per(c.Transactions), "txn/op")
	b.ReportMetric(per(c.Retries), "retries/op")
	b.ReportMetric(per(c.Commits), "commits/op")
	b.ReportMetric(per(c.Reads()), "reads/op")
	b.ReportMetric(per(c.KeysRead), "keys-read/op")
	b.ReportMetric(per(c.Writes()), "writes/op")
	b.ReportMetric(per(c.ReadConflictRanges), "rconflicts/op")
	b.ReportMetric(per(c.WriteConflictRanges), "wconflicts/op")
	b.ReportMetric(per(c.BytesRead), "B-read/op")
	b.ReportMetric(per(c.BytesWritten), "B-written/op")
}

// timersOnly makes skip count the actors' due timers' transactions alone.
var timersOnly atomic.Bool

// skip is the counted stores' udbcount.Options.Skip: it leaves out the transactions of the
// engine's periodic loops, which no operation causes (the scans for lost runners and
// envoys, the reads for due timers, serverless polling, the census and the node lease), or,
// with timersOnly, everything but a due timer's own transaction.
func skip() bool {
	bg, timer := classify()
	if timersOnly.Load() {
		return !timer
	}
	return bg
}

// classify tells, by the calling stack, a periodic loop's transaction (background) and a
// due timer's (timer) apart.
func classify() (background, timer bool) {
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs[:])])
	readOnly, timers := false, false
	for {
		fr, more := frames.Next()
		fn := fr.Function
		for _, loop := range backgroundLoops {
			if strings.Contains(fn, loop) {
				return true, false
			}
		}
		readOnly = readOnly || strings.HasSuffix(fn, "/pkg/udb.RunReadTransact")
		timers = timers || strings.Contains(fn, "/engine/pegboard.(*Actors).runTimers")
		if !more {
			return readOnly && timers, timers && !readOnly
		}
	}
}

var backgroundLoops = []string{
	"/engine/pegboard.(*scanLoop).run",
	"/engine/serverless.(*Service).Run",
	"/engine.(*observability).runCensus",
	"/engine/cluster.(*Node).renewLoop",
}

// state is what the runner did with one actor.
type state struct{ starts, stops int }

// lifecycles records the starts and stops of the runners' actors.
type lifecycles struct {
	mu      sync.Mutex
	m       map[string]state
	changed chan struct{} // closed and replaced at each change
}

func newLifecycles() *lifecycles {
	return &lifecycles{m: map[string]state{}, changed: make(chan struct{})}
}

func (l *lifecycles) update(aid string, f func(*state)) {
	l.mu.Lock()
	s := l.m[aid]
	f(&s)
	l.m[aid] = s
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// await waits until ok holds for the actor's state; false after within.
func (l *lifecycles) await(aid string, ok func(state) bool) bool {
	timeout := time.After(within)
	for {
		l.mu.Lock()
		s, ch := l.m[aid], l.changed
		l.mu.Unlock()
		if ok(s) {
			return true
		}
		select {
		case <-ch:
		case <-timeout:
			return false
		}
	}
}

// echo is an actor that answers every request with its id.
type echo struct {
	l   *lifecycles
	aid string
}

func (a *echo) Start(_ context.Context, ac *runner.ActorContext) error {
	a.aid = ac.ID()
	a.l.update(a.aid, func(s *state) { s.starts++ })
	return nil
}

func (a *echo) Stop(context.Context, *runner.ActorContext) error {
	a.l.update(a.aid, func(s *state) { s.stops++ })
	return nil
}

func (a *echo) ServeHTTP(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, a.aid) }
