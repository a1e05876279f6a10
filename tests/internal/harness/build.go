package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// BerthPackage is the berth binary's import path.
const BerthPackage = "github.com/berthhq/berth/engine/cmd/berth"

// binDir holds the binaries built for this test binary; Main removes it.
var binDir string

// Main runs the tests of a package that uses the harness and returns the exit code: it makes
// the folder binaries are built into, removes it at the end and, when the tests passed,
// checks that no goroutine is left (every process reader and waiter ends with its process,
// at the test's cleanup). Call it as os.Exit(harness.Main(m)).
func Main(m *testing.M) int {
	var err error
	if binDir, err = os.MkdirTemp("", "berth-harness-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	os.RemoveAll(binDir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}

var builds sync.Map // import path → *build

type build struct {
	once sync.Once
	path string
	err  error
}

// Build builds the main package pkg (an import path) once per test binary and returns the
// binary's path.
func Build(tb testing.TB, pkg string) string {
	tb.Helper()
	v, _ := builds.LoadOrStore(pkg, &build{})
	b := v.(*build)
	b.once.Do(func() {
		if binDir == "" {
			b.err = fmt.Errorf("harness: Build(%s) outside harness.Main", pkg)
			return
		}
		b.path = filepath.Join(binDir, strings.ReplaceAll(pkg, "/", "_"))
		out, err := GoBuild(b.path, pkg).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}

// BuildTagsEnv names the build tags (as for go build -tags: fdb, or a comma-separated list)
// of the binaries the tests build; `make test-fdb` sets it to fdb.
const BuildTagsEnv = "BERTH_TEST_BUILD_TAGS"

// GoBuild returns the command that builds the main package pkg into out, with the tags of
// BERTH_TEST_BUILD_TAGS and the extra go build flags.
func GoBuild(out, pkg string, flags ...string) *exec.Cmd {
	args := append([]string{"build", "-o", out}, flags...)
	if tags := os.Getenv(BuildTagsEnv); tags != "" {
		args = append(args, "-tags", tags)
	}
	return exec.Command("go", append(args, pkg)...)
}

// Binary returns the berth binary: BERTH_TEST_BINARY when set, else one built once.
func Binary(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("BERTH_TEST_BINARY"); p != "" {
		return p
	}
	return Build(tb, BerthPackage)
}

// NPMDir is tests/npm, where the node scripts and their packages are, relative to the
// directory of a test package in tests/ (where go test runs it).
const NPMDir = "../npm"

// NeedNode skips t when node or the npm packages are missing.
func NeedNode(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the npm runner tests need Node 20 or later")
	}
	if _, err := os.Stat(filepath.Join(NPMDir, "node_modules", "@rivetkit", "engine-runner", "package.json")); err != nil {
		t.Skip("tests/npm/node_modules is missing: run `npm ci --prefix tests/npm`")
	}
}
