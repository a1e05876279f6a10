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

// engineKind starts one engine: command writes its configuration into dir, with its data
// there too, and returns the command serving the public API and the gateway on port.
type engineKind struct {
	name, target string
	command      func(dir string, port int) (*exec.Cmd, error)
}

func berthEngine(bin string) engineKind {
	return engineKind{name: "berth", target: targetBerth, command: func(dir string, port int) (*exec.Cmd, error) {
		ports, err := freePorts(1)
		if err != nil {
			return nil, err
		}
		url := fmt.Sprintf("http://127.0.0.1:%d", port)
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
			"database": map[string]any{"url": "file://" + filepath.Join(dir, "db")},
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
	return engineKind{name: "rivet " + sidebyside.RefVersion, target: targetRef, command: func(dir string, port int) (*exec.Cmd, error) {
		ports, err := freePorts(2)
		if err != nil {
			return nil, err
		}
		return sidebyside.ReferenceCommand(bin, dir, port, ports[0], ports[1])
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

// startEngine starts e with a fresh data folder under tmp and returns it once GET /health
// answers 200, with how long that took from just before the process was started.
func (w *workload) startEngine(ctx context.Context, e engineKind, dir string) (*proc.Proc, string, time.Duration, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, "", 0, err
	}
	cmd, err := e.command(dir, ports[0])
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
