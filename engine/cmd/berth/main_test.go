package main

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStartConfigErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("guard:\n  prot: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args, env []string
		want      []string
	}{
		{args: []string{"--config", bad}, want: []string{"guard.prot: unknown key", "bad.yaml:2:"}},
		{args: []string{"--listen", "6420"}, want: []string{`--listen "6420": want host:port`}},
		{args: []string{"--listen", ":http"}, want: []string{"guard.port: want an integer", "(flag --listen)"}},
		{args: []string{"--db", "redis://x"}, want: []string{`database.url: invalid URL "redis://x"`, "(flag --db)"}},
		{env: []string{"BERTH__auth__admin_token="}, want: []string{"auth.admin_token: empty"}},
		{args: []string{"--log-level", "loud"}, want: []string{"--log-level"}},
		{args: []string{"extra"}, want: []string{`unexpected arguments "extra"`}},
		{args: []string{"--config", bad, "--db", "redis://x"}, want: []string{"guard.prot", "database.url"}},
		{args: []string{"--listen", "0.0.0.0:0", "--db", "mem://"}, want: []string{`guard.host: "0.0.0.0" can be reached from other machines`, "auth.allow_anonymous"}},
	}
	for _, tt := range tests {
		err := start(context.Background(), tt.args, tt.env)
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("start %q env %q = %v, want it to contain %q", tt.args, tt.env, err, w)
			}
		}
	}
}

// TestStartListenerInUse takes a port, then starts berth with each listener on it in turn:
// the start fails with a message naming the listener, the flag and the configuration key.
func TestStartListenerInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	free := "127.0.0.1:0"
	tests := []struct {
		listen, peer, metrics string
		want                  string
	}{
		{addr, free, free, "the api-public listener cannot bind " + addr + ": address already in use; change it with --listen or guard.port"},
		{free, addr, free, "the api-peer listener cannot bind " + addr + ": address already in use; change it with --peer-listen or api_peer.port"},
		{free, free, addr, "the metrics listener cannot bind " + addr + ": address already in use; change it with --metrics-listen or metrics.port"},
	}
	for _, tt := range tests {
		err := start(context.Background(), []string{"--db", "mem://", "--listen", tt.listen,
			"--peer-listen", tt.peer, "--metrics-listen", tt.metrics}, nil)
		if err == nil || err.Error() != tt.want {
			t.Errorf("start = %v, want %q", err, tt.want)
		}
	}
	for _, flag := range []string{"--peer-listen", "--metrics-listen"} {
		err := start(context.Background(), []string{"--db", "mem://", flag, "6421"}, nil)
		if want := flag + ` "6421": want host:port`; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("start %s 6421 = %v, want %q", flag, err, want)
		}
	}
}

// TestBinary builds berth, starts it as `make run` does (on free ports, with flags and the
// environment), checks that it answers, and stops it with SIGTERM.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "berth")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "berth.json")
	if err := os.WriteFile(cfg, []byte(`{"auth": {"admin_token": "tok"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "start", "--config", cfg, "--listen", "127.0.0.1:0", "--db", "file://data/berth")
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BERTH__") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "BERTH__api_peer__host=127.0.0.1", "BERTH__api_peer__port=0",
		"BERTH__metrics__host=127.0.0.1", "BERTH__metrics__port=0")
	output, w, err := os.Pipe() // the log goes to stderr; ours to read until the process exits
	if err != nil {
		t.Fatal(err)
	}
	defer output.Close()
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()

	// Wait for the start line, which names both addresses.
	started := regexp.MustCompile(`msg="berth started" public=(\S+) peer=(\S+)`)
	lines := bufio.NewScanner(output)
	var public, peer string
	for lines.Scan() {
		if m := started.FindStringSubmatch(lines.Text()); m != nil {
			public, peer = m[1], m[2]
			break
		}
	}
	if public == "" {
		t.Fatalf("no start line (scan error %v)", lines.Err())
	}
	drained := make(chan struct{})
	go func() { // keep reading so the process never blocks on a full pipe
		defer close(drained)
		for lines.Scan() {
		}
	}()
	defer func() {
		_ = cmd.Process.Kill() // in case the test failed before SIGTERM
		<-drained
	}()

	client := &http.Client{Timeout: 10 * time.Second}
	for _, tc := range []struct {
		addr, path, token string
		status            int
	}{
		{public, "/health", "", 200},
		{peer, "/health", "", 200},
		{public, "/datacenters", "", 401},
		{public, "/datacenters", "tok", 200},
		{peer, "/datacenters", "nope", 403},
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+tc.addr+tc.path, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s%s: %v", tc.addr, tc.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("GET %s%s: %d, want %d", tc.addr, tc.path, resp.StatusCode, tc.status)
		}
	}
	client.CloseIdleConnections()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("berth after SIGTERM: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "berth")); err != nil {
		t.Errorf("the file store was not created: %v", err)
	}
}
