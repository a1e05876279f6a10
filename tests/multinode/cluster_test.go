package multinode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/berthhq/berth/sdk/runner"
	"github.com/berthhq/berth/tests/internal/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// postgresStore returns the URL of an empty store: a schema of its own in the database of
// BERTH_TEST_POSTGRES_URL, dropped when the test ends. It skips without that variable.
func postgresStore(t testing.TB) string {
	t.Helper()
	base := os.Getenv("BERTH_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("BERTH_TEST_POSTGRES_URL is not set: no PostgreSQL server (`source .ci/postgres.sh` starts one)")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "multinode_" + hex.EncodeToString(b[:])
	exec := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// node is one `berth start` process; it keeps its ports and node id across restarts.
type node struct {
	t       testing.TB
	id      string
	bin     string
	next    string // the binary its next start runs, when not bin (an upgrade)
	dir     string
	url     string // guard port
	peerURL string // api-peer port: the internal listener
	guard   string // host:port of the guard port
	dbURL   string
	env     []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// nodeConfig is what differs between the tests' clusters.
type nodeConfig struct {
	db     string
	pubsub string // "" for a single node
	env    []string
}

func newNode(t testing.TB, id string, nc nodeConfig) *node {
	t.Helper()
	ports := harness.FreePorts(t, 2)
	n := &node{t: t, id: id, bin: harness.Binary(t), dir: t.TempDir(), env: nc.env,
		url: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), peerURL: fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		guard: fmt.Sprintf("127.0.0.1:%d", ports[0]), dbURL: nc.db}
	cfg := map[string]any{
		"topology": map[string]any{"datacenter_label": 1, "datacenters": map[string]any{
			"default": map[string]any{"datacenter_label": 1, "is_leader": true, "public_url": n.url, "peer_url": n.peerURL},
		}},
		"guard":    map[string]any{"host": "127.0.0.1", "port": ports[0]},
		"api_peer": map[string]any{"host": "127.0.0.1", "port": ports[1]},
		"metrics":  map[string]any{"host": "127.0.0.1", "port": 0},
		"database": map[string]any{"url": nc.db},
		"node":     map[string]any{"id": id, "lease_ms": 3000},
		"pegboard": map[string]any{"runner_update_ping_interval_ms": 1000, "runner_ping_timeout_ms": 5000},
	}
	if nc.pubsub != "" {
		cfg["pubsub"] = map[string]any{"url": nc.pubsub}
	}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(n.dir, "berth.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.kill()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(n.dir, "berth.log"))
			t.Logf("node %s log:\n%s", id, harness.Tail(b, 40))
		}
	})
	return n
}

// start runs the process and waits until it is healthy.
func (n *node) start() {
	n.t.Helper()
	logf, err := os.OpenFile(filepath.Join(n.dir, "berth.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		n.t.Fatal(err)
	}
	cmd := exec.Command(n.bin, "start", "--config", filepath.Join(n.dir, "berth.json"))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BERTH_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, n.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		n.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	n.mu.Lock()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for !healthy(n.guard, time.Second) {
		select {
		case <-exited:
			n.t.Fatalf("node %s exited before it was healthy:\n%s", n.id, harness.Tail(n.log(), 30))
		case <-time.After(20 * time.Millisecond): // polling interval
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("node %s not healthy within 60s", n.id)
		}
	}
}

// version is the version n's /metadata reports.
func (n *node) version() string {
	n.t.Helper()
	resp, err := http.Get(n.url + "/metadata")
	if err != nil {
		n.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Version string `json:"version"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		n.t.Fatalf("node %s /metadata: %v", n.id, err)
	}
	return m.Version
}

func (n *node) log() []byte {
	b, _ := os.ReadFile(filepath.Join(n.dir, "berth.log"))
	return b
}

// term sends SIGTERM and waits (up to within) for the exit; it returns how long that took.
func (n *node) term(within time.Duration) time.Duration {
	n.t.Helper()
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	start := time.Now()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(within):
		n.t.Fatalf("node %s did not exit within %v of SIGTERM", n.id, within)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		n.t.Fatalf("node %s exited with %d after SIGTERM", n.id, code)
	}
	return time.Since(start)
}

// kill sends SIGKILL and waits for the process to be gone (nothing if it is not running).
func (n *node) kill() {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
}

// healthy reports whether GET /health/ready on addr answers 200 within timeout.
func healthy(addr string, timeout time.Duration) bool {
	c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/health/ready")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// balancer is a TCP load balancer for the runners: each connection goes to the next node,
// round robin, that answers /health/ready, as a load balancer in front of a datacenter does.
type balancer struct {
	ln    net.Listener
	nodes []*node
	next  atomic.Uint64

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startBalancer(t testing.TB, nodes []*node) *balancer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &balancer{ln: ln, nodes: nodes, conns: map[net.Conn]struct{}{}}
	b.wg.Go(b.accept)
	t.Cleanup(func() {
		_ = ln.Close()
		b.mu.Lock()
		for c := range b.conns {
			_ = c.Close()
		}
		b.mu.Unlock()
		b.wg.Wait()
	})
	return b
}

func (b *balancer) URL() string { return "http://" + b.ln.Addr().String() }

func (b *balancer) track(c net.Conn, add bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if add {
		b.conns[c] = struct{}{}
	} else {
		delete(b.conns, c)
	}
}

func (b *balancer) accept() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.track(c, true)
		b.wg.Go(func() { b.serve(c) })
	}
}

func (b *balancer) serve(c net.Conn) {
	defer func() { _ = c.Close(); b.track(c, false) }()
	first := int(b.next.Add(1))
	for i := range b.nodes {
		n := b.nodes[(first+i)%len(b.nodes)]
		if !healthy(n.guard, 2*time.Second) {
			continue
		}
		up, err := net.DialTimeout("tcp", n.guard, time.Second)
		if err != nil {
			continue
		}
		b.track(up, true)
		defer func() { _ = up.Close(); b.track(up, false) }()
		done := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
		go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
		<-done
		_ = up.Close()
		_ = c.Close()
		<-done
		return
	}
}

// counter is the tests' actor: POST adds one to a KV counter and answers the new value, GET
// answers it; PUT /upload answers the size of the body it read; GET /download?mb=N streams
// N MiB of zeros. Its state lives in KV, so it survives the actor's runner moving between nodes.
type counter struct {
	mu sync.Mutex
	ac *runner.ActorContext
}

func (c *counter) Start(_ context.Context, ac *runner.ActorContext) error {
	c.ac = ac
	return nil
}

func (c *counter) Stop(context.Context, *runner.ActorContext) error { return nil }

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/download" { // GET /download?mb=N streams N MiB of zeros (flushed)
		mb, _ := strconv.Atoi(r.URL.Query().Get("mb"))
		w.(http.Flusher).Flush()
		buf := make([]byte, 64<<10)
		for range mb * 16 {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
		return
	}
	if r.URL.Path == "/upload" { // PUT /upload answers the body's size as read
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, n)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, _, err := c.ac.KV().Get(r.Context(), []byte("n"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	n, _ := strconv.Atoi(string(v))
	if r.Method == http.MethodPost {
		n++
		if err := c.ac.KV().Put(r.Context(), []byte("n"), []byte(strconv.Itoa(n))); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	fmt.Fprint(w, n)
}

// ServeWebSocket echoes every message until the client closes.
func (c *counter) ServeWebSocket(ctx context.Context, ws *runner.WebSocket) {
	for {
		typ, b, err := ws.Read(ctx)
		if err != nil {
			return
		}
		if err := ws.Write(ctx, typ, b); err != nil {
			return
		}
	}
}

// The pools: runners serve "pool", envoys "envoys" (a pool is hosted by runners or by
// envoys, not both).
const (
	runnerPool = "pool"
	envoyPool  = "envoys"
)

// startRunner connects a Go runner of pool "pool" hosting counters through endpoint; it
// reconnects quickly (50 ms, at most 1 s) and keeps its key, so its runner id and actors.
func startRunner(t testing.TB, endpoint, key string, slots uint32) *runner.Runner {
	t.Helper()
	return startHost(t, runner.Config{Endpoint: endpoint, Name: runnerPool, Key: key, TotalSlots: slots})
}

// startEnvoy connects a Go runner as an envoy (envoy protocol v8) of pool "envoys" hosting
// counters through endpoint, reconnecting as startRunner's runners do, with its key.
func startEnvoy(t testing.TB, endpoint, key string, slots uint32) *runner.Runner {
	t.Helper()
	return startHost(t, runner.Config{Endpoint: endpoint, Name: envoyPool, Key: key, TotalSlots: slots, Envoy: true, Version: 1})
}

// startHost starts a runner or an envoy of cfg (endpoint, pool, key, slots and kind) hosting
// counters in namespace default.
func startHost(t testing.TB, cfg runner.Config) *runner.Runner {
	t.Helper()
	cfg.Namespace = "default"
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.BackoffInitial, cfg.BackoffMax = 50*time.Millisecond, time.Second
	cfg.Actors = map[string]func() runner.Actor{"counter": func() runner.Actor { return &counter{} }}
	r, err := runner.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = r.Shutdown(ctx, true)
	})
	return r
}

// client calls the nodes directly, as clients behind a load balancer would; a request that
// meets a node going away (no answer, or 502/503/504) is retried on the next node.
type client struct {
	nodes   []*node
	http    *http.Client
	next    atomic.Uint64
	retried atomic.Int64 // attempts that met a node going away and were retried
}

func newClient(t testing.TB, nodes []*node) *client {
	tr := &http.Transport{MaxIdleConnsPerHost: 32}
	t.Cleanup(tr.CloseIdleConnections)
	return &client{nodes: nodes, http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// errRetriesExhausted: every attempt met a node going away.
var errRetriesExhausted = errors.New("retries exhausted")

// do sends method path with body (JSON, "" for none) and returns the 200 answer's body;
// another final status is an error, as is running out of attempts (60, about 30 s).
func (c *client) do(method, path, body string) ([]byte, error) {
	var last error
	for attempt := range 60 {
		n := c.nodes[int(c.next.Add(1))%len(c.nodes)]
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, n.url+path, rd)
		if err != nil {
			return nil, err
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.http.Do(req)
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case rerr != nil:
				err = rerr
			case resp.StatusCode == http.StatusOK:
				return b, nil
			case resp.StatusCode == http.StatusBadGateway, resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
				err = fmt.Errorf("node %s: %d %s", n.id, resp.StatusCode, b)
			default:
				return nil, fmt.Errorf("%s %s on node %s: %d %s", method, path, n.id, resp.StatusCode, b)
			}
		}
		last = err
		c.retried.Add(1)
		time.Sleep(time.Duration(min(attempt+1, 10)) * 50 * time.Millisecond) // retry backoff
	}
	return nil, fmt.Errorf("%s %s: %w: %v", method, path, errRetriesExhausted, last)
}

// createCounterIn creates a counter actor in pool and returns its id.
func (c *client) createCounterIn(pool string) (string, error) {
	b, err := c.do(http.MethodPost, "/actors?namespace=default", `{"name":"counter","runner_name_selector":"`+pool+`","crash_policy":"restart"}`)
	if err != nil {
		return "", err
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

// counterOn sends method to actor aid through node n only (no retry) and returns the value.
func counterOn(c *http.Client, n *node, method, aid string) (int, error) {
	req, _ := http.NewRequest(method, n.url+"/gateway/"+aid+"/n", nil)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s through node %s: %d %s", method, n.id, resp.StatusCode, b)
	}
	return strconv.Atoi(string(b))
}

// count sends method to actor aid through any node, with retries, and returns the value.
func (c *client) count(method, aid string) (int, error) {
	b, err := c.do(method, "/gateway/"+aid+"/n", "")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(b))
}

// cluster is three nodes over one store and one NATS, a balancer for runners and envoys,
// runners, envoys and counters.
type cluster struct {
	runners []*runner.Runner
	envoys  []*runner.Runner
	nodes   []*node
	lb      *balancer
	client  *client
	actors  []string
}

func startCluster(t testing.TB, nodes, runners, actors int, env ...string) *cluster {
	t.Helper()
	nc := nodeConfig{db: postgresStore(t), pubsub: harness.StartNATS(t), env: env}
	c := &cluster{}
	for i := range nodes {
		c.nodes = append(c.nodes, newNode(t, fmt.Sprintf("n%d", i+1), nc))
	}
	// The first start creates the store's schema and the default namespace: one at a time.
	for _, n := range c.nodes {
		n.start()
	}
	c.lb = startBalancer(t, c.nodes)
	c.client = newClient(t, c.nodes)
	for i := range runners {
		c.runners = append(c.runners, startRunner(t, c.lb.URL(), fmt.Sprintf("runner-%d", i), 1000))
	}
	c.addCounters(t, runnerPool, actors)
	return c
}

// addCounters creates n counters in pool and waits until each answers.
func (c *cluster) addCounters(t testing.TB, pool string, n int) {
	t.Helper()
	var added []string
	for range n {
		aid, err := c.client.createCounterIn(pool)
		if err != nil {
			t.Fatal(err)
		}
		added = append(added, aid)
	}
	for _, aid := range added {
		if _, err := c.client.count(http.MethodGet, aid); err != nil {
			t.Fatalf("actor %s never answered: %v", aid, err)
		}
	}
	c.actors = append(c.actors, added...)
}

// addEnvoys gives pool "envoys" a runner config, connects n envoys through the balancer
// (spread over the nodes), waits until all are registered, and adds actors counters hosted
// on them.
func (c *cluster) addEnvoys(t testing.TB, n, actors int) {
	t.Helper()
	if _, err := c.client.do(http.MethodPut, "/runner-configs/"+envoyPool+"?namespace=default",
		`{"datacenters":{"default":{"normal":{}}}}`); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for i := range n {
		key := fmt.Sprintf("envoy-%d", i)
		keys[key] = true
		c.envoys = append(c.envoys, startEnvoy(t, c.lb.URL(), key, 1000))
	}
	// An envoy's start returns at ToEnvoyInit, before the engine registered it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := c.client.do(http.MethodGet, "/envoys?namespace=default", "")
		var out struct {
			Envoys []struct {
				EnvoyKey string `json:"envoy_key"`
			} `json:"envoys"`
		}
		if err == nil {
			err = json.Unmarshal(b, &out)
		}
		listed := 0
		for _, e := range out.Envoys {
			if keys[e.EnvoyKey] {
				listed++
			}
		}
		if err == nil && listed == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d envoys registered within 30s (%v)", listed, n, err)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
	c.addCounters(t, envoyPool, actors)
}

// runnerIDs is each runner's id, in order.
func (c *cluster) runnerIDs() []string {
	out := make([]string, len(c.runners))
	for i, r := range c.runners {
		out[i] = r.RunnerID()
	}
	return out
}
