package harness

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berthhq/berth/api-public/openapitest"
	"github.com/berthhq/berth/pkg/tlstest"
)

// Settings are what a test sets in the engine's configuration; zero fields keep the defaults.
// The pegboard timings are in milliseconds (engine/config: the lost and eligible thresholds
// must exceed the ping interval plus 128 ms).
type Settings struct {
	AdminToken string // auth.admin_token

	LostThresholdMs       uint32 // pegboard.runner_lost_threshold
	EligibleThresholdMs   uint32 // pegboard.runner_eligible_threshold
	PingIntervalMs        uint32 // pegboard.runner_update_ping_interval_ms
	PingTimeoutMs         uint32 // pegboard.runner_ping_timeout_ms
	ActorStartThresholdMs uint32 // pegboard.actor_start_threshold
	ActorStopThresholdMs  uint32 // pegboard.actor_stop_threshold
	BaseRetryTimeoutMs    uint32 // pegboard.base_retry_timeout

	// Ports, when set, are the guard's and api-peer's ports (from FreePorts), for a
	// topology that names them before the engine starts; nil picks fresh ones.
	Ports []int

	// Env is extra environment for the engine process (GODEBUG=…, GOMAXPROCS=…); BERTH__*
	// variables of the test's own environment are never passed on.
	Env []string

	// TLS, when set, serves the guard port and api-peer over TLS with a certificate for
	// 127.0.0.1 of this authority (URL is then https://), and Client trusts it.
	TLS *tlstest.CA

	// Configure, when set, edits the configuration (decoded JSON, the sections above
	// filled in) before it is written: for what has no field here (pubsub, node, topology
	// URLs).
	Configure func(cfg map[string]any)
}

// Engine is a `berth start` process on loopback ports; it can be stopped (or killed) and
// started again with the same configuration and store.
type Engine struct {
	URL    string       // http://127.0.0.1:PORT, the guard port: public API, gateway and /runners/connect
	Client *http.Client // checks every exchange against openapi.yaml (see openapitest.Unchecked)
	Token  string       // the admin token, sent as a bearer token by Do

	t      testing.TB
	bin    string
	env    []string
	config string // the config file
	log    string // the processes' output, appended by each start

	st    Settings
	dbURL string
	dir   string
	tls   *tls.Config // the client side, with TLS
	ran   bool        // started once: the ports are given out and stay

	cmd    *exec.Cmd     // the current process
	exited chan struct{} // closed once the current process has been waited for
}

// configure writes the configuration file with fresh loopback ports.
func (e *Engine) configure() {
	t, st := e.t, e.st
	t.Helper()
	ports := st.Ports
	if len(ports) != 2 {
		ports = FreePorts(t, 2)
	}
	scheme := "http"
	if st.TLS != nil {
		scheme = "https"
	}
	e.URL = fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[0])
	pegboard := map[string]any{}
	for name, v := range map[string]uint32{
		"runner_lost_threshold":          st.LostThresholdMs,
		"runner_eligible_threshold":      st.EligibleThresholdMs,
		"runner_update_ping_interval_ms": st.PingIntervalMs,
		"runner_ping_timeout_ms":         st.PingTimeoutMs,
		"actor_start_threshold":          st.ActorStartThresholdMs,
		"actor_stop_threshold":           st.ActorStopThresholdMs,
		"base_retry_timeout":             st.BaseRetryTimeoutMs,
	} {
		if v != 0 {
			pegboard[name] = v
		}
	}
	cfg := map[string]any{
		"topology": map[string]any{"datacenter_label": 1, "datacenters": map[string]any{
			"default": map[string]any{"datacenter_label": 1, "is_leader": true, "public_url": e.URL,
				"peer_url": fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[1])},
		}},
		"guard":    map[string]any{"host": "127.0.0.1", "port": ports[0]},
		"api_peer": map[string]any{"host": "127.0.0.1", "port": ports[1]},
		"metrics":  map[string]any{"host": "127.0.0.1", "port": 0},
		"database": map[string]any{"url": e.dbURL},
		"pegboard": pegboard,
	}
	if st.AdminToken != "" {
		cfg["auth"] = map[string]any{"admin_token": st.AdminToken}
	}
	if st.TLS != nil {
		cert, key := st.TLS.Issue(t, e.dir, "berth", "127.0.0.1")
		cfg["guard"].(map[string]any)["tls"] = map[string]any{"cert_file": cert, "key_file": key}
		cfg["api_peer"].(map[string]any)["tls"] = map[string]any{"cert_file": cert, "key_file": key, "ca_file": st.TLS.File}
	}
	if st.Configure != nil {
		st.Configure(cfg)
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.config, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// StartEngine starts berth with st and an in-memory store and waits until /health answers.
func StartEngine(t testing.TB, st Settings) *Engine {
	t.Helper()
	e := NewEngine(t, st, "mem://")
	e.Start()
	return e
}

// NewEngine writes the configuration of an engine with st and the store dbURL on free
// loopback ports; Start runs it. The test's cleanup prints the log if the test failed.
// With BERTH_TEST_DB_URL set, a mem:// or file:// dbURL is replaced once, here, by the shared
// store under a prefix of its own (StoreURL), which every restart of the engine keeps.
func NewEngine(t testing.TB, st Settings, dbURL string) *Engine {
	t.Helper()
	dir := t.TempDir()
	e := &Engine{t: t, bin: Binary(t), env: st.Env, Token: st.AdminToken, st: st, dbURL: StoreURL(t, dbURL),
		config: filepath.Join(dir, "berth.json"), log: filepath.Join(dir, "berth.log"), dir: dir}
	if st.TLS != nil {
		e.tls = &tls.Config{RootCAs: st.TLS.Pool()}
	}
	e.configure()
	transport := &http.Transport{MaxIdleConnsPerHost: 16, TLSClientConfig: e.tls}
	t.Cleanup(transport.CloseIdleConnections)
	e.Client = &http.Client{Transport: openapitest.NewValidatingTransport(t, transport), Timeout: 10 * time.Second}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(e.log)
			t.Logf("berth log:\n%s", Tail(b, 60))
		}
	})
	return e
}

// Start runs `berth start` in its own process group and waits until /health answers; the
// test's cleanup kills the process. At the first start, a port taken meanwhile (FreePorts
// only saw it free) makes it try again on fresh ports; later starts keep the ports.
func (e *Engine) Start() {
	e.t.Helper()
	for attempt := 1; ; attempt++ {
		err := e.start()
		if err == nil {
			e.ran = true
			return
		}
		if e.ran || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			e.t.Fatal(err)
		}
		e.configure()
	}
}

func (e *Engine) start() error {
	t := e.t
	t.Helper()
	logf, err := os.OpenFile(e.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(e.bin, "start", "--config", e.config, "--log-level", "info")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BERTH__") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, e.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	e.cmd, e.exited = cmd, exited
	return e.waitHealthy()
}

// PID is the current process's id.
func (e *Engine) PID() int { return e.cmd.Process.Pid }

// Stop sends SIGTERM (a graceful shutdown) and waits for the process to exit.
func (e *Engine) Stop() {
	e.t.Helper()
	const within = 15 * time.Second
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-e.exited:
	case <-time.After(within):
		e.t.Fatalf("berth did not exit within %v of SIGTERM", within)
	}
}

// Kill sends SIGKILL (a crash: nothing is flushed or released) and waits for the process to
// be gone.
func (e *Engine) Kill() {
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	<-e.exited
}

// Log returns the engine's output so far (every start).
func (e *Engine) Log() []byte {
	b, _ := os.ReadFile(e.log)
	return b
}

// FreePorts returns n distinct loopback ports that were free a moment ago, for processes
// that are told their ports before they start. They are drawn at random below the kernel's
// ephemeral range (ip_local_port_range), where nothing takes a port without asking for it by
// number: a port from that range (a listener on port 0, or the local end of any outgoing
// connection of any test running alongside) could be taken before the process binds it.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	lo, hi := 10000, ephemeralLow()-1
	var out []int
	for tries := 0; len(out) < n; tries++ {
		if tries == 100*n {
			t.Fatalf("no %d free loopback ports in %d-%d after %d tries", n, lo, hi, tries)
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", lo+rand.IntN(hi-lo+1)))
		if err != nil {
			continue // taken
		}
		defer ln.Close() // held until all are chosen, so they differ
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's default 32768
// where /proc does not tell).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var low int
	if _, err := fmt.Sscan(string(b), &low); err != nil || low <= 12000 {
		return 32768
	}
	return low
}

func (e *Engine) waitHealthy() error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: e.tls}}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(e.URL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-e.exited:
			return fmt.Errorf("berth exited before it was healthy:\n%s", Tail(e.Log(), 40))
		case <-time.After(20 * time.Millisecond): // polling interval
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("berth not healthy after 30s (last error %v)", err)
		}
	}
}

// ConnectURL is the runner socket's URL with query q (already encoded).
func (e *Engine) ConnectURL(q string) string {
	return "ws" + strings.TrimPrefix(e.URL, "http") + "/runners/connect?" + q
}

// Do sends req with the admin token, if any.
func (e *Engine) Do(req *http.Request) (*http.Response, error) {
	if e.Token != "" {
		req.Header.Set("Authorization", "Bearer "+e.Token)
	}
	return e.Client.Do(req)
}

// Call sends method path (on the engine's URL) with body encoded as JSON (nil for none) and
// returns the status and the answer's body; it fails the test only if no answer came.
func (e *Engine) Call(t testing.TB, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, b
}

// CallJSON is Call that wants a 200 answer and decodes it into out (nil to skip).
func (e *Engine) CallJSON(t testing.TB, method, path string, body, out any) {
	t.Helper()
	status, b := e.Call(t, method, path, body)
	if status != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// GetJSON calls GET path on the public API and decodes its 200 answer into out.
func (e *Engine) GetJSON(t testing.TB, path string, out any) {
	t.Helper()
	e.CallJSON(t, http.MethodGet, path, nil, out)
}

// PostJSON calls POST path on the public API with no body and decodes its 200 answer into out.
func (e *Engine) PostJSON(t testing.TB, path string, out any) {
	t.Helper()
	e.CallJSON(t, http.MethodPost, path, nil, out)
}

// MetricsURL is the Prometheus endpoint of the current process (its port is chosen at
// start), from the log line announcing the start; "" if not found.
func (e *Engine) MetricsURL() string {
	lines := strings.Split(string(e.Log()), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if !strings.Contains(lines[i], `msg="berth started"`) {
			continue
		}
		for _, f := range strings.Fields(lines[i]) {
			if addr, ok := strings.CutPrefix(f, "metrics="); ok {
				return "http://" + addr + "/metrics"
			}
		}
		return ""
	}
	return ""
}
