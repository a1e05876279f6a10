package sdk_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// allowed is every module the SDK's module graph may hold (go list -m all), with who brings
// it. Add one only with a reason: a program using the SDK downloads the whole graph.
var allowed = map[string]string{
	"github.com/coder/websocket":         "the runner's socket (sdk/runner)",
	"github.com/oapi-codegen/runtime":    "the generated client's parameter encoding (sdk/client/api)",
	"github.com/google/uuid":             "oapi-codegen/runtime's UUID type",
	"github.com/apapsch/go-jsonmerge/v2": "oapi-codegen/runtime's JSON merge",
	"github.com/oapi-codegen/nullable":   "oapi-codegen/runtime's go.mod (not built)",
	"go.yaml.in/yaml/v3":                 "oapi-codegen/runtime's go.mod (not built)",
	"go.uber.org/goleak":                 "the tests' goroutine leak check (sdk/runner)",

	// Only in the go.mod files of the modules above, for their own tests: never built.
	"github.com/stretchr/testify":            "tests of goleak, oapi-codegen/runtime and go-jsonmerge",
	"github.com/stretchr/objx":               "testify's go.mod",
	"github.com/davecgh/go-spew":             "testify's and goleak's go.mod",
	"github.com/pmezard/go-difflib":          "testify's and goleak's go.mod",
	"github.com/kr/pretty":                   "goleak's go.mod",
	"gopkg.in/check.v1":                      "goleak's go.mod",
	"gopkg.in/yaml.v3":                       "goleak's go.mod",
	"github.com/RaveNoX/go-jsoncommentstrip": "go-jsonmerge's go.mod",
	"github.com/bmatcuk/doublestar":          "go-jsonmerge's go.mod",
	"github.com/juju/gnuflag":                "go-jsonmerge's go.mod",
	"github.com/spkg/bom":                    "go-jsonmerge's go.mod",
}

// linked is the modules the SDK's packages (not their tests) may compile in.
var linked = []string{
	"github.com/coder/websocket",
	"github.com/oapi-codegen/runtime",
	"github.com/google/uuid",
	"github.com/apapsch/go-jsonmerge/v2",
}

// testOnly is the modules that the SDK's tests may compile in besides linked.
var testOnly = []string{"go.uber.org/goleak"}

// forbidden are prefixes of module paths that must never reach the SDK, allowed or not: the
// engine's module itself and its heavy dependencies.
var forbidden = []string{
	"github.com/berthhq/berth",      // the engine's module (the SDK's own path is checked apart)
	"github.com/cockroachdb/",       // pebble, the embedded store
	"github.com/jackc/",             // pgx, the PostgreSQL driver
	"go.opentelemetry.io/",          // telemetry
	"github.com/testcontainers/",    // test containers
	"github.com/apple/foundationdb", // the FoundationDB driver
}

const self = "github.com/berthhq/berth/sdk"

// TestDependencies keeps the SDK's module small: every module of its graph (go list -m all)
// is in allowed, its packages (go list -deps) compile in only the modules of linked and its
// tests only those and testOnly, and nothing of forbidden appears anywhere.
func TestDependencies(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	// This module alone, whatever go.work may say.
	run := func(args ...string) []string {
		t.Helper()
		cmd := exec.Command(goCmd, args...)
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}

	graph := run("list", "-m", "all")
	t.Logf("go list -m all:\n%s", strings.Join(graph, "\n"))
	if len(graph) == 0 || graph[0] != self {
		t.Fatalf("go list -m all starts with %q, want the SDK's module %s", graph[0], self)
	}
	for _, line := range graph[1:] {
		mod := strings.Fields(line)[0]
		if isForbidden(mod) {
			t.Errorf("module graph holds %s, which the SDK must never depend on", line)
		} else if _, ok := allowed[mod]; !ok {
			t.Errorf("module graph holds %s, which is not in the allow-list of deps_test.go", line)
		}
	}

	// The modules that sdk/client, sdk/runner and the module's other packages compile in,
	// without their tests and then with them.
	check := func(what string, ok []string, args ...string) {
		t.Helper()
		mods := run(append([]string{"list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}"}, args...)...)
		slices.Sort(mods)
		mods = slices.Compact(mods)
		t.Logf("modules %s compile in: %s", what, strings.Join(mods, " "))
		for _, mod := range mods {
			switch {
			case mod == "" || mod == self: // the standard library, the SDK
			case isForbidden(mod):
				t.Errorf("%s compile in %s, which the SDK must never depend on", what, mod)
			case !slices.Contains(ok, mod):
				t.Errorf("%s compile in %s, which deps_test.go does not allow there", what, mod)
			}
		}
	}
	check("the SDK's packages", linked, "./client/...", "./runner/...", "./...")
	check("the SDK's tests", append(slices.Clone(linked), testOnly...), "-test", "./...")
}

func isForbidden(mod string) bool {
	if mod == self || strings.HasPrefix(mod, self+"/") {
		return false
	}
	for _, p := range forbidden {
		if strings.HasPrefix(mod, p) {
			return true
		}
	}
	return false
}
