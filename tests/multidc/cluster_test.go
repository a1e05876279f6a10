package multidc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berthhq/berth/api-public/openapitest"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded" // file://
	"github.com/berthhq/berth/tests/internal/harness"
)

var bg = context.Background()

// buildBerth builds the berth binary into dir and returns its path.
func buildBerth(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "berth")
	out, err := harness.GoBuild(bin, harness.BerthPackage).CombinedOutput() // with BERTH_TEST_BUILD_TAGS
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// dc is one datacenter of a test cluster: its config, store and process.
type dc struct {
	name        string
	label       uint16
	leader      bool
	publicPort  int
	peerPort    int
	metricsPort int
	dbURL       string
	config      string // the config file
	log         string // the process's stderr

	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has been waited for
}

func (d *dc) publicURL() string { return fmt.Sprintf("http://127.0.0.1:%d", d.publicPort) }

// cluster is three datacenters, a (label 1, the leader), b (2) and c (3), on loopback.
type cluster struct {
	t         *testing.T
	bin       string
	dcTimeout time.Duration // api_public.datacenter_timeout_ms
	dcs       []*dc
	client    *http.Client // checks every exchange against openapi.yaml
}

// newCluster writes the configs of three datacenters on free loopback ports, each with a
// file store in its own directory (or, with BERTH_TEST_DB_URL, the shared store under a
// prefix of its own: harness.StoreURL), with fan-out timeout dcTimeout. Nothing runs yet: a test
// seeds the stores (openStore), then calls start.
func newCluster(t *testing.T, bin string, dcTimeout time.Duration) *cluster {
	t.Helper()
	c := &cluster{t: t, bin: bin, dcTimeout: dcTimeout}
	dir := t.TempDir()
	for i, name := range []string{"a", "b", "c"} {
		d := &dc{name: name, label: uint16(i + 1), leader: i == 0,
			dbURL: harness.StoreURL(t, "file://"+filepath.Join(dir, name, "db")), config: filepath.Join(dir, name+".json"), log: filepath.Join(dir, name+".log")}
		c.dcs = append(c.dcs, d)
	}
	c.configure()
	transport := &http.Transport{MaxIdleConnsPerHost: 8}
	t.Cleanup(transport.CloseIdleConnections)
	c.client = &http.Client{Transport: openapitest.NewValidatingTransport(t, transport), Timeout: 30 * time.Second}
	return c
}

// configure gives every datacenter fresh free ports and writes their config files.
func (c *cluster) configure() {
	t := c.t
	t.Helper()
	ports := harness.FreePorts(t, 3*len(c.dcs))
	topo := map[string]any{}
	for i, d := range c.dcs {
		d.publicPort, d.peerPort, d.metricsPort = ports[3*i], ports[3*i+1], ports[3*i+2]
		topo[d.name] = map[string]any{"datacenter_label": d.label, "is_leader": d.leader, "public_url": d.publicURL(),
			"peer_url": fmt.Sprintf("http://127.0.0.1:%d", d.peerPort)}
	}
	for _, d := range c.dcs {
		cfg := map[string]any{
			"topology":   map[string]any{"datacenter_label": d.label, "datacenters": topo},
			"guard":      map[string]any{"host": "127.0.0.1", "port": d.publicPort},
			"api_peer":   map[string]any{"host": "127.0.0.1", "port": d.peerPort},
			"metrics":    map[string]any{"host": "127.0.0.1", "port": d.metricsPort},
			"api_public": map[string]any{"datacenter_timeout_ms": c.dcTimeout.Milliseconds()},
			"database":   map[string]any{"url": d.dbURL},
			// The seeded runners and envoys have no socket: an hour before they count as lost.
			"pegboard": map[string]any{"runner_lost_threshold": 3_600_000, "envoy_lost_threshold": 3_600_000},
		}
		b, err := json.MarshalIndent(cfg, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(d.config, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// openStore opens d's store in this process, for seeding before d starts; the caller closes
// it.
func (d *dc) openStore(t *testing.T) udb.Database {
	t.Helper()
	db, err := udb.Open(bg, d.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// start starts every datacenter's process and waits until each answers /health. A port
// taken meanwhile (FreePorts only saw it free) makes it stop them all and try again on fresh
// ports, twice at most.
func (c *cluster) start() {
	c.t.Helper()
	for attempt := 1; ; attempt++ {
		for _, d := range c.dcs {
			c.startDC(d)
		}
		var err error
		for _, d := range c.dcs {
			if err = c.waitHealthy(d); err != nil {
				break
			}
		}
		if err == nil {
			return
		}
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			c.t.Fatal(err)
		}
		for _, d := range c.dcs {
			d.kill()
		}
		c.configure()
	}
}

// startDC starts `berth start --config` for d in its own process group; the test's cleanup
// kills the group.
func (c *cluster) startDC(d *dc) {
	t := c.t
	t.Helper()
	logf, err := os.Create(d.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(c.bin, "start", "--config", d.config, "--log-level", "warn")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BERTH__") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	d.cmd, d.exited = cmd, exited
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		if t.Failed() && d.cmd == cmd { // the log of the last start only
			b, _ := os.ReadFile(d.log)
			t.Logf("log of datacenter %s:\n%s", d.name, tail(b, 40))
		}
	})
}

// signal sends sig to d's process group.
func (d *dc) signal(sig syscall.Signal) {
	if d.cmd != nil && d.cmd.Process != nil {
		_ = syscall.Kill(-d.cmd.Process.Pid, sig)
	}
}

// hang stops d's process (SIGSTOP) and returns once every one of its threads is seen
// stopped in /proc: the signal takes effect asynchronously, and a sandboxed or loaded machine
// can let the process answer a request after kill(2) has returned.
func (c *cluster) hang(d *dc) {
	c.t.Helper()
	d.signal(syscall.SIGSTOP)
	c.waitThreads(d, true)
}

// resume continues d's process after hang (SIGCONT) and returns once no thread is stopped.
func (c *cluster) resume(d *dc) {
	c.t.Helper()
	d.signal(syscall.SIGCONT)
	c.waitThreads(d, false)
}

// waitThreads polls the states of d's threads in /proc until all are stopped (stopped) or
// none is, until a deadline.
func (c *cluster) waitThreads(d *dc, stopped bool) {
	c.t.Helper()
	dir := fmt.Sprintf("/proc/%d/task", d.cmd.Process.Pid)
	deadline := time.Now().Add(30 * time.Second)
	for {
		states, err := threadStates(dir)
		if err != nil {
			c.t.Fatalf("datacenter %s: reading its threads' states: %v", d.name, err)
		}
		n := strings.Count(states, "T") + strings.Count(states, "t")
		if stopped && n == len(states) || !stopped && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("datacenter %s: threads in states %q after 30s, want all stopped=%v", d.name, states, stopped)
		}
		time.Sleep(time.Millisecond) // /proc has no change notification
	}
}

// threadStates returns the state letter of every thread under dir (/proc/<pid>/task), as
// /proc/<pid>/task/<tid>/stat gives it: the field after the parenthesised command name.
func threadStates(dir string) (string, error) {
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var states []byte
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, task.Name(), "stat"))
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread exited
		}
		if err != nil {
			return "", err
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			return "", fmt.Errorf("%s/%s/stat: unexpected %q", dir, task.Name(), b)
		}
		states = append(states, b[i+2])
	}
	if len(states) == 0 {
		return "", fmt.Errorf("%s: no threads", dir)
	}
	return string(states), nil
}

// kill stops d's process for good and waits for it.
func (d *dc) kill() {
	d.signal(syscall.SIGKILL)
	<-d.exited
}

// waitHealthy polls d's /health until it answers 200; it fails when d exits first or
// after a deadline.
func (c *cluster) waitHealthy(d *dc) error {
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(d.publicURL() + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-d.exited:
			b, _ := os.ReadFile(d.log)
			return fmt.Errorf("datacenter %s exited before it was healthy:\n%s", d.name, tail(b, 40))
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("datacenter %s not healthy after 30s (last error %v)", d.name, err)
		}
	}
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// get calls GET path on d's public API and returns the status and body.
func (c *cluster) get(d *dc, path string) (int, []byte) {
	c.t.Helper()
	resp, err := c.client.Get(d.publicURL() + path)
	if err != nil {
		c.t.Fatalf("GET %s on %s: %v", path, d.name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("GET %s on %s: reading the body: %v", path, d.name, err)
	}
	return resp.StatusCode, b
}

// getJSON calls GET path on d's public API and decodes its 200 answer into out.
func (c *cluster) getJSON(d *dc, path string, out any) {
	c.t.Helper()
	status, b := c.get(d, path)
	if status != http.StatusOK {
		c.t.Fatalf("GET %s on %s: %d %s", path, d.name, status, b)
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(out); err != nil {
		c.t.Fatalf("GET %s on %s: %v", path, d.name, err)
	}
}

// getError calls GET path on d's public API and returns its error answer.
func (c *cluster) getError(d *dc, path string) (int, *rerr.Error) {
	c.t.Helper()
	status, b := c.get(d, path)
	e, err := rerr.Parse(status, b)
	if err != nil {
		c.t.Fatalf("GET %s on %s: not an error answer (%v): %d %.2000s", path, d.name, err, status, b)
	}
	return status, e
}
