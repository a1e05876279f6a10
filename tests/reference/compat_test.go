package reference

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/compat.md from the scenarios and the table of intended differences")

// compatDoc is docs/compat.md, relative to this package.
const compatDoc = "../../docs/compat.md"

// TestCompatDoc checks that docs/compat.md is what renderCompat makes of the scenarios and
// the table of intended differences; -update rewrites it.
func TestCompatDoc(t *testing.T) {
	want := renderCompat()
	if *update {
		if err := os.WriteFile(compatDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(compatDoc)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatal("docs/compat.md is not up to date: run go test ./tests/reference -run TestCompatDoc -update")
	}
}

// renderCompat is docs/compat.md.
func renderCompat() string {
	var b strings.Builder
	b.WriteString(`# Compatibility with the Rivet engine

berth speaks the Rivet engine's runner and envoy protocols and its REST API, so that unmodified
Rivet runners, rivetkit apps and API clients work against it. The reference for every behaviour a
client can observe is the Rivet engine 2.3.19 binary (npm ` + "`@rivetkit/engine-cli-linux-x64-musl`" + `):
the differential tests in ` + "`tests/reference`" + ` run each scenario below against it and against
berth, as one node and as two nodes on PostgreSQL and NATS behind a round-robin TCP proxy, with
the same clients (the npm runner 2.2.1, rivetkit 2.2.1, raw sockets, REST), and compare what the
clients saw: statuses, error codes, JSON field names, types and nulls, headers, close codes and
reasons, actor states, timings within bounds. Ids, timestamps, cursors and message wording are
the engines' own and are not compared.

Everything not listed under "Differences" behaves as on the reference. This page is generated
from ` + "`tests/reference`" + ` (` + "`go test ./tests/reference -run TestCompatDoc -update`" + `), whose
table of intended differences the tests hold berth to: a difference not in the table fails them,
and so does an entry that no longer matches.

## Scenarios

| scenario | what it does |
|---|---|
`)
	names := make([]scenario, len(scenarios))
	copy(names, scenarios)
	slices.SortFunc(names, func(a, b scenario) int { return strings.Compare(a.name, b.name) })
	for _, sc := range names {
		fmt.Fprintf(&b, "| `%s` | %s |\n", sc.name, cell(sc.doc))
	}
	b.WriteString(`
## Differences

Where berth answers otherwise than the reference on purpose. Values are as the tests record them
(` + "`<id N>`, `<ts>`, `<ray>`" + ` stand for an engine's own ids, timestamps and ray ids; ` + "`<missing>`" + `
for a field or step one side does not have).

| behaviour | the Rivet engine 2.3.19 | berth | why |
|---|---|---|---|
`)
	for _, d := range differences {
		where := "`" + d.Scenario + "`, " + d.Step
		if d.Path != "$" {
			where += ", " + d.Path
		}
		fmt.Fprintf(&b, "| %s (%s) | `%s` | `%s` | %s |\n", cell(d.Behaviour), cell(where), cell(d.Reference), cell(d.Berth), cell(d.Why))
	}
	return b.String()
}

// cell makes s safe in a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
