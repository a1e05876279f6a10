package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/berthhq/berth/api-public/openapitest"
)

// npmDir is tests/npm, where the node scripts and their packages are, relative to this
// package's directory (where go test runs).
const npmDir = "../npm"

// binDir holds the berth binary built for this run; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "berth-runner-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	if code == 0 {
		// Every process reader and waiter ends with its process, at the test's cleanup.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// needNode skips t when node or the npm packages are missing.
func needNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the npm runner tests need Node 20 or later")
	}
	if _, err := os.Stat(filepath.Join(npmDir, "node_modules", "@rivetkit", "engine-runner", "package.json")); err != nil {
		t.Skip("tests/npm/node_modules is missing: run `npm ci --prefix tests/npm`")
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// berthBinary returns the berth binary: BERTH_TEST_BINARY when set, else one built once per run.
func berthBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv("BERTH_TEST_BINARY"); p != "" {
			binPath = p
			return
		}
		binPath = filepath.Join(binDir, "berth")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/berthhq/berth/engine/cmd/berth").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// settings are what a test sets in the engine's configuration; zero fields keep the defaults.
type settings struct {
	AdminToken      string // auth.admin_token
	LostThresholdMs uint32 // pegboard.runner_lost_threshold
	PingIntervalMs  uint32 // pegboard.runner_update_ping_interval_ms
	PingTimeoutMs   uint32 // pegboard.runner_ping_timeout_ms
}

// engine is a `berth start` process on loopback ports; it can be stopped and started again
// with the same configuration.
type engine struct {
	t      *testing.T
	bin    string
	url    string // http://127.0.0.1:PORT, the guard port: public API and /runners/connect
	config string // the config file
	log    string // the processes' output, appended by each start
	token  string // the admin token, sent as a bearer token with each API call
	client *http.Client

	cmd    *exec.Cmd     // the current process
	exited chan struct{} // closed once the current process has been waited for
}

// startEngine starts berth with st and an in-memory store and waits until /health answers.
func startEngine(t *testing.T, st settings) *engine {
	t.Helper()
	e := newEngine(t, st, "mem://")
	e.start()
	return e
}

// newEngine writes the configuration of an engine with st and the store dbURL on free
// loopback ports; start runs it. The test's cleanup prints the log if the test failed.
func newEngine(t *testing.T, st settings, dbURL string) *engine {
	t.Helper()
	ports := freePorts(t, 2)
	dir := t.TempDir()
	e := &engine{t: t, bin: berthBinary(t), token: st.AdminToken, url: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		config: filepath.Join(dir, "berth.json"), log: filepath.Join(dir, "berth.log")}
	pegboard := map[string]any{}
	if st.LostThresholdMs != 0 {
		pegboard["runner_lost_threshold"] = st.LostThresholdMs
	}
	if st.PingIntervalMs != 0 {
		pegboard["runner_update_ping_interval_ms"] = st.PingIntervalMs
	}
	if st.PingTimeoutMs != 0 {
		pegboard["runner_ping_timeout_ms"] = st.PingTimeoutMs
	}
	cfg := map[string]any{
		"topology": map[string]any{"datacenter_label": 1, "datacenters": map[string]any{
			"default": map[string]any{"datacenter_label": 1, "is_leader": true, "public_url": e.url,
				"peer_url": fmt.Sprintf("http://127.0.0.1:%d", ports[1])},
		}},
		"guard":    map[string]any{"host": "127.0.0.1", "port": ports[0]},
		"api_peer": map[string]any{"host": "127.0.0.1", "port": ports[1]},
		"metrics":  map[string]any{"host": "127.0.0.1", "port": 0},
		"database": map[string]any{"url": dbURL},
		"pegboard": pegboard,
	}
	if st.AdminToken != "" {
		cfg["auth"] = map[string]any{"admin_token": st.AdminToken}
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	transport := &http.Transport{MaxIdleConnsPerHost: 4}
	t.Cleanup(transport.CloseIdleConnections)
	e.client = &http.Client{Transport: openapitest.NewValidatingTransport(t, transport), Timeout: 10 * time.Second}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(e.log)
			t.Logf("berth log:\n%s", tail(b, 60))
		}
	})
	return e
}

// start runs `berth start` in its own process group and waits until /health answers; the
// test's cleanup kills the process.
func (e *engine) start() {
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
	e.waitHealthy()
}

// stop sends SIGTERM (a graceful shutdown) and waits for the process to exit.
func (e *engine) stop() {
	e.t.Helper()
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-e.exited:
	case <-time.After(soon):
		e.t.Fatalf("berth did not exit within %v of SIGTERM", soon)
	}
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var out []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close() // held until all are chosen, so they differ
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out
}

func (e *engine) waitHealthy() {
	e.t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(e.url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-e.exited:
			b, _ := os.ReadFile(e.log)
			e.t.Fatalf("berth exited before it was healthy:\n%s", tail(b, 40))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("berth not healthy after 30s (last error %v)", err)
		}
	}
}

// connectURL is the runner socket's URL with query q (already encoded).
func (e *engine) connectURL(q string) string {
	return "ws" + strings.TrimPrefix(e.url, "http") + "/runners/connect?" + q
}

// runnerJSON is a runner as GET /runners shows it; nullable fields are pointers.
type runnerJSON struct {
	RunnerID        string          `json:"runner_id"`
	NamespaceID     string          `json:"namespace_id"`
	Datacenter      string          `json:"datacenter"`
	Name            string          `json:"name"`
	Key             string          `json:"key"`
	Version         uint32          `json:"version"`
	TotalSlots      uint32          `json:"total_slots"`
	RemainingSlots  uint32          `json:"remaining_slots"`
	CreateTs        int64           `json:"create_ts"`
	DrainTs         *int64          `json:"drain_ts"`
	StopTs          *int64          `json:"stop_ts"`
	LastPingTs      int64           `json:"last_ping_ts"`
	LastConnectedTs *int64          `json:"last_connected_ts"`
	LastRtt         uint32          `json:"last_rtt"`
	Metadata        json.RawMessage `json:"metadata"`
}

func (r runnerJSON) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// do sends req with the admin token, if any.
func (e *engine) do(req *http.Request) (*http.Response, error) {
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	return e.client.Do(req)
}

// getJSON calls GET path on the public API (checked against openapi.yaml) and decodes its 200
// answer into out.
func (e *engine) getJSON(t *testing.T, path string, out any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, b)
	}
}

// postJSON calls POST path on the public API (checked against openapi.yaml) with no body and
// decodes its 200 answer into out.
func (e *engine) postJSON(t *testing.T, path string, out any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("POST %s: %v in %s", path, err, b)
	}
}

// drain drains runner id through POST /runners/{id}/drain and returns the runner as answered.
func (e *engine) drain(t *testing.T, id string) runnerJSON {
	t.Helper()
	var out struct {
		Runner runnerJSON `json:"runner"`
	}
	e.postJSON(t, "/runners/"+url.PathEscape(id)+"/drain?namespace=default", &out)
	return out.Runner
}

// runners lists the default namespace's runners with the extra query q ("" for none).
func (e *engine) runners(t *testing.T, q string) []runnerJSON {
	t.Helper()
	var out struct {
		Runners []runnerJSON `json:"runners"`
	}
	path := "/runners?namespace=default"
	if q != "" {
		path += "&" + q
	}
	e.getJSON(t, path, &out)
	return out.Runners
}

// runner returns runner id as listed with include_stopped=true, or false if it is not listed.
func (e *engine) runner(t *testing.T, id string) (runnerJSON, bool) {
	t.Helper()
	for _, r := range e.runners(t, "include_stopped=true&runner_id="+url.QueryEscape(id)) {
		if r.RunnerID == id {
			return r, true
		}
	}
	return runnerJSON{}, false
}

// listed reports whether the default list (no include_stopped) holds runner id.
func (e *engine) listed(t *testing.T, id string) bool {
	t.Helper()
	for _, r := range e.runners(t, "") {
		if r.RunnerID == id {
			return true
		}
	}
	return false
}

// awaitRunner polls runner id (include_stopped) every 50 ms until ok accepts it, for at most
// within; it fails the test with the last state seen.
func (e *engine) awaitRunner(t *testing.T, id, what string, within time.Duration, ok func(runnerJSON) bool) runnerJSON {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r, found := e.runner(t, id)
		if found && ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("runner %s: not %s within %v; last seen: %v (listed %v)", id, what, within, r, found)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
	}
}

// defaultNamespaceID is the id of the namespace "default".
func (e *engine) defaultNamespaceID(t *testing.T) string {
	t.Helper()
	var out struct {
		Namespaces []struct {
			NamespaceID string `json:"namespace_id"`
			Name        string `json:"name"`
		} `json:"namespaces"`
	}
	e.getJSON(t, "/namespaces?name=default", &out)
	for _, ns := range out.Namespaces {
		if ns.Name == "default" {
			return ns.NamespaceID
		}
	}
	t.Fatalf("no namespace named default in %+v", out.Namespaces)
	return ""
}

// event is one JSON line of a node script; each script fills the fields it knows.
type event struct {
	Ev string `json:"ev"`

	RunnerKey                  string `json:"runnerKey"`
	RunnerID                   string `json:"runnerId"`
	RunnerLostThreshold        *int64 `json:"runnerLostThreshold"`
	ActorStopThreshold         *int64 `json:"actorStopThreshold"`
	ServerlessDrainGracePeriod *int64 `json:"serverlessDrainGracePeriod"`
	Ts                         int64  `json:"ts"`
	Code                       int    `json:"code"`
	Reason                     string `json:"reason"`
	Command                    string `json:"command"`
	Message                    string `json:"message"`
	Protocol                   string `json:"protocol"`
	Tag                        string `json:"tag"`
	What                       string `json:"what"`
	Status                     int    `json:"status"`
	Body                       string `json:"body"`

	at   time.Time // when the line was read
	line string
}

// proc is a node script in its own process group, read line by line.
type proc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *lockedBuffer
	exited chan struct{} // closed after the output is read and the process waited for

	mu     sync.Mutex
	events []event
	done   bool          // the output ended
	wake   chan struct{} // closed and replaced at each new event
	cursor int           // events before it have been consumed by await
}

// startNode runs `node script args...` in tests/npm with extra environment env; the test's
// cleanup kills it and prints its output if the test failed.
func startNode(t *testing.T, name, script string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, stderr: &lockedBuffer{}, exited: make(chan struct{}), wake: make(chan struct{})}
	p.cmd = exec.Command("node", append([]string{script}, args...)...)
	p.cmd.Dir = npmDir
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go p.read(stdout)
	t.Cleanup(func() {
		p.stdin.Close()
		p.kill()
		<-p.exited
		if t.Failed() {
			t.Logf("%s output:\n%s\n%s stderr:\n%s", name, p.transcript(), name, tail(p.stderr.Bytes(), 30))
		}
	})
	return p
}

// read collects the script's events until its output ends, then waits for the process.
func (p *proc) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		ev := event{at: time.Now(), line: sc.Text()}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			ev = event{Ev: "unparsed", at: ev.at, line: ev.line}
		}
		p.mu.Lock()
		p.events = append(p.events, ev)
		close(p.wake)
		p.wake = make(chan struct{})
		p.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, stdout)
	_ = p.cmd.Wait()
	p.mu.Lock()
	p.done = true
	close(p.wake)
	p.mu.Unlock()
	close(p.exited)
}

// send writes one command line to the script's stdin. A script that has already ended (a
// socket the server closed at once) cannot take it; the next await reports that if it matters.
func (p *proc) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Logf("%s: send %q: %v", p.name, line, err)
	}
}

// kill sends SIGKILL to the script's process group.
func (p *proc) kill() { p.signal(syscall.SIGKILL) }

// signal sends sig to the script's process group.
func (p *proc) signal(sig syscall.Signal) {
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
}

// await returns the first event after the last awaited one that ok accepts; it fails the test
// if none comes within the timeout or the script ends first. Events it passes over stay in
// the transcript.
func (p *proc) await(what string, within time.Duration, ok func(event) bool) event {
	p.t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		p.mu.Lock()
		for p.cursor < len(p.events) {
			ev := p.events[p.cursor]
			p.cursor++
			if ok(ev) {
				p.mu.Unlock()
				return ev
			}
		}
		done, wake := p.done, p.wake
		p.mu.Unlock()
		if done {
			p.t.Fatalf("%s ended before %s; its output:\n%s\nstderr:\n%s", p.name, what, p.transcript(), tail(p.stderr.Bytes(), 30))
		}
		select {
		case <-wake:
		case <-timer.C:
			p.t.Fatalf("%s: no %s within %v; its output:\n%s", p.name, what, within, p.transcript())
		}
	}
}

// awaitEv awaits the next event named name.
func (p *proc) awaitEv(name string, within time.Duration) event {
	p.t.Helper()
	return p.await(name, within, func(ev event) bool { return ev.Ev == name })
}

// seen returns every event read so far, awaited or not.
func (p *proc) seen() []event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]event(nil), p.events...)
}

// count returns how many events named name were read so far.
func (p *proc) count(name string) int {
	n := 0
	for _, ev := range p.seen() {
		if ev.Ev == name {
			n++
		}
	}
	return n
}

func (p *proc) transcript() string {
	var b strings.Builder
	for _, ev := range p.seen() {
		fmt.Fprintf(&b, "  %s %s\n", ev.at.Format("15:04:05.000"), ev.line)
	}
	return b.String()
}

// lockedBuffer is a bytes.Buffer safe for the writer goroutine exec starts and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.b.Bytes()...)
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
