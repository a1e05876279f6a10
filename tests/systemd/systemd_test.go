// Package systemd checks deploy/systemd/berth.service with systemd-analyze: the unit parses
// without a warning, keeps its hardening, and its exposure score stays low. It skips, saying
// why, where systemd-analyze is missing.
package systemd

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const unitPath = "../../deploy/systemd/berth.service"

// unit copies the unit into a folder of its own with ExecStart naming exe (verify wants the
// program to exist) and returns the copy's path.
func unit(t *testing.T, exe string) string {
	b, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "ExecStart=/usr/local/bin/berth ", "ExecStart="+exe+" ", 1)
	if s == string(b) {
		t.Fatal("ExecStart does not run /usr/local/bin/berth")
	}
	p := filepath.Join(t.TempDir(), "berth.service")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func analyze(t *testing.T) string {
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian package systemd): the unit is not verified")
	}
	return p
}

// systemd-analyze verify prints a line for each unknown key or bad value (and still exits 0):
// any output is a failure.
func TestVerify(t *testing.T) {
	sa := analyze(t)
	exe, err := os.Executable() // any executable file will do for ExecStart
	if err != nil {
		t.Fatal(err)
	}
	p := unit(t, exe)
	out, err := exec.Command(sa, "verify", "--man=no", p).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}

	// A misspelt key is caught the same way (the check above can fail).
	bad := filepath.Join(t.TempDir(), "berth.service")
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(bad, []byte(strings.Replace(string(b), "ProtectSystem=strict", "ProtectSystem=strictly", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _ := exec.Command(sa, "verify", "--man=no", bad).CombinedOutput(); !strings.Contains(string(out), "protect system") {
		t.Fatalf("a bad ProtectSystem value went unnoticed: %q", out)
	}
}

// The exposure score of systemd-analyze security (0 best, 10 worst) stays below 2.
func TestSecurity(t *testing.T) {
	sa := analyze(t)
	exe, _ := os.Executable()
	out, err := exec.Command(sa, "security", "--offline=yes", "--no-pager", unit(t, exe)).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	var score float64 = -1
	for line := range strings.SplitSeq(string(out), "\n") {
		if _, rest, ok := strings.Cut(line, "Overall exposure level for berth.service: "); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				score, _ = strconv.ParseFloat(f[0], 64)
			}
		}
	}
	if score < 0 || score >= 2 {
		t.Fatalf("exposure %v, want below 2:\n%s", score, out)
	}
	t.Logf("exposure level %.1f", score)
}

// The hardening the deployment guide promises is in the unit.
func TestHardening(t *testing.T) {
	f, err := os.Open(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			got[k] = v
		}
	}
	for k, v := range map[string]string{
		"DynamicUser": "yes", "StateDirectory": "berth", "ProtectSystem": "strict",
		"NoNewPrivileges": "yes", "KillSignal": "SIGTERM", "TimeoutStopSec": "40",
		"CapabilityBoundingSet": "", "PrivateTmp": "yes",
		// berth start sends READY=1 and reads TLS files again on SIGHUP (engine/cmd/berth).
		"Type": "notify", "ExecReload": "/bin/kill -HUP $MAINPID",
	} {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s=%q, want %q", k, g, v)
		}
	}
}
