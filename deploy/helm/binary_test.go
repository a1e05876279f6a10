package helm

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// binDir holds the berth binary the tests build; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var built struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// berthBinary returns the berth binary: BERTH_TEST_BINARY when set, else one built from
// this repository once per test run (as tests/ do; with a warm build cache a link only). In
// -short mode, without BERTH_TEST_BINARY, it skips.
func berthBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("BERTH_TEST_BINARY"); p != "" {
		return p
	}
	if testing.Short() {
		t.Skip("-short: not building berth (BERTH_TEST_BINARY names a binary)")
	}
	built.once.Do(func() {
		binDir, built.err = os.MkdirTemp("", "berth-helm-test-")
		if built.err != nil {
			return
		}
		built.path = filepath.Join(binDir, "berth")
		cmd := exec.Command("go", "build", "-o", built.path, "./engine/cmd/berth")
		cmd.Dir = filepath.Join("..", "..")
		built.out, built.err = cmd.CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build ./engine/cmd/berth: %v\n%s", built.err, built.out)
	}
	return built.path
}
