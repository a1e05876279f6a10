package helm

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestEngineAnswersProbes starts berth (BERTH_TEST_BINARY, or built; skipped with -short
// then) with the
// configuration and environment the default values render, and sends it what the kubelet
// and Prometheus would: the readiness and liveness probes, a scrape at the ServiceMonitor's
// path, then SIGTERM, after which it must exit within the grace period. Only the store and
// the ports are moved (to a temporary folder and free ports), through the environment.
func TestEngineAnswersProbes(t *testing.T) {
	bin := berthBinary(t)
	r := renderFile(t, "")
	spec := &r.statefulSets[0].Spec.Template.Spec
	c := &spec.Containers[0]
	text, ok := mountedFile(t, r, spec, c, c.Args[2])
	if !ok {
		t.FailNow()
	}
	dir := t.TempDir()
	file := filepath.Join(dir, filepath.Base(c.Args[2]))
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, 3)
	environ := append(resolveEnv(t, r, c.Env),
		"PATH="+os.Getenv("PATH"),
		"BERTH__database__url=file://"+filepath.Join(dir, "store"),
		fmt.Sprintf("BERTH__guard__port=%d", ports[0]),
		fmt.Sprintf("BERTH__api_peer__port=%d", ports[1]),
		fmt.Sprintf("BERTH__metrics__port=%d", ports[2]))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, c.Args...)
	cmd.Args[3] = file
	cmd.Env = environ
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()

	get := func(port int, path string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	ready := c.ReadinessProbe.HTTPGet.Path
	deadline := time.Now().Add(30 * time.Second)
	for get(ports[0], ready) != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("GET %s on the guard port never answered 200", ready)
		}
		select {
		case err := <-exited:
			t.Fatalf("berth exited: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if code := get(ports[0], c.LivenessProbe.HTTPGet.Path); code != http.StatusOK {
		t.Errorf("liveness GET %s: %d", c.LivenessProbe.HTTPGet.Path, code)
	}
	if code := get(ports[2], "/metrics"); code != http.StatusOK {
		t.Errorf("GET /metrics on the metrics port: %d", code)
	}

	grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the deferred Wait
		if err != nil {
			t.Errorf("berth exited after SIGTERM with %v", err)
		}
		t.Logf("drained and exited %v after SIGTERM (grace period %v)", time.Since(start).Round(time.Millisecond), grace)
	case <-time.After(grace):
		t.Errorf("berth still running %v after SIGTERM: the kubelet would kill it", grace)
	}
}

// freePorts returns n ports free on this machine a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var out []int
	for len(out) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
