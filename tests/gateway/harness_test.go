package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berthhq/berth/tests/internal/harness"
	"go.uber.org/goleak"
)

// npmDir is tests/npm, relative to this package's directory (where go test runs).
const npmDir = "../npm"

// soon bounds every wait for something the engine or a runner does at once.
const soon = 20 * time.Second

var binDir string

func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "berth-gateway-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	if code == 0 {
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

func berthBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv("BERTH_TEST_BINARY"); p != "" {
			binPath = p
			return
		}
		binPath = filepath.Join(binDir, "berth")
		out, err := harness.GoBuild(binPath, harness.BerthPackage).CombinedOutput() // with BERTH_TEST_BUILD_TAGS
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// engine is a `berth start` process with an in-memory store on loopback ports.
type engine struct {
	t      *testing.T
	url    string // http://127.0.0.1:PORT, the guard port
	log    string
	client *http.Client
}

func startEngine(t *testing.T) *engine {
	t.Helper()
	ports := harness.FreePorts(t, 2)
	dir := t.TempDir()
	e := &engine{t: t, url: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), log: filepath.Join(dir, "berth.log")}
	cfg := map[string]any{
		"topology": map[string]any{"datacenter_label": 1, "datacenters": map[string]any{
			"default": map[string]any{"datacenter_label": 1, "is_leader": true, "public_url": e.url,
				"peer_url": fmt.Sprintf("http://127.0.0.1:%d", ports[1])},
		}},
		"guard":    map[string]any{"host": "127.0.0.1", "port": ports[0]},
		"api_peer": map[string]any{"host": "127.0.0.1", "port": ports[1]},
		"metrics":  map[string]any{"host": "127.0.0.1", "port": 0},
		"database": map[string]any{"url": harness.StoreURL(t, "mem://")}, // BERTH_TEST_DB_URL
	}
	b, _ := json.Marshal(cfg)
	config := filepath.Join(dir, "berth.json")
	if err := os.WriteFile(config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	transport := &http.Transport{MaxIdleConnsPerHost: 8}
	t.Cleanup(transport.CloseIdleConnections)
	e.client = &http.Client{Transport: transport, Timeout: 30 * time.Second}

	logf, err := os.OpenFile(e.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(berthBinary(t), "start", "--config", config, "--log-level", "info")
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
		if t.Failed() {
			b, _ := os.ReadFile(e.log)
			t.Logf("berth log:\n%s", tail(b, 60))
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := e.client.Get(e.url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return e
			}
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(e.log)
			t.Fatalf("berth exited before it was healthy:\n%s", tail(b, 40))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("berth not healthy after 30s (last error %v)", err)
		}
	}
}

func tail(b []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, []byte("\n"))
}

// event is one JSON line of gateway-runner.mjs.
type event struct {
	Ev         string  `json:"ev"`
	RunnerID   string  `json:"runnerId"`
	ActorID    string  `json:"actorId"`
	Generation int     `json:"generation"`
	Name       string  `json:"name"`
	Key        *string `json:"key"`
	Input      *string `json:"input"`
	Path       string  `json:"path"`
	Message    string  `json:"message"`
}

// runner is a gateway-runner.mjs process; its events arrive on a channel in order.
type runner struct {
	t        *testing.T
	events   chan event
	runnerID string
	stdin    io.WriteCloser
	stderr   *bytes.Buffer
}

// startRunner starts the npm echo runner in pool name against e and waits until it is
// connected.
func startRunner(t *testing.T, e *engine, name string) *runner {
	t.Helper()
	needNode(t)
	cmd := exec.Command("node", "gateway-runner.mjs")
	cmd.Dir = npmDir
	cmd.Env = append(os.Environ(), "BERTH_ENDPOINT="+e.url, "RUNNER_NAME="+name)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{t: t, events: make(chan event, 1024), stdin: stdin, stderr: &bytes.Buffer{}}
	cmd.Stderr = &lockedWriter{w: r.stderr}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(r.events)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				continue
			}
			r.events <- ev
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-read
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("runner %s stderr:\n%s", r.runnerID, tail(r.stderr.Bytes(), 30))
		}
	})
	r.runnerID = r.await("connected", func(event) bool { return true }).RunnerID
	return r
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// await returns the next event named ev that ok accepts, skipping others; it fails the test
// after soon or when the runner ends.
func (r *runner) await(ev string, ok func(event) bool) event {
	r.t.Helper()
	timer := time.NewTimer(soon)
	defer timer.Stop()
	for {
		select {
		case e, open := <-r.events:
			if !open {
				r.t.Fatalf("runner ended while waiting for %s", ev)
			}
			if e.Ev == "error" {
				r.t.Errorf("runner error: %s", e.Message)
			}
			if e.Ev == ev && ok(e) {
				return e
			}
		case <-timer.C:
			r.t.Fatalf("runner %s: no %s event within %v", r.runnerID, ev, soon)
		}
	}
}

// apiJSON calls the public API and decodes a 200 answer into out.
func (e *engine) apiJSON(method, path string, body any, out any) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// actorJSON is the part of the REST API's actor the tests look at.
type actorJSON struct {
	ActorID string  `json:"actor_id"`
	Key     *string `json:"key"`
	SleepTs *int64  `json:"sleep_ts"`
}

// createActor creates an echo actor in pool through POST /actors.
func (e *engine) createActor(pool, key string) actorJSON {
	e.t.Helper()
	var out struct {
		Actor actorJSON `json:"actor"`
	}
	e.apiJSON("POST", "/actors?namespace=default", map[string]any{
		"name": "echo", "key": key, "runner_name_selector": pool, "crash_policy": "sleep",
	}, &out)
	return out.Actor
}

func (e *engine) actor(aid string) actorJSON {
	e.t.Helper()
	var out struct {
		Actors []actorJSON `json:"actors"`
	}
	e.apiJSON("GET", "/actors?namespace=default&actor_ids="+aid, nil, &out)
	if len(out.Actors) != 1 {
		e.t.Fatalf("actor %s: listed %d times", aid, len(out.Actors))
	}
	return out.Actors[0]
}

// echo is the echo actor's JSON answer.
type echo struct {
	ActorID    string            `json:"actorId"`
	Generation int               `json:"generation"`
	RunnerID   string            `json:"runnerId"`
	Method     string            `json:"method"`
	Path       string            `json:"path"`
	Headers    map[string]string `json:"headers"`
	Body       []byte            `json:"body"` // base64 in JSON
}

// do sends req and returns the response with its body read.
func (e *engine) do(req *http.Request) (*http.Response, []byte) {
	e.t.Helper()
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	return resp, b
}

// get sends GET to the raw target (path and query as given, not re-encoded).
func (e *engine) get(target string, header http.Header) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.url+"/", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	setTarget(req, target)
	for k, v := range header {
		req.Header[k] = v
	}
	return e.do(req)
}

// setTarget makes req's request-target exactly target (an origin-form path and query).
func setTarget(req *http.Request, target string) {
	req.URL.Opaque = ""
	path, query, _ := strings.Cut(target, "?")
	req.URL.Path, req.URL.RawPath, req.URL.RawQuery = path, path, query
	req.URL.Opaque = path
}

// decodeEcho decodes an echo answer, failing the test on anything else.
func decodeEcho(t *testing.T, resp *http.Response, b []byte) echo {
	t.Helper()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Echo") != "1" {
		t.Fatalf("%s: %d %s %s", resp.Request.URL, resp.StatusCode, resp.Header.Get("X-Rivet-Error"), b)
	}
	var out echo
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("echo: %v in %s", err, b)
	}
	return out
}
