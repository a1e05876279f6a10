package runnerload

import (
	"bufio"
	"bytes"
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

// buildBerth builds the berth binary into dir and returns its path; RUNNERLOAD_BERTH names
// a binary built beforehand to use instead (e.g. from a fixed commit while the tree moves).
func buildBerth(tb testing.TB, dir string) string {
	tb.Helper()
	if bin := os.Getenv("RUNNERLOAD_BERTH"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			tb.Fatalf("RUNNERLOAD_BERTH: %v", err)
		}
		return bin
	}
	bin := filepath.Join(dir, "berth")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/berthhq/berth/engine/cmd/berth").CombinedOutput()
	if err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// raiseFDLimit lifts this process's open-file limit to its hard limit (the engine, started
// afterwards, inherits it) and fails when that leaves fewer than need descriptors.
func raiseFDLimit(tb testing.TB, need uint64) {
	tb.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			tb.Fatalf("raise RLIMIT_NOFILE to %d: %v", lim.Max, err)
		}
	}
	if lim.Cur < need {
		tb.Fatalf("RLIMIT_NOFILE is %d (hard limit); this run needs about %d", lim.Cur, need)
	}
}

// engineProc is one `berth start` process on loopback with a file store in a temp dir.
type engineProc struct {
	publicPort  int
	metricsPort int
	log         string // the process's stdout and stderr

	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has been waited for
}

func (e *engineProc) pid() int { return e.cmd.Process.Pid }

func (e *engineProc) wsURL() string { return fmt.Sprintf("ws://127.0.0.1:%d", e.publicPort) }

func (e *engineProc) publicURL() string { return fmt.Sprintf("http://127.0.0.1:%d", e.publicPort) }

func (e *engineProc) metricsURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", e.metricsPort)
}

// startEngine starts berth from bin with every listener on a free loopback port and the
// embedded store under a temp dir (file://DIR/db, then dbQuery if not empty, e.g.
// "?sync=false"), configured by environment variables (BERTH__* from the caller's
// environment are dropped; env adds more, as KEY=VALUE), and waits until /health answers.
// The cleanup kills the process and, when the test failed, logs its last lines.
func startEngine(tb testing.TB, bin, dbQuery string, env ...string) *engineProc {
	tb.Helper()
	dir := tb.TempDir()
	ports := harness.FreePorts(tb, 3)
	e := &engineProc{publicPort: ports[0], metricsPort: ports[2], log: filepath.Join(dir, "berth.log")}
	cmd := exec.Command(bin, "start", "--log-level", "warn")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BERTH__") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env,
		"BERTH__guard__host=127.0.0.1", "BERTH__guard__port="+strconv.Itoa(ports[0]),
		"BERTH__api_peer__host=127.0.0.1", "BERTH__api_peer__port="+strconv.Itoa(ports[1]),
		"BERTH__metrics__host=127.0.0.1", "BERTH__metrics__port="+strconv.Itoa(ports[2]),
		"BERTH__database__url=file://"+filepath.Join(dir, "db")+dbQuery,
	)
	cmd.Env = append(cmd.Env, env...)
	logf, err := os.Create(e.log)
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		tb.Fatal(err)
	}
	e.cmd, e.exited = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(e.exited)
	}()
	tb.Cleanup(func() {
		e.kill()
		if tb.Failed() {
			tb.Logf("engine log:\n%s", e.tail(40))
		}
	})
	e.waitHealthy(tb)
	return e
}

// kill stops the engine's process group for good and waits for it.
func (e *engineProc) kill() {
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	<-e.exited
}

// tail returns the last n lines of the engine's log.
func (e *engineProc) tail(n int) string {
	b, _ := os.ReadFile(e.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// waitHealthy polls /health until it answers 200, until a deadline.
func (e *engineProc) waitHealthy(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(e.publicURL() + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-e.exited:
			tb.Fatalf("engine exited before it was healthy:\n%s", e.tail(40))
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("engine not healthy after 30s (last error %v)", err)
		}
	}
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat; 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// procCPU returns the CPU time (user + system, all threads) process pid has used so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: count from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')' in %q", pid, b)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseUint(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// procMem is a process's memory as /proc/<pid>/status shows it.
type procMem struct {
	RSS, HWM uint64 // bytes: VmRSS (resident now) and VmHWM (peak resident)
	Threads  int
}

func readProcMem(pid int) (procMem, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMem{}, err
	}
	defer f.Close()
	var m procMem
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, _ := strconv.ParseUint(fields[0], 10, 64)
		switch k {
		case "VmRSS":
			m.RSS = n << 10 // kB
		case "VmHWM":
			m.HWM = n << 10
		case "Threads":
			m.Threads = int(n)
		}
	}
	return m, sc.Err()
}

// scrape fetches a Prometheus text exposition and returns each sample by its series (name
// and labels exactly as printed, e.g. `berth_runner_ping_txn_seconds_bucket{le="0.001"}`).
func scrape(client *http.Client, url string) (map[string]float64, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return parseExposition(resp.Body)
}

// parseExposition reads the Prometheus text format: comment lines are skipped, every other
// line is `series value` (promhttp writes no timestamps).
func parseExposition(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("metrics: no value in %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: value of %q: %w", line, err)
		}
		out[strings.TrimSpace(line[:i])] = v
	}
	return out, sc.Err()
}
