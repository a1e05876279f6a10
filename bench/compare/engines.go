package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/berthhq/berth/bench/sidebyside"
	"github.com/berthhq/berth/tests/proc"
)

// Targets, as named in results.json.
const (
	targetBerth = "berth"
	targetRef   = "reference"
	targetPlain = "plain"
)

// engineKind starts one engine of one or more processes (nodes): command writes node i's
// configuration into dir, with its data there too, and returns the command serving the public
// API and the gateway on port, on the session's store st.
type engineKind struct {
	name, target string
	nodes        int
	command      func(dir string, port int, st sessionStore, i int) (*exec.Cmd, error)
}

// sessionStore is where a session's engine keeps its data: its own embedded store in its data
// folder, or a fresh PostgreSQL database (with a NATS server when it has several nodes).
type sessionStore struct {
	postgres string // the database's URL; "" for the embedded store
	nats     string // the NATS server's URL, for several nodes
}

// berthEngine is berth with nodes processes; several share the PostgreSQL database and NATS.
func berthEngine(bin string, nodes int) engineKind {
	name, target := "berth", targetBerth
	if nodes > 1 {
		name, target = fmt.Sprintf("berth ×%d", nodes), fmt.Sprintf("%s_%dnodes", targetBerth, nodes)
	}
	return engineKind{name: name, target: target, nodes: nodes, command: func(dir string, port int, st sessionStore, i int) (*exec.Cmd, error) {
		ports, err := freePorts(1)
		if err != nil {
			return nil, err
		}
		url := fmt.Sprintf("http://127.0.0.1:%d", port)
		db := "file://" + filepath.Join(dir, "db")
		if st.postgres != "" {
			db = st.postgres
		}
		cfg := map[string]any{
			"topology": map[string]any{"datacenter_label": 1, "datacenters": map[string]any{
				"default": map[string]any{"datacenter_label": 1, "is_leader": true, "public_url": url,
					"peer_url": fmt.Sprintf("http://127.0.0.1:%d", ports[0])},
			}},
			// The benchmark's client names rotating client addresses in X-Forwarded-For
			// (sidebyside.XFF), which berth believes only from a trusted proxy.
			"guard":    map[string]any{"host": "127.0.0.1", "port": port, "trusted_proxies": []string{"127.0.0.1"}},
			"api_peer": map[string]any{"host": "127.0.0.1", "port": ports[0]},
			"metrics":  map[string]any{"host": "127.0.0.1", "port": 0},
			"database": map[string]any{"url": db},
		}
		if nodes > 1 {
			cfg["pubsub"] = map[string]any{"url": st.nats}
			cfg["node"] = map[string]any{"id": fmt.Sprintf("n%d", i+1)}
		}
		b, err := json.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		config := filepath.Join(dir, "berth.json")
		if err := os.WriteFile(config, b, 0o600); err != nil {
			return nil, err
		}
		cmd := exec.Command(bin, "start", "--config", config)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "BERTH__") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Dir = dir
		return cmd, nil
	}}
}

func referenceEngine(bin string) engineKind {
	return engineKind{name: "rivet " + sidebyside.RefVersion, target: targetRef, nodes: 1, command: func(dir string, port int, st sessionStore, _ int) (*exec.Cmd, error) {
		ports, err := freePorts(2)
		if err != nil {
			return nil, err
		}
		var extra []map[string]any
		if st.postgres != "" {
			// 2.3.19 reads its store's section at the top level of its configuration
			// ("postgres" or "file_system"); a "database" key is refused as unknown.
			extra = append(extra, map[string]any{"postgres": map[string]any{"url": st.postgres}})
		}
		return sidebyside.ReferenceCommand(bin, dir, port, ports[0], ports[1], extra...)
	}}
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var out []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close() // held until all are chosen, so they differ
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// children are the processes this program started; stopAll kills every one's process group.
type children struct {
	mu    sync.Mutex
	procs []*proc.Proc
}

func newChildren() *children { return &children{} }

// start starts cmd (see proc.Start) and keeps it for stopAll.
func (c *children) start(name string, cmd *exec.Cmd) (*proc.Proc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, err := proc.Start(name, cmd)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// stop stops p and forgets it.
func (c *children) stop(p *proc.Proc) {
	p.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, q := range c.procs {
		if q == p {
			c.procs = append(c.procs[:i], c.procs[i+1:]...)
			break
		}
	}
}

// terminate stops engine process p as its operator would, with SIGTERM, and kills it if it
// has not exited within engineStopWithin; then forgets it. A graceful stop lets an engine do
// what it does on its way out (berth reads its binary back into the page cache for its next
// start, docs/benchmarks.md); both engines get the same.
func (c *children) terminate(p *proc.Proc) {
	p.Signal(syscall.SIGTERM)
	select {
	case <-p.Exited():
	case <-time.After(engineStopWithin):
		logf("  %s: still running %s after SIGTERM, killed", p.Name, engineStopWithin)
	}
	c.stop(p)
}

// engineStopWithin bounds an engine's graceful stop.
const engineStopWithin = 10 * time.Second

// stopAll stops every process still running; it may run more than once, and concurrently.
func (c *children) stopAll() {
	c.mu.Lock()
	procs := append([]*proc.Proc(nil), c.procs...)
	c.mu.Unlock()
	for _, p := range procs {
		p.Kill()
	}
	for _, p := range procs {
		p.Stop()
	}
}

// engine is a running engine: its nodes' processes and URLs.
type engine struct {
	procs []*proc.Proc
	urls  []string
}

// pids are the engine's processes' ids.
func (g *engine) pids() []int {
	var out []int
	for _, p := range g.procs {
		out = append(out, p.PID())
	}
	return out
}

// startEngine starts e's nodes one after the other, node i with data folder dir/node-i (dir
// itself for one node), on st, and returns the engine once each node's GET /health answered
// 200, with how long the first node took from just before its process was started.
func (w *workload) startEngine(ctx context.Context, e engineKind, dir string, st sessionStore) (*engine, time.Duration, error) {
	g := &engine{}
	var first time.Duration
	for i := range e.nodes {
		d := dir
		if e.nodes > 1 {
			d = filepath.Join(dir, fmt.Sprintf("node-%d", i+1))
			if err := os.Mkdir(d, 0o700); err != nil {
				return g, 0, err
			}
		}
		p, url, took, err := w.startNode(ctx, e, d, st, i)
		if err != nil {
			return g, 0, err
		}
		if i == 0 {
			first = took
		}
		g.procs, g.urls = append(g.procs, p), append(g.urls, url)
	}
	return g, first, nil
}

// startNode starts node i of e in dir and returns it once GET /health answers 200, with how
// long that took from just before the process was started.
func (w *workload) startNode(ctx context.Context, e engineKind, dir string, st sessionStore, i int) (*proc.Proc, string, time.Duration, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, "", 0, err
	}
	cmd, err := e.command(dir, ports[0], st, i)
	if err != nil {
		return nil, "", 0, err
	}
	logFile, err := os.Create(filepath.Join(dir, "engine.log"))
	if err != nil {
		return nil, "", 0, err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd.Stdout, cmd.Stderr = logFile, logFile
	url := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	start := time.Now()
	p, err := w.kids.start(e.name, cmd)
	if err != nil {
		return nil, "", 0, err
	}
	deadline := start.Add(60 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, url, time.Since(start), nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		select {
		case <-p.Exited():
			log, _ := os.ReadFile(filepath.Join(dir, "engine.log"))
			return nil, "", 0, fmt.Errorf("%s exited before /health answered:\n%s", e.name, proc.Tail(log, 30))
		case <-ctx.Done():
			return nil, "", 0, ctx.Err()
		case <-time.After(5 * time.Millisecond): // polling interval
		}
		if time.Now().After(deadline) {
			w.kids.stop(p)
			return nil, "", 0, fmt.Errorf("%s: /health does not answer after 60s (last error %v)", e.name, err)
		}
	}
}
