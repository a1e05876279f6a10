package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berthhq/berth/bench/sidebyside"
	"github.com/berthhq/berth/tests/proc"
)

// The workload's sizes (the figures).
const (
	connectRunners  = 5                // runners timed from socket to list, one at a time
	coldActors      = 50               // actors timed from create to first answer
	latencyRequests = 2000             // sequential requests (and WebSocket echoes) recorded
	loadConns       = 16               // connections of the throughput loop
	loadFor         = 10 * time.Second // how long the throughput loop runs
	wakeActors      = 10               // actors slept and then woken once each
	fleetRunners    = 200              // runners for the list figures
	fleetSlots      = 10               // slots of each
	fleetActors     = 2000             // actors for the list figures
	listCalls       = 100              // timed calls of each list (after 10 unrecorded)
	idleFor         = 3 * time.Second  // from /health to the idle RSS and CPU reading
	createsWithin   = 60 * time.Second // for the creates of step 7
	startedWithin   = 20 * time.Second // for their starts
	benchSlots      = 100              // slots of the echo runner (pool bench)
)

// workload runs the sessions; the fields are set once, but failures.
type workload struct {
	npm      string
	tmp      string
	kids     *children
	creators int           // concurrent creates in steps 7 and 9
	pg       *pgServer     // the PostgreSQL server of -store postgres; nil for the embedded stores
	nats     string        // the NATS server's URL, for engines of several nodes
	large    int           // actors of step 9 (0 leaves it out)
	largeFor time.Duration // the budget of step 9's creates

	failures []string // what went wrong in a session that still went on
}

// failed notes err of e's session in repetition rep, which goes on.
func (w *workload) failed(e engineKind, rep int, err error) {
	logf("  %s: %v", e.name, err)
	first, _, _ := strings.Cut(err.Error(), "\n")
	w.failures = append(w.failures, fmt.Sprintf("repetition %d, %s: %s", rep+1, e.name, first))
}

// figures are one session's measurements by key (see metrics in results.go).
type figures map[string]float64

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// node starts the echo runner script with env.
func (w *workload) node(name string, env ...string) (*proc.Proc, error) {
	cmd := exec.Command("node", "bench-echo-runner.mjs")
	cmd.Dir = w.npm
	cmd.Env = append(os.Environ(), env...)
	return w.kids.start(name, cmd)
}

// floor measures the plain node server: the same handlers without an engine.
func (w *workload) floor(ctx context.Context, rep int) (figures, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	p, err := w.node("plain-server", "PLAIN_PORT="+strconv.Itoa(ports[0]))
	if err != nil {
		return nil, err
	}
	defer w.kids.stop(p)
	if _, err := p.AwaitEv("plain", 30*time.Second); err != nil {
		return nil, err
	}
	t := sidebyside.NewTarget("plain node", fmt.Sprintf("http://127.0.0.1:%d", ports[0]), 0, p.PID(), 10+rep)
	f := figures{}
	return f, gateway(ctx, t, f)
}

// gateway runs steps 4 and 5 against t.
func gateway(ctx context.Context, t *sidebyside.Target, f figures) error {
	d, err := sidebyside.HTTPLatency(ctx, t, sidebyside.RawClient, sidebyside.Warmup, latencyRequests)
	if err != nil {
		return err
	}
	f["http_p50_ms"], f["http_p99_ms"] = ms(sidebyside.Percentile(d, 50)), ms(sidebyside.Percentile(d, 99))
	d, err = sidebyside.HTTPLatency(ctx, t, sidebyside.NetHTTPClient, sidebyside.Warmup, latencyRequests)
	if err != nil {
		return err
	}
	f["http_nethttp_p50_ms"] = ms(sidebyside.Percentile(d, 50))
	l := sidebyside.HTTPLoad(ctx, t, sidebyside.RawClient, loadConns, loadFor)
	if l.Failed > 0 {
		return fmt.Errorf("%s: %d requests of the throughput loop failed, the first: %v", t.Name, l.Failed, l.FirstErr)
	}
	f["http_rps"] = l.RPS
	if t.PID != 0 {
		f["http_cpu_ms_per_req"] = ms(l.CPUPerReq)
	}
	d, err = sidebyside.WSLatency(ctx, t, sidebyside.Warmup, latencyRequests)
	if err != nil {
		return err
	}
	f["ws_p50_ms"], f["ws_p99_ms"] = ms(sidebyside.Percentile(d, 50)), ms(sidebyside.Percentile(d, 99))
	return ctx.Err()
}

// session runs the whole workload against a fresh engine of kind e.
func (w *workload) session(ctx context.Context, e engineKind, rep int) (figures, error) {
	f := figures{}
	dir, err := os.MkdirTemp(w.tmp, e.target+"-")
	if err != nil {
		return f, err
	}
	defer os.RemoveAll(dir)
	st := sessionStore{nats: w.nats}
	var db string
	if w.pg != nil {
		db, st.postgres, err = w.pg.create(ctx, e.target)
		if err != nil {
			return f, err
		}
		defer func() {
			if err := w.pg.drop(db); err != nil {
				logf("  %s: drop database %s: %v", e.name, db, err)
			}
		}()
	}
	logf("  %s: start", e.name)
	eng, took, err := w.startEngine(ctx, e, dir, st)
	for _, p := range eng.procs {
		defer w.kids.terminate(p)
	}
	if err != nil {
		return f, err
	}
	f["start_ms"] = ms(took)
	a := &api{bases: eng.urls, client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: w.creators}}, ip: 20 + rep}
	defer a.client.CloseIdleConnections()
	s := &session{e: e, eng: eng, a: a, rep: rep, f: f, db: db}
	err = w.steps(ctx, s)
	if err != nil {
		var logs []string
		for i := range eng.procs {
			name := "engine.log"
			if e.nodes > 1 {
				name = filepath.Join(fmt.Sprintf("node-%d", i+1), name)
			}
			log, _ := os.ReadFile(filepath.Join(dir, name))
			logs = append(logs, fmt.Sprintf("%s %s (tail):\n%s", e.name, name, proc.Tail(log, 20)))
		}
		return f, fmt.Errorf("%w\n%s", err, strings.Join(logs, "\n"))
	}
	return f, nil
}

// session is one engine's session: what its steps share.
type session struct {
	e      engineKind
	eng    *engine
	a      *api
	rep    int
	f      figures
	db     string     // its PostgreSQL database; "" on the embedded store
	runner *proc.Proc // the echo runner process, hosting every runner of the session
}

// resident records the engine's resident memory, all nodes together, under key_mib, with its
// private and file parts under key_anon_mib and key_file_mib.
func (s *session) resident(key string) {
	var m proc.Memory
	for _, pid := range s.eng.pids() {
		r := proc.Resident(pid)
		m.Total, m.Anon, m.File = m.Total+r.Total, m.Anon+r.Anon, m.File+r.File
	}
	s.f[key+"_mib"] = float64(m.Total) / (1 << 20)
	s.f[key+"_anon_mib"] = float64(m.Anon) / (1 << 20)
	s.f[key+"_file_mib"] = float64(m.File) / (1 << 20)
}

// cpu is each node's CPU time so far.
func (s *session) cpu() []time.Duration {
	var out []time.Duration
	for _, pid := range s.eng.pids() {
		out = append(out, proc.CPUTime(pid))
	}
	return out
}

func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

func (w *workload) steps(ctx context.Context, s *session) error {
	e, a, f := s.e, s.a, s.f
	// 8, at idle.
	if err := sleep(ctx, idleFor); err != nil {
		return err
	}
	s.resident("rss_idle")
	f["cpu_idle_s"] = sum(s.cpu()).Seconds()

	runner, err := w.node(e.name+"-runner", "BERTH_ENDPOINT="+a.bases[0], "BERTH_ENDPOINTS="+strings.Join(a.bases, ","),
		"RUNNER_NAME=bench", "RUNNER_SLOTS="+strconv.Itoa(benchSlots))
	if err != nil {
		return err
	}
	defer w.kids.stop(runner)
	s.runner = runner
	if _, err := runner.AwaitEv("connected", 60*time.Second); err != nil {
		return err
	}

	// 2. Runner connect until listed.
	logf("  %s: runner connect", e.name)
	var conn []time.Duration
	for i := 1; i <= connectRunners; i++ {
		if err := runner.Send("connect conn 1 1"); err != nil {
			return err
		}
		ev, err := runner.AwaitEv("connecting", 10*time.Second)
		if err != nil {
			return err
		}
		if err := a.poll(ctx, "runner listed", 30*time.Second, func() (bool, error) {
			n, err := a.count(ctx, "/runners?namespace=default&name=conn&limit=100", "runners")
			return n >= i, err
		}); err != nil {
			return err
		}
		conn = append(conn, time.Since(ev.At))
		if _, err := runner.AwaitEv("connected", 30*time.Second); err != nil {
			return err
		}
	}
	f["runner_connect_ms"] = ms(sidebyside.Percentile(conn, 50))

	// 3. Actor cold start.
	logf("  %s: actor cold start", e.name)
	var cold []time.Duration
	var ids []string
	for i := range coldActors {
		start := time.Now()
		id, err := a.create(ctx, "echo", fmt.Sprintf("cold-%d", i), "bench")
		if err != nil {
			return err
		}
		if err := a.firstAnswer(ctx, id); err != nil {
			return err
		}
		cold = append(cold, time.Since(start))
		ids = append(ids, id)
	}
	f["cold_p50_ms"], f["cold_p99_ms"] = ms(sidebyside.Percentile(cold, 50)), ms(sidebyside.Percentile(cold, 99))

	// 4 and 5. Gateway HTTP and WebSocket, on the first of those actors, through the first
	// node. With several nodes the engine CPU per request is left out (it is one node's);
	// step 9 reports every node's.
	logf("  %s: gateway HTTP and WebSocket", e.name)
	pid := s.eng.pids()[0]
	if e.nodes > 1 {
		pid = 0
	}
	t := sidebyside.NewTarget(e.name, a.bases[0]+"/gateway/"+ids[0], pid, runner.PID(), 30+s.rep)
	if err := gateway(ctx, t, f); err != nil {
		return err
	}

	// 6. Wake from sleep: sleep the next wakeActors actors, then wake each once.
	logf("  %s: wake from sleep", e.name)
	wake, err := s.wake(ctx, ids[1:1+wakeActors])
	if err != nil {
		return err
	}
	f["wake_p50_ms"], f["wake_max_ms"] = ms(sidebyside.Percentile(wake, 50)), ms(sidebyside.Percentile(wake, 100))

	// 7. Lists with 200 more runners and 2,000 actors.
	logf("  %s: %d runners and %d actors", e.name, fleetRunners, fleetActors)
	fleetStart := time.Now()
	if err := s.connect("fleet", fleetRunners, fleetSlots); err != nil {
		return err
	}
	f["fleet_connect_s"] = time.Since(fleetStart).Seconds()
	logf("  %s: %d runners connected in %.1f s; creating %d actors", e.name, fleetRunners, f["fleet_connect_s"], fleetActors)
	// The creates are bounded (createsWithin): on a loaded machine the reference engine's
	// workflow worker can fall behind until creates time out; what was created by then is
	// listed, and the shortfall is a figure of its own.
	created, err := w.createAndStart(ctx, s, "fleet", fleetActors, createsWithin)
	if err != nil {
		return err
	}
	logf("  %s: lists", e.name)
	for _, l := range []struct {
		key, path, field string
		want             int
	}{
		{"list_runners", "/runners?namespace=default&limit=100", "runners", 100},
		{"list_actors", "/actors?namespace=default&name=listed-fleet&limit=100", "actors", min(100, len(created))},
	} {
		if err := a.listTimes(ctx, f, l.key, l.path, l.field, l.want); err != nil {
			return err
		}
	}

	// 8, after step 7: at once, and once the engine has been idle as long as before the
	// idle reading (the runners stay connected), whatever it gives back by then.
	s.resident("rss_after")
	f["cpu_after_s"] = sum(s.cpu()).Seconds()
	if err := sleep(ctx, idleFor); err != nil {
		return err
	}
	s.resident("rss_settled")
	if err := ctx.Err(); err != nil || w.large == 0 {
		return err
	}
	return w.largeStep(ctx, s)
}

// connect starts n more runners of pool with slots each, 20 at a time, and waits (90 s
// each at most) until every one has connected.
func (s *session) connect(pool string, n, slots int) error {
	if err := s.runner.Send(fmt.Sprintf("connect %s %d %d 20", pool, n, slots)); err != nil {
		return err
	}
	for range n {
		if _, err := s.runner.Await(pool+" runner connected", 90*time.Second, func(ev proc.Event) bool {
			return ev.Ev == "connected" && ev.Name == pool
		}); err != nil {
			return err
		}
	}
	return nil
}

// createAndStart creates n actors named "listed-"+pool in pool with w.creators clients within
// within, then waits (startedWithin at most) for the runners to have started them. It records
// pool's created, creates_per_s and started figures and returns the actors' ids: a budget
// that ran out is a failure noted, and what was created by then goes on.
func (w *workload) createAndStart(ctx context.Context, s *session, pool string, n int, within time.Duration) ([]string, error) {
	started0 := s.runner.Count("actorStart")
	createStart := time.Now()
	cctx, cancel := context.WithTimeout(ctx, within)
	ids, err := s.a.createMany(cctx, "listed-"+pool, pool, n, w.creators, func(k int) {
		logf("  %s: %d actors created", s.e.name, k)
	})
	cancel()
	s.f[pool+"_created"] = float64(len(ids))
	s.f[pool+"_creates_per_s"] = float64(len(ids)) / time.Since(createStart).Seconds()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		w.failed(s.e, s.rep, fmt.Errorf("%s: %d of %d creates in %v: %w", pool, len(ids), n, within, err))
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no actor of pool %s created", pool)
	}
	// Bounded: a shortfall is a figure of its own.
	_ = s.a.poll(ctx, pool+" actors started", startedWithin, func() (bool, error) {
		return s.runner.Count("actorStart")-started0 >= len(ids), nil
	})
	s.f[pool+"_started"] = float64(s.runner.Count("actorStart") - started0)
	return ids, ctx.Err()
}

// wake puts the actors ids to sleep (their runner asks, ActorIntentSleep: the reference
// engine's POST /actors/{id}/sleep does not reach a runner-protocol actor), waits until GET
// /actors shows each asleep, then wakes each with a gateway request and returns how long each
// took until its first answer.
func (s *session) wake(ctx context.Context, ids []string) ([]time.Duration, error) {
	for _, id := range ids {
		if err := s.runner.Send("sleep " + id); err != nil {
			return nil, err
		}
	}
	for _, id := range ids {
		if err := s.a.poll(ctx, "actor asleep", 60*time.Second, func() (bool, error) { return s.a.asleep(ctx, id) }); err != nil {
			return nil, err
		}
	}
	var wake []time.Duration
	for _, id := range ids {
		start := time.Now()
		if err := s.a.firstAnswer(ctx, id); err != nil {
			return nil, err
		}
		wake = append(wake, time.Since(start))
	}
	return wake, nil
}

// listTimes calls GET path listCalls times (after 10 unrecorded), checks each answer holds
// want to 100 items in field (a create cut off by its budget may still have been made), and
// records key's p50 and p99.
func (a *api) listTimes(ctx context.Context, f figures, key, path, field string, want int) error {
	var d []time.Duration
	for i := range 10 + listCalls {
		start := time.Now()
		n, err := a.count(ctx, path, field)
		if err != nil {
			return err
		}
		if n < want || n > 100 {
			return fmt.Errorf("GET %s: %d %s, want %d to 100", path, n, field, want)
		}
		if i >= 10 {
			d = append(d, time.Since(start))
		}
	}
	f[key+"_p50_ms"], f[key+"_p99_ms"] = ms(sidebyside.Percentile(d, 50)), ms(sidebyside.Percentile(d, 99))
	return nil
}

// api calls an engine's public API; every request comes from a new client address every
// 1,000 requests (X-Forwarded-For), so that no per-IP limit answers instead of the engine.
type api struct {
	bases  []string // the engine's nodes, taken in turn
	next   atomic.Uint64
	client *http.Client
	ip     int // this session's part of the addresses
	n      atomic.Int64
}

// base is the URL of the node the next request goes to: each in turn.
func (a *api) base() string {
	return a.bases[(a.next.Add(1)-1)%uint64(len(a.bases))]
}

// call sends method path with body as JSON (nil for none) and decodes a 200 answer into out
// (nil to skip); any other answer is an error naming its status and body.
func (a *api) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base()+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	n := a.n.Add(1) / 1000
	req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", a.ip, n/250%250, n%250))
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &statusError{method: method, path: path, status: resp.StatusCode, body: string(b)}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return nil
}

type statusError struct {
	method, path string
	status       int
	body         string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.method, e.path, e.status, e.body)
}

// count returns how many items the list at path holds in field.
func (a *api) count(ctx context.Context, path, field string) (int, error) {
	var out map[string]json.RawMessage
	if err := a.call(ctx, http.MethodGet, path, nil, &out); err != nil {
		return 0, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(out[field], &items); err != nil {
		return 0, fmt.Errorf("GET %s: %q: %v", path, field, err)
	}
	return len(items), nil
}

// poll calls done every 5 ms until it says true, fails, or within passes.
func (a *api) poll(ctx context.Context, what string, within time.Duration, done func() (bool, error)) error {
	deadline := time.Now().Add(within)
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %s within %v", what, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond): // polling interval
		}
	}
}

// create creates one actor named name with key in pool and returns its id. Right after a
// pool's first runner connected the reference engine may not have the pool's runner config
// yet (actor.no_runner_config_configured, docs/protocol.md): that create is tried again.
func (a *api) create(ctx context.Context, name, key, pool string) (string, error) {
	body := map[string]any{"name": name, "key": key, "runner_name_selector": pool, "crash_policy": "sleep"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var out struct {
			Actor struct {
				ActorID string `json:"actor_id"`
			} `json:"actor"`
		}
		err := a.call(ctx, http.MethodPost, "/actors?namespace=default", body, &out)
		if err == nil {
			return out.Actor.ActorID, nil
		}
		var se *statusError
		if !errors.As(err, &se) || time.Now().After(deadline) || ctx.Err() != nil {
			return "", err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(20 * time.Millisecond): // before trying again
		}
	}
}

// createMany creates n actors named name (keys l-0, l-1, …) in pool with c concurrent clients
// and returns the ids of those it created; progress is called after every 500.
func (a *api) createMany(ctx context.Context, name, pool string, n, c int, progress func(int)) ([]string, error) {
	var next atomic.Int64
	var mu sync.Mutex
	var ids []string
	var wg sync.WaitGroup
	errs := make([]error, c)
	for w := range c {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || ctx.Err() != nil {
					return
				}
				id, err := a.create(ctx, name, "l-"+strconv.FormatInt(i, 10), pool)
				if err != nil {
					errs[w] = err
					return
				}
				mu.Lock()
				ids = append(ids, id)
				k := len(ids)
				mu.Unlock()
				if k%500 == 0 {
					progress(k)
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return ids, err
	}
	return ids, errors.Join(errs...)
}

// firstAnswer sends GET /gateway/{id}/ready until the actor answers 200 "ok" (the engine
// holds the first request of a starting or waking actor; an engine that answers an error
// instead is asked again, within 60 s).
func (a *api) firstAnswer(ctx context.Context, id string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		n := a.n.Add(1) / 1000
		err := sidebyside.Get(ctx, a.client, a.base()+"/gateway/"+id+"/ready", fmt.Sprintf("10.%d.%d.%d", a.ip, n/250%250, n%250))
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond): // before asking again
		}
	}
}

// asleep reports whether GET /actors shows the actor with a sleep_ts.
func (a *api) asleep(ctx context.Context, id string) (bool, error) {
	var out struct {
		Actors []struct {
			SleepTS *int64 `json:"sleep_ts"`
		} `json:"actors"`
	}
	if err := a.call(ctx, http.MethodGet, "/actors?namespace=default&actor_ids="+url.QueryEscape(id), nil, &out); err != nil {
		return false, err
	}
	return len(out.Actors) == 1 && out.Actors[0].SleepTS != nil, nil
}
