package runner_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps the SDK importable on its own: within this module it may use pkg/
// and sdk/ packages, never engine/, ops/, api-public/ or api-peer/ (its tests may).
func TestDependencies(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	const module = "github.com/berthhq/berth/"
	out, err := exec.Command(goCmd, "list", "-deps", module+"sdk/runner").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		rest, ok := strings.CutPrefix(dep, module)
		if ok && !strings.HasPrefix(rest, "pkg/") && !strings.HasPrefix(rest, "sdk/") {
			t.Errorf("sdk/runner imports %s; the SDK may import only pkg/ and sdk/ packages of this module", dep)
		}
	}
}
