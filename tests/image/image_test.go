// Package image builds the default container image (deploy/container/Dockerfile.prebuilt
// around a static berth built here, FROM scratch, so that no image registry is needed) with
// podman, runs it, connects the Go example runner (examples/counter), calls an actor through
// the gateway, stops the container with SIGTERM and checks the drain, then starts it again on
// the same volume. It skips, saying why, where podman is missing or cannot run a container.
package image

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berthhq/berth/tests/internal/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

const (
	token      = "image-test-token"
	version    = "image-test"
	counterPkg = "github.com/berthhq/berth/examples/counter"
)

// podmanCmd runs podman with args and returns its combined output.
func podmanCmd(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "podman", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// runFlags are the podman run flags of every container of the test: the runtime, and limits
// no higher than this process's own (podman's defaults raise RLIMIT_NOFILE and RLIMIT_NPROC,
// which a sandbox may refuse).
func runFlags(runtime string) []string {
	var f []string
	if runtime != "" {
		f = append(f, "--runtime", runtime)
	}
	for _, l := range []struct {
		name     string
		resource int
		cap      uint64
	}{{"nofile", syscall.RLIMIT_NOFILE, 4096}, {"nproc", 6 /* RLIMIT_NPROC */, 4096}} {
		var r syscall.Rlimit
		if syscall.Getrlimit(l.resource, &r) == nil {
			n := min(r.Cur, l.cap)
			f = append(f, "--ulimit", fmt.Sprintf("%s=%d:%d", l.name, n, n))
		}
	}
	return f
}

// buildContext lays out the context of Dockerfile.prebuilt with a static berth.
func buildContext(t *testing.T) string {
	dir := t.TempDir()
	for _, d := range []string{"rootfs/etc/ssl/certs", "data"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version, // as the Dockerfile
		"-o", filepath.Join(dir, "rootfs", "berth"), harness.BerthPackage)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build (static): %v\n%s", err, out)
	}
	if b, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		if err := os.WriteFile(filepath.Join(dir, "rootfs/etc/ssl/certs/ca-certificates.crt"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// pickRuntime returns the OCI runtime that runs the image (podman's default, else runc when
// installed), or skips the test with each runtime's error.
func pickRuntime(t *testing.T, ctx context.Context, image string) string {
	var tried []string
	runtimes := []string{""}
	if _, err := exec.LookPath("runc"); err == nil {
		runtimes = append(runtimes, "runc")
	}
	for _, rt := range runtimes {
		args := append(append([]string{"run", "--rm"}, runFlags(rt)...), image, "version")
		out, err := podmanCmd(ctx, args...)
		if err == nil {
			if !strings.Contains(out, "berth "+version) {
				t.Fatalf("podman run %s version: %q, want berth %s", image, out, version)
			}
			return rt
		}
		name := rt
		if name == "" {
			name = "podman's default runtime"
		}
		tried = append(tried, fmt.Sprintf("%s: %v: %s", name, err, out))
	}
	t.Skipf("podman cannot run a container on this machine (the image was built):\n%s", strings.Join(tried, "\n"))
	return ""
}

// call sends a request with the admin token and returns the status and body; a transport
// error is status 0.
func call(method, url string, body string) (int, string) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// await polls f every 100 ms until it returns true, or fails the test after within.
func await(t *testing.T, what string, within time.Duration, f func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	last := ""
	for {
		ok, state := f()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last: %s", what, within, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestImage(t *testing.T) {
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("podman is not installed (Debian: apt-get install podman runc); the image is neither built nor run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	name := "berth-image-test-" + hex.EncodeToString(suffix)
	image := "localhost/" + name

	dir := buildContext(t)
	// The docker format keeps HEALTHCHECK (podman's default, OCI, drops it).
	if out, err := podmanCmd(ctx, "build", "--format", "docker", "-t", image,
		"-f", "../../deploy/container/Dockerfile.prebuilt", dir); err != nil {
		t.Fatalf("podman build: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = podmanCmd(context.Background(), "rmi", "-f", image) })

	// The image: non-root, the /data volume, the three ports, the health check.
	out, err := podmanCmd(ctx, "image", "inspect", image)
	if err != nil {
		t.Fatalf("podman image inspect: %v\n%s", err, out)
	}
	var inspected []struct {
		Config struct {
			User         string
			ExposedPorts map[string]any
			Volumes      map[string]any
		}
		Healthcheck *struct{ Test []string }
		Size        int64
	}
	if err := json.Unmarshal([]byte(out), &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("image inspect %s: %v", out, err)
	}
	cfg := inspected[0].Config
	t.Logf("image size %.1f MB", float64(inspected[0].Size)/1e6)
	if h := inspected[0].Healthcheck; h == nil || strings.Join(h.Test, " ") != "CMD /berth health" {
		t.Errorf("image health check %+v, want CMD /berth health", h)
	}
	if cfg.User != "65532:65532" {
		t.Errorf("image user %q, want 65532:65532", cfg.User)
	}
	for _, p := range []string{"6420/tcp", "6421/tcp", "6430/tcp"} {
		if _, ok := cfg.ExposedPorts[p]; !ok {
			t.Errorf("image does not expose %s: %v", p, cfg.ExposedPorts)
		}
	}
	if _, ok := cfg.Volumes["/data"]; !ok {
		t.Errorf("image has no /data volume: %v", cfg.Volumes)
	}

	runtime := pickRuntime(t, ctx, image)
	t.Logf("runtime: %q (empty: podman's default)", runtime)

	// Without a token the image refuses to start rather than serve only its loopback.
	args := append(append([]string{"run", "--rm"}, runFlags(runtime)...), image)
	if out, err := podmanCmd(ctx, args...); err == nil || !strings.Contains(out, "admin_token") {
		t.Errorf("start without a token: %v, %q; want a refusal naming auth.admin_token", err, out)
	}

	volume := name + "-data"
	if out, err := podmanCmd(ctx, "volume", "create", volume); err != nil {
		t.Fatalf("podman volume create: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = podmanCmd(context.Background(), "volume", "rm", "-f", volume) })
	port := harness.FreePorts(t, 1)[0]
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	start := func() {
		t.Helper()
		args := append([]string{"run", "-d", "--name", name}, runFlags(runtime)...)
		args = append(args, "-p", fmt.Sprintf("127.0.0.1:%d:6420", port), "-v", volume+":/data",
			"-e", "BERTH__auth__admin_token="+token, image)
		if out, err := podmanCmd(ctx, args...); err != nil {
			t.Fatalf("podman run: %v\n%s", err, out)
		}
		await(t, "GET /health", 30*time.Second, func() (bool, string) {
			code, body := call(http.MethodGet, base+"/health", "")
			return code == 200 && strings.Contains(body, version), fmt.Sprintf("%d %s", code, body)
		})
	}
	remove := func() { _, _ = podmanCmd(context.Background(), "rm", "-f", "-t", "0", name) }
	t.Cleanup(remove)
	logs := func() string { out, _ := podmanCmd(context.Background(), "logs", name); return out }
	start()
	if code, body := call(http.MethodGet, base+"/health/ready", ""); code != 200 {
		t.Fatalf("GET /health/ready: %d %s", code, body)
	}
	if out, err := podmanCmd(ctx, "healthcheck", "run", name); err != nil {
		t.Errorf("podman healthcheck run: %v\n%s", err, out)
	}

	// The Go example runner, outside the container, through the published port.
	startRunner := func(name string) *harness.Proc {
		t.Helper()
		cmd := exec.Command(harness.Build(t, counterPkg), "-endpoint", base, "-token", token, "-pool", "counter")
		return harness.StartProc(t, name, cmd)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("container:\n%s", harness.Tail([]byte(logs()), 40))
		}
	})
	runnerLog := startRunner("runner")
	await(t, "the counter runner listed", 30*time.Second, func() (bool, string) {
		code, body := call(http.MethodGet, base+"/runners?namespace=default&name=counter", "")
		var l struct {
			Runners []struct {
				Name string `json:"name"`
			} `json:"runners"`
		}
		_ = json.Unmarshal([]byte(body), &l)
		return code == 200 && len(l.Runners) == 1, fmt.Sprintf("%d %s", code, body)
	})

	code, body := call(http.MethodPost, base+"/actors?namespace=default",
		`{"name":"counter","runner_name_selector":"counter","key":"image","crash_policy":"sleep"}`)
	var created struct {
		Actor struct {
			ActorID string `json:"actor_id"`
		} `json:"actor"`
	}
	if err := json.Unmarshal([]byte(body), &created); code != 200 || err != nil || created.Actor.ActorID == "" {
		t.Fatalf("POST /actors: %d %s", code, body)
	}
	gateway := base + "/gateway/" + created.Actor.ActorID + "/"
	await(t, "the first POST through the gateway", 30*time.Second, func() (bool, string) {
		code, body := call(http.MethodPost, gateway, "")
		return code == 200 && body == "1", fmt.Sprintf("%d %s", code, body)
	})
	if code, body := call(http.MethodPost, gateway, ""); code != 200 || body != "2" {
		t.Fatalf("second POST %s: %d %q, want 200 2", gateway, code, body)
	}

	// SIGTERM (podman stop) drains: the runner's socket closes, the drain ends on its own
	// well before node.shutdown_drain_ms, and the process exits 0.
	began := time.Now()
	if out, err := podmanCmd(ctx, "stop", "-t", "30", name); err != nil {
		t.Fatalf("podman stop: %v\n%s", err, out)
	}
	stopped := time.Since(began)
	out, err = podmanCmd(ctx, "inspect", "--format", "{{.State.ExitCode}}", name)
	if err != nil || out != "0" {
		t.Errorf("exit code after SIGTERM: %q (%v), want 0", out, err)
	}
	l := logs()
	if !strings.Contains(l, `msg="berth draining" mode=handoff`) {
		t.Errorf("no drain in the logs:\n%s", harness.Tail([]byte(l), 20))
	}
	var drained string
	for line := range strings.SplitSeq(l, "\n") {
		if strings.Contains(line, `msg="berth drained"`) {
			drained = line
		}
	}
	if !strings.Contains(drained, "sockets=0") || !strings.Contains(drained, "timed_out=false") || !strings.Contains(l, `msg="berth stopped" error=<nil>`) {
		t.Errorf("drain did not end cleanly: %q\n%s", drained, harness.Tail([]byte(l), 20))
	}
	await(t, "the runner told its socket closed with 1011 ws.going_away", 10*time.Second, func() (bool, string) {
		return strings.Contains(string(runnerLog.Stderr()), "ws.going_away"), "not in the runner's log"
	})
	if stopped > 20*time.Second {
		t.Errorf("podman stop took %v: the drain ran into its deadline", stopped)
	}
	t.Logf("podman stop took %v; %s", stopped.Round(time.Millisecond), drained)

	// The count lives in the volume: a new container on it serves the same actor on a new
	// runner, once the first one counts as lost (pegboard.runner_lost_threshold, 15 s) and
	// the actor, which sleeps then, is woken by the request.
	remove()
	start()
	startRunner("second runner")
	await(t, "the count after a restart on the same volume", 90*time.Second, func() (bool, string) {
		code, body := call(http.MethodGet, gateway, "")
		return code == 200 && body == "2", fmt.Sprintf("%d %s", code, body)
	})
}

// The two Dockerfiles make the same image: the instructions after `FROM scratch` agree but
// for the sources of COPY.
func TestDockerfilesAgree(t *testing.T) {
	final := func(path string) []string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, tail, ok := strings.Cut(string(b), "\nFROM scratch\n")
		if !ok {
			t.Fatalf("%s: no FROM scratch stage", path)
		}
		var out []string
		for line := range strings.SplitSeq(strings.ReplaceAll(tail, "\\\n", " "), "\n") {
			line = strings.Join(strings.Fields(line), " ")
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if strings.HasPrefix(line, "COPY ") { // keep the options and the destination
				f := strings.Fields(line)
				var kept []string
				for _, w := range f[1 : len(f)-1] {
					if strings.HasPrefix(w, "--chown") {
						kept = append(kept, w)
					}
				}
				line = "COPY " + strings.Join(kept, " ") + " -> " + f[len(f)-1]
			}
			out = append(out, line)
		}
		return out
	}
	a, b := final("../../Dockerfile"), final("../../deploy/container/Dockerfile.prebuilt")
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatalf("the final stages differ:\nDockerfile:\n%s\n\nDockerfile.prebuilt:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	if len(a) < 8 {
		t.Fatalf("final stage too short to compare: %q", a)
	}
}
