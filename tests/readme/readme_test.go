package readme

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/tests/internal/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// repo is the repository's root, seen from this package's folder.
const repo = "../.."

const (
	// commandWithin bounds one README command.
	commandWithin = 60 * time.Second
	// startWithin bounds the start of the engine, and of a runner (go run compiles it).
	startWithin = 2 * time.Minute
	// stopWithin bounds how long a runner may take to end after the README's last command.
	stopWithin = 30 * time.Second
)

// The ports the README names: the guard port, api-peer and metrics of `make run`.
var readmePorts = []string{"6420", "6421", "6430"}

func readBlocks(t *testing.T) []Block {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

// Every shell block of README.md, run in order against a real engine (see CONTRIBUTING.md,
// "The README is a test"): each command must exit 0 and print what the README shows.
func TestReadme(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the README's commands need %s: %v", tool, err)
		}
	}
	blocks := readBlocks(t)
	bin := harness.Build(t, harness.BerthPackage)
	scratch := scratchClone(t, bin)
	ports := harness.FreePorts(t, len(readmePorts))
	var pairs []string
	for i, p := range readmePorts {
		pairs = append(pairs, ":"+p, ":"+strconv.Itoa(ports[i]))
	}
	local := strings.NewReplacer(pairs...)
	url := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	env := append(cleanEnv(), "BERTH_ENDPOINT="+url)

	var sh *shell
	var runners []*harness.Proc
	engineStarted := false
	for _, b := range blocks {
		where := fmt.Sprintf("README.md:%d (%s)", b.Line, b.Section)
		switch b.Kind {
		case "skip":
			t.Logf("%s: skipped: %s", where, b.Reason)
		case "engine":
			if !slices.Equal(b.Cmds, []string{"make run"}) {
				t.Fatalf("%s: the engine block is `make run`, not %q", where, b.Cmds)
			}
			cmd := local.Replace(runRecipe(t)) + fmt.Sprintf(" --peer-listen 127.0.0.1:%d --metrics-listen 127.0.0.1:%d", ports[1], ports[2])
			t.Logf("%s: make run, as %s", where, cmd)
			p := startIn(t, scratch, env, "engine", cmd)
			awaitUp(t, p, "the engine to answer /health", func() bool {
				code, _ := get(url + "/health")
				return code == http.StatusOK
			})
			engineStarted = true
		case "runner":
			if !engineStarted || len(b.Cmds) != 1 {
				t.Fatalf("%s: a runner block is one command, after the engine block: %q", where, b.Cmds)
			}
			cmd := local.Replace(b.Cmds[0])
			t.Logf("%s: runner: %s", where, cmd)
			p := startIn(t, scratch, env, "runner", cmd)
			awaitUp(t, p, "the runner to be listed", func() bool {
				code, body := get(url + "/runners?namespace=default")
				var l struct{ Runners []json.RawMessage }
				return code == http.StatusOK && json.Unmarshal(body, &l) == nil && len(l.Runners) > 0
			})
			runners = append(runners, p)
		default:
			if sh == nil {
				sh = startShell(t, scratch, env)
			}
			var out string
			for _, c := range b.Cmds {
				c = local.Replace(c)
				var code int
				var errOut string
				code, out, errOut = sh.run(c)
				t.Logf("%s: $ %s\n%s%s", where, c, out, errOut)
				if code != 0 {
					t.Fatalf("%s: `%s` exited with status %d\nstdout:\n%s\nstderr:\n%s", where, c, code, out, errOut)
				}
			}
			if b.HasOut && !Matches(b.Output, out) {
				t.Fatalf("%s: `%s` printed\n%s\nwhich does not have the shape the README shows:\n%s", where, b.Cmds[len(b.Cmds)-1], out, b.Output)
			}
		}
	}
	if !engineStarted {
		t.Fatal("README.md has no engine block (<!-- readme-test: engine --> before `make run`)")
	}
	// What the README starts, it stops: each runner has ended, with status 0.
	for _, p := range runners {
		select {
		case <-p.Exited():
		case <-time.After(stopWithin):
			t.Fatalf("the runner still runs %v after the README's last command", stopWithin)
		}
		if code := p.ExitCode(); code != 0 {
			t.Fatalf("the runner exited with status %d, want 0; stderr:\n%s", code, harness.Tail(p.Stderr(), 20))
		}
	}
}

// The README documents `make test` as the test command, CI runs that command, and the
// Makefile has the targets the README names.
func TestReadmeCommandsAreCIs(t *testing.T) {
	var tests []string
	for _, b := range readBlocks(t) {
		if b.Section == "Tests" {
			tests = append(tests, b.Cmds...)
		}
	}
	if !slices.Equal(tests, []string{"make test"}) {
		t.Fatalf("the README's Tests section shows %q, want the one command `make test`", tests)
	}
	ci, err := os.ReadFile(filepath.Join(repo, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Split(string(ci), "\n"), tests[0]) {
		t.Fatalf(".ci/run does not run the README's test command %q", tests[0])
	}
	mk, err := os.ReadFile(filepath.Join(repo, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"test", "run", "build"} {
		if !regexp.MustCompile(`(?m)^` + target + `:`).Match(mk) {
			t.Errorf("the Makefile has no %s target", target)
		}
	}
}

// runRecipe is the command of the Makefile's run target, with $(BIN) expanded.
func runRecipe(t *testing.T) string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join(repo, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	bin := regexp.MustCompile(`(?m)^BIN\s*:=\s*(\S+)\s*$`).FindSubmatch(mk)
	recipe := regexp.MustCompile(`(?m)^run:.*\n\t(.+)$`).FindSubmatch(mk)
	if bin == nil || recipe == nil {
		t.Fatal("the Makefile has no `BIN :=` or no one-line run target")
	}
	return strings.ReplaceAll(string(recipe[1]), "$(BIN)", string(bin[1]))
}

// scratchClone makes a folder that looks like a clone of the repository (a symbolic link to
// each of its top-level entries) but for bin/berth, the binary the test built, and data/,
// which the engine fills; the README's commands run there.
func scratchClone(t *testing.T, bin string) string {
	t.Helper()
	dir := t.TempDir()
	root, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); n != "bin" && n != "data" && n != ".git" {
			if err := os.Symlink(filepath.Join(root, n), filepath.Join(dir, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(dir, "bin", "berth")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// cleanEnv is this process's environment without berth's own variables, so that the README's
// commands see what a new user's shell holds.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BERTH_") {
			env = append(env, kv)
		}
	}
	return env
}

// startIn starts the shell command cmd in dir, in the background.
func startIn(t *testing.T, dir string, env []string, name, cmd string) *harness.Proc {
	t.Helper()
	c := exec.Command("bash", "--noprofile", "--norc", "-c", cmd)
	c.Dir, c.Env = dir, env
	return harness.StartProc(t, name, c)
}

// awaitUp waits until up holds, failing the test if p ends first or startWithin passes.
func awaitUp(t *testing.T, p *harness.Proc, what string, up func() bool) {
	t.Helper()
	deadline := time.Now().Add(startWithin)
	for !up() {
		select {
		case <-p.Exited():
			t.Fatalf("%s ended before %s:\n%s", p.Name, what, harness.Tail(p.Stderr(), 30))
		case <-time.After(100 * time.Millisecond): // polling interval
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v:\n%s", what, startWithin, harness.Tail(p.Stderr(), 30))
		}
	}
}

// get returns the status and body of a GET; a transport error is status 0.
func get(url string) (int, []byte) {
	c := &http.Client{Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	res, err := c.Get(url)
	if err != nil {
		return 0, nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, b
}

// shell is one bash session, as a terminal: variables set by one command are there for the
// next.
type shell struct {
	t   *testing.T
	p   *harness.Proc
	dir string // where each command's output goes
	n   int
}

func startShell(t *testing.T, dir string, env []string) *shell {
	c := exec.Command("bash", "--noprofile", "--norc")
	c.Dir, c.Env = dir, env
	return &shell{t: t, p: harness.StartProc(t, "shell", c), dir: t.TempDir()}
}

// statusPrefix starts the line the shell prints after each command.
const statusPrefix = "readme-test-status "

// run runs cmd in the session and returns its exit status, stdout and stderr.
func (s *shell) run(cmd string) (int, string, string) {
	s.t.Helper()
	s.n++
	out, errOut := filepath.Join(s.dir, fmt.Sprint(s.n, ".out")), filepath.Join(s.dir, fmt.Sprint(s.n, ".err"))
	s.p.Send(fmt.Sprintf("{ %s\n} >%s 2>%s </dev/null; echo %s$?", cmd, out, errOut, statusPrefix))
	ev := s.p.Await("the end of `"+cmd+"`", commandWithin, func(ev harness.Event) bool {
		return strings.HasPrefix(ev.Line, statusPrefix)
	})
	code, err := strconv.Atoi(strings.TrimPrefix(ev.Line, statusPrefix))
	if err != nil {
		s.t.Fatalf("shell: %q", ev.Line)
	}
	o, _ := os.ReadFile(out)
	e, _ := os.ReadFile(errOut)
	return code, string(o), string(e)
}
