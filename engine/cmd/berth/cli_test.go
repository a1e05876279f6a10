package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/goleak"

	"github.com/berthhq/berth/engine/config"
	"github.com/berthhq/berth/engine/enginetest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/sdk/client"
	"github.com/berthhq/berth/sdk/runner"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitFor bounds every wait: generous, so that a loaded machine never fails a test.
const waitFor = 30 * time.Second

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startEngine runs an engine in process on loopback ports with an in-memory store and
// returns its public URL.
func startEngine(t *testing.T, token string) string {
	t.Helper()
	return startEngineWith(t, func(c *config.Config) { c.Auth.AdminToken = token })
}

// startEngineWith is startEngine with the configuration set by set.
func startEngineWith(t *testing.T, set func(*config.Config)) string {
	t.Helper()
	return enginetest.URL(enginetest.Start(t, quiet, set))
}

type result struct {
	out, err string
	code     int
}

// berth runs the command line in process with env as its whole environment.
func berth(t *testing.T, env []string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitFor)
	defer cancel()
	code := run(ctx, args, stdio{in: strings.NewReader(""), out: &out, err: &errOut, environ: env})
	return result{out.String(), errOut.String(), code}
}

// ok runs the command line and fails the test unless it exits 0.
func ok(t *testing.T, env []string, args ...string) result {
	t.Helper()
	r := berth(t, env, args...)
	if r.code != 0 {
		t.Fatalf("berth %q: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.out, r.err)
	}
	return r
}

func decodeJSON[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("output is not JSON of %T: %v\n%s", v, err, s)
	}
	return v
}

func TestNamespaces(t *testing.T) {
	env := []string{"BERTH_ENDPOINT=" + startEngine(t, "")}

	r := ok(t, env, "namespaces", "list")
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME ") || !strings.HasPrefix(lines[1], "default ") {
		t.Fatalf("namespaces list table:\n%s", r.out)
	}
	// Columns are aligned: each header starts where its values start.
	if col := strings.Index(lines[0], "DISPLAY NAME"); col < 0 || lines[1][col:col+len("Default")] != "Default" {
		t.Errorf("columns not aligned:\n%s", r.out)
	}

	created := decodeJSON[client.Namespace](t, ok(t, env, "namespaces", "create", "team-a", "--display-name", "Team A", "--json").out)
	if created.Name != "team-a" || created.DisplayName != "Team A" || created.NamespaceId == "" {
		t.Errorf("created %+v", created)
	}
	got := decodeJSON[client.Namespace](t, ok(t, env, "namespaces", "get", "team-a", "--json").out)
	if got != created {
		t.Errorf("get = %+v, want %+v", got, created)
	}
	all := decodeJSON[[]client.Namespace](t, ok(t, env, "namespaces", "list", "--json").out)
	if len(all) != 2 {
		t.Errorf("list --json = %+v, want 2 namespaces", all)
	}
	if r := ok(t, env, "namespaces", "list", "--limit", "1", "--json"); len(decodeJSON[[]client.Namespace](t, r.out)) != 1 {
		t.Errorf("list --limit 1 = %s", r.out)
	}

	// Errors of the API show as group.code: message, exit 1.
	r = berth(t, env, "namespaces", "create", "team-a")
	if r.code != 1 || !strings.Contains(r.err, "berth: namespace.name_not_unique: ") {
		t.Errorf("duplicate create: exit %d, stderr %q", r.code, r.err)
	}
	r = berth(t, env, "namespaces", "get", "nope")
	if r.code != 1 || !strings.Contains(r.err, "namespace.not_found: ") || r.out != "" {
		t.Errorf("get missing: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}
}

// Flags win over the environment, which wins over the defaults.
func TestClientSettingsPrecedence(t *testing.T) {
	url := startEngine(t, "tok")
	dead := "http://127.0.0.1:1" // nothing listens there

	tests := []struct {
		name string
		env  []string
		args []string
		want string // in stderr; "" for success
	}{
		{"env endpoint and token", []string{"BERTH_ENDPOINT=" + url, "BERTH_TOKEN=tok"}, nil, ""},
		{"flag endpoint wins", []string{"BERTH_ENDPOINT=" + dead, "BERTH_TOKEN=tok"}, []string{"--endpoint", url}, ""},
		{"env endpoint used", []string{"BERTH_ENDPOINT=" + dead, "BERTH_TOKEN=tok"}, nil, "127.0.0.1:1"},
		{"flag token wins", []string{"BERTH_ENDPOINT=" + url, "BERTH_TOKEN=wrong"}, []string{"--token", "tok"}, ""},
		{"wrong env token", []string{"BERTH_ENDPOINT=" + url, "BERTH_TOKEN=wrong"}, nil, "api.forbidden: "},
		{"no token", []string{"BERTH_ENDPOINT=" + url}, nil, "api.unauthorized: "},
		{"env namespace used", []string{"BERTH_ENDPOINT=" + url, "BERTH_TOKEN=tok", "BERTH_NAMESPACE=nope"}, nil, "namespace.not_found: "},
		{"flag namespace wins", []string{"BERTH_ENDPOINT=" + url, "BERTH_TOKEN=tok", "BERTH_NAMESPACE=nope"}, []string{"-n", "default"}, ""},
		{"default endpoint", []string{"BERTH_TOKEN=tok"}, []string{"--endpoint", ""}, "--endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := berth(t, tt.env, append([]string{"runners", "list"}, tt.args...)...)
			switch {
			case tt.want == "" && r.code != 0:
				t.Errorf("exit %d, stderr %q", r.code, r.err)
			case tt.want == "" && !strings.HasPrefix(r.out, "ID "):
				t.Errorf("stdout %q, want a table", r.out)
			case tt.want != "" && (r.code != 1 && r.code != 2 || !strings.Contains(r.err, tt.want)):
				t.Errorf("exit %d, stderr %q, want an error containing %q", r.code, r.err, tt.want)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"bogus"},
		{"actors"},
		{"actors", "bogus"},
		{"actors", "list", "--bogus"},
		{"actors", "list", "extra"},
		{"actors", "list", "--key", "k"},
		{"actors", "create"},
		{"actors", "create", "--name", "x"},
		{"actors", "create", "--name", "x", "--runner-name-selector", "p", "--crash-policy", "boom"},
		{"actors", "create", "--name", "x", "--runner-name-selector", "p", "--count", "0"},
		{"actors", "delete"},
		{"actors", "sleep"},
		{"actors", "reschedule"},
		{"actors", "kv"},
		{"actors", "kv", "get", "0b8y5rkfbb3xvdwlcu9mbvqwnimg2t"},
		{"actors", "get-or-create", "--name", "x", "--key", "k"},
		{"runner-configs"},
		{"runner-configs", "get"},
		{"runner-configs", "delete"},
		{"datacenters", "list", "x"},
		{"health", "x"},
		{"completion"},
		{"completion", "bash", "x"},
		{"runners", "get"},
		{"runners", "get", "a", "b"},
		{"runners", "drain"},
		{"runners", "drain", "x", "--timeout", "soon"},
		{"namespaces", "create"},
		{"namespaces", "list", "--limit", "many"},
		{"start", "extra"},
		{"start", "--log-level"},
		{"version", "x"},
		{"config"},
		{"config", "print", "x"},
		{"config", "validate", "--nope"},
	} {
		r := berth(t, nil, args...)
		if r.code != 2 || !strings.Contains(r.err, "--help' for usage") {
			t.Errorf("berth %q: exit %d, stderr %q; want 2 and a pointer to --help", args, r.code, r.err)
		}
		if r.out != "" {
			t.Errorf("berth %q wrote to stdout: %q", args, r.out)
		}
	}
	if r := ok(t, nil, "actors", "--help"); !strings.Contains(r.out, "create") {
		t.Errorf("actors --help:\n%s", r.out)
	}
}

func TestVersion(t *testing.T) {
	if r := ok(t, nil, "version"); !strings.HasPrefix(r.out, "berth dev (commit ") {
		t.Errorf("version = %q", r.out)
	}
	if b := decodeJSON[map[string]string](t, ok(t, nil, "version", "--json").out); b["version"] != "dev" {
		t.Errorf("version --json = %v", b)
	}
}

func TestConfigPrintAndValidate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "berth.yaml")
	if err := os.WriteFile(file, []byte("auth:\n  admin_token: supersecret\nguard:\n  port: 7000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"BERTH__api_peer__port=7001"}
	db := "postgres://berth:hunter2@db.internal:5432/berth?sslmode=disable&password=hunter3"
	for _, format := range []string{"yaml", "json"} {
		args := []string{"config", "print", "--config", file, "--db", db}
		if format == "json" {
			args = append(args, "--json")
		}
		r := ok(t, env, args...)
		for _, secret := range []string{"supersecret", "hunter2", "hunter3"} {
			if strings.Contains(r.out, secret) {
				t.Errorf("%s output shows the secret %q:\n%s", format, secret, r.out)
			}
		}
		if format == "json" {
			c := decodeJSON[config.Config](t, r.out)
			if c.Auth.AdminToken != config.Mask || c.Guard.Port != 7000 || c.APIPeer.Port != 7001 ||
				!strings.HasPrefix(c.Database.URL, "postgres://berth:"+config.Mask+"@db.internal:5432/berth?") ||
				c.Pegboard.RunnerLostThreshold != config.DefaultRunnerLostThreshold {
				t.Errorf("config print --json = %+v", c)
			}
			continue
		}
		for _, want := range []string{"admin_token: '" + config.Mask + "'", "port: 7000", "port: 7001", "runner_lost_threshold: 15000", "berth:" + config.Mask + "@db.internal"} {
			if !strings.Contains(r.out, want) {
				t.Errorf("yaml output lacks %q:\n%s", want, r.out)
			}
		}
	}
	// What print shows loads again, the mask included.
	printed := filepath.Join(dir, "printed.yaml")
	if err := os.WriteFile(printed, []byte(ok(t, nil, "config", "print", "--config", file).out), 0o600); err != nil {
		t.Fatal(err)
	}
	ok(t, nil, "config", "validate", "--config", printed)

	if r := ok(t, env, "config", "validate", "--config", file); r.out != "configuration OK\n" {
		t.Errorf("validate = %q", r.out)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"guard": {"prot": 1}, "database": {"url": "redis://x"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := berth(t, []string{"BERTH__pegboard__runner_lost_threshold=soon"}, "config", "validate", "--config", bad)
	for _, want := range []string{"guard.prot: unknown key", "bad.json:1:", `database.url: invalid URL "redis://x"`, "pegboard.runner_lost_threshold: want an integer", "env BERTH__pegboard__runner_lost_threshold"} {
		if r.code != 1 || !strings.Contains(r.err, want) {
			t.Errorf("validate bad: exit %d, stderr lacks %q:\n%s", r.code, want, r.err)
		}
	}
	if r := berth(t, nil, "config", "print", "--config", bad); r.code != 1 || r.out != "" {
		t.Errorf("print of a bad config: exit %d, stdout %q", r.code, r.out)
	}
}

// idle is an actor that does nothing.
type idle struct{}

func (idle) Start(context.Context, *runner.ActorContext) error { return nil }
func (idle) Stop(context.Context, *runner.ActorContext) error  { return nil }

// writer is an actor that writes its input under the KV key "greeting" when it starts, and
// then says so on wrote.
type writer struct{ wrote chan<- string }

func (w writer) Start(ctx context.Context, a *runner.ActorContext) error {
	if err := a.KV().Put(ctx, []byte("greeting"), a.Input()); err != nil {
		return err
	}
	w.wrote <- a.ID()
	return nil
}
func (writer) Stop(context.Context, *runner.ActorContext) error { return nil }

// Actors created in bulk, listed, read and destroyed, and the runner that hosts them
// drained with --wait.
func TestActorsAndDrain(t *testing.T) {
	url := startEngine(t, "tok")
	env := []string{"BERTH_ENDPOINT=" + url, "BERTH_TOKEN=tok"}

	wrote := make(chan string, 1)
	r, err := runner.New(runner.Config{Endpoint: url, Namespace: "default", Name: "pool", TotalSlots: 10, Token: "tok",
		Logger: quiet, Actors: map[string]func() runner.Actor{
			"idle":   func() runner.Actor { return idle{} },
			"writer": func() runner.Actor { return writer{wrote} },
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitFor)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.Shutdown(context.Background(), true)
		<-r.Done()
	})

	out := ok(t, env, "actors", "create", "--name", "idle", "--runner-name-selector", "pool", "--key", "k", "--count", "3", "--input", "hi")
	if !strings.Contains(out.err, "creating actors: 3/3 created") {
		t.Errorf("no progress on stderr: %q", out.err)
	}
	if rows := strings.Split(strings.TrimSpace(out.out), "\n"); len(rows) != 4 || !strings.HasPrefix(rows[0], "ID ") {
		t.Fatalf("create --count 3 table:\n%s", out.out)
	}
	actors := decodeJSON[[]client.Actor](t, ok(t, env, "actors", "list", "--json").out)
	if len(actors) != 3 {
		t.Fatalf("actors list --json = %d actors, want 3", len(actors))
	}
	keys := map[string]bool{}
	for _, a := range actors {
		keys[*a.Key] = true
	}
	if !keys["k-0"] || !keys["k-1"] || !keys["k-2"] {
		t.Errorf("keys %v, want k-0, k-1, k-2", keys)
	}
	one := decodeJSON[client.Actor](t, ok(t, env, "actors", "get", actors[0].ActorId, "--json").out)
	if one.ActorId != actors[0].ActorId || one.RunnerNameSelector != "pool" || one.CrashPolicy != client.CrashSleep {
		t.Errorf("actors get = %+v", one)
	}
	if r := berth(t, env, "actors", "create", "--name", "idle", "--runner-name-selector", "pool", "--key", "k-0"); r.code != 1 || !strings.Contains(r.err, "actor.duplicate_key: ") {
		t.Errorf("duplicate key: exit %d, stderr %q", r.code, r.err)
	}

	// --json shows every field and the state the table computes.
	for _, a := range decodeJSON[[]map[string]any](t, ok(t, env, "actors", "list", "--json").out) {
		if a["state"] == nil || a["actor_id"] == nil || a["runner_name_selector"] != "pool" || a["create_ts"] == nil {
			t.Errorf("actors list --json item %v", a)
		}
	}

	// A created actor's id, alone (-q), names it in the next commands; the KV it writes
	// reads back as it is, or as JSON with base64.
	wid := strings.TrimSpace(ok(t, env, "actors", "create", "--name", "writer", "--runner-name-selector", "pool", "--input", "hello\n", "-q").out)
	select {
	case got := <-wrote:
		if got != wid {
			t.Fatalf("actors create -q printed %q; the writer that started is %s", wid, got)
		}
	case <-time.After(waitFor):
		t.Fatalf("the writer did not start within %s", waitFor)
	}
	if r := ok(t, env, "actors", "kv", "get", wid, "greeting"); r.out != "hello\n" {
		t.Errorf("kv get = %q", r.out)
	}
	kv := decodeJSON[client.KVValue](t, ok(t, env, "actors", "kv", "get", wid, "Z3JlZXRpbmc=", "--base64", "--json").out)
	if string(kv.Value) != "hello\n" || kv.UpdateTs == 0 {
		t.Errorf("kv get --base64 --json = %+v", kv)
	}
	if r := berth(t, env, "actors", "kv", "get", wid, "nope"); r.code != 1 || !strings.Contains(r.err, "actor.kv_key_not_found: ") || r.out != "" {
		t.Errorf("kv get of a missing key: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}
	if r := berth(t, env, "actors", "kv", "get", wid, "%%%", "--base64"); r.code != 2 || !strings.Contains(r.err, `KEY "%%%" is not base64`) {
		t.Errorf("kv get of a bad base64 key: exit %d, stderr %q", r.code, r.err)
	}
	ok(t, env, "actors", "delete", wid)

	// Wait until every actor runs, so that the drain has actors to move.
	deadline := time.Now().Add(waitFor)
	for {
		running := 0
		for _, a := range decodeJSON[[]client.Actor](t, ok(t, env, "actors", "list", "--name", "idle", "--json").out) {
			if actorState(a) == "running" {
				running++
			}
		}
		if running == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 actors running after %s", running, waitFor)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ok(t, env, "actors", "delete", actors[2].ActorId)
	if a := decodeJSON[client.Actor](t, ok(t, env, "actors", "get", actors[2].ActorId, "--json").out); a.DestroyTs == nil {
		t.Errorf("destroyed actor = %+v", a)
	}

	runners := decodeJSON[[]client.Runner](t, ok(t, env, "runners", "list", "--json").out)
	if len(runners) != 1 || runners[0].Name != "pool" {
		t.Fatalf("runners = %+v", runners)
	}
	if st := decodeJSON[map[string]any](t, ok(t, env, "runners", "get", runners[0].RunnerId, "--json").out)["state"]; st != "active" {
		t.Errorf("runners get --json state = %v", st)
	}
	if r := ok(t, env, "runners", "names", "-q"); r.out != "pool\n" {
		t.Errorf("runners names -q = %q", r.out)
	}
	id := runners[0].RunnerId
	if r := ok(t, env, "runners", "get", id); !strings.Contains(r.out, " active ") {
		t.Errorf("runners get table:\n%s", r.out)
	}
	drained := ok(t, env, "runners", "drain", id, "--wait", "--json", "--timeout", waitFor.String())
	if got := decodeJSON[client.Runner](t, drained.out); got.StopTs == nil || got.DrainTs == nil {
		t.Errorf("drain --wait returned a runner that has not stopped: %+v", got)
	}
	if !strings.Contains(drained.err, "draining runner "+id+": ") || !strings.Contains(drained.err, " done") {
		t.Errorf("no drain progress on stderr: %q", drained.err)
	}
	if r := ok(t, env, "runners", "list", "--include-stopped"); !strings.Contains(r.out, " stopped ") {
		t.Errorf("runners list --include-stopped:\n%s", r.out)
	}
	if r := berth(t, env, "runners", "get", actors[0].ActorId); r.code != 1 || !strings.Contains(r.err, "runner.not_found: ") {
		t.Errorf("get missing runner: exit %d, stderr %q", r.code, r.err)
	}
}

// -q prints an id once for the rows it has next to each other (a runner config's, one per
// datacenter); --json prints what the table's json gives.
func TestOutput(t *testing.T) {
	var buf bytes.Buffer
	c := &cli{stdio: stdio{out: &buf}, quiet: true}
	rows := []runnerConfig{{Name: "a", Datacenter: "eu"}, {Name: "a", Datacenter: "us"}, {Name: "b", Datacenter: "eu"}}
	if err := output(c, rows, false, runnerConfigTable); err != nil || buf.String() != "a\nb\n" {
		t.Errorf("-q: %q, %v", buf.String(), err)
	}
	buf.Reset()
	c.quiet, c.jsonOut = false, true
	if err := output(c, []client.Envoy{{EnvoyKey: "k"}}, true, envoyTable); err != nil {
		t.Fatal(err)
	}
	if e := decodeJSON[map[string]any](t, buf.String()); e["envoy_key"] != "k" || e["state"] != "active" {
		t.Errorf("--json of an envoy: %s", buf.String())
	}
}

func TestProgressOnATerminalAndOff(t *testing.T) {
	var buf bytes.Buffer
	c := &cli{stdio: stdio{err: &buf}, progressEvery: time.Hour}
	p := c.newProgress("copying", "keys", 10)
	for range 10 {
		p.Add(1)
	}
	p.Done()
	// Not a terminal: the first report, then only the last; no control characters.
	if got := buf.String(); strings.Count(got, "\n") != 2 || !strings.HasPrefix(got, "copying: 1/10 keys") ||
		!strings.Contains(got, "copying: 10/10 keys") || strings.ContainsAny(got, "\r\033") {
		t.Errorf("plain progress:\n%q", got)
	}

	buf.Reset()
	p = &progress{w: &buf, tty: true, label: "copying", total: 4, started: time.Now()}
	p.Set(2, -1)
	p.Done()
	if got := buf.String(); !strings.Contains(got, "\r\033[Kcopying [===============               ] 2/4") || !strings.HasSuffix(got, "\n") {
		t.Errorf("terminal progress:\n%q", got)
	}
}

// A store exported to a file and imported into another holds the same keys; an import into
// a store that holds keys needs --overwrite.
func TestExportImport(t *testing.T) {
	dir := t.TempDir()
	src, dst := "file://"+filepath.Join(dir, "src"), "file://"+filepath.Join(dir, "dst")
	ctx := context.Background()
	db, err := udb.Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := udb.Update(ctx, db, func(tx udb.Transaction) error {
		for i := range 100 {
			tx.Set([]byte(fmt.Sprintf("key-%03d", i)), []byte(fmt.Sprintf("value-%d", i)))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	file := filepath.Join(dir, "berth.dump")
	r := ok(t, nil, "export", "--db", src, "--out", file)
	if !strings.Contains(r.err, "exporting: 100 keys") || !strings.Contains(r.err, "exported 100 keys") || r.out != "" {
		t.Errorf("export: stdout %q, stderr %q", r.out, r.err)
	}
	// --db may come from the configuration.
	r = ok(t, []string{"BERTH__database__url=" + dst}, "import", "--in", file)
	if !strings.Contains(r.err, "imported 100 keys") {
		t.Errorf("import: stderr %q", r.err)
	}
	if r := berth(t, nil, "import", "--db", dst, "--in", file); r.code != 1 {
		t.Errorf("import into a store with keys: exit %d, stderr %q; want 1", r.code, r.err)
	}
	ok(t, nil, "import", "--db", dst, "--in", file, "--overwrite")

	db, err = udb.Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v, err := udb.ReadTransact(ctx, db, func(tx udb.ReadTransaction) ([]byte, error) { return tx.Get(ctx, []byte("key-042")) })
	if err != nil || string(v) != "value-42" {
		t.Errorf("key-042 after import = %q, %v", v, err)
	}

	// A damaged file is refused.
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "cut.dump")
	if err := os.WriteFile(bad, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if r := berth(t, nil, "import", "--db", "file://"+filepath.Join(dir, "other"), "--in", bad); r.code != 1 {
		t.Errorf("import of a cut file: exit %d; want 1", r.code)
	}
}

// berth doctor reads every live keyed actor and, in one datacenter, finds no key held
// twice (tests/multidc sees it report a conflict between two datacenters).
func TestDoctor(t *testing.T) {
	url := startEngine(t, "")
	env := []string{"BERTH_ENDPOINT=" + url}
	ok(t, env, "namespaces", "create", "team-a")
	for _, ns := range []string{"default", "team-a"} {
		withRunnerConfig(t, url, ns, "pool")
	}
	ok(t, env, "actors", "create", "--name", "room", "--runner-name-selector", "pool", "--key", "k", "--count", "3")
	ok(t, env, "actors", "create", "--name", "room", "--runner-name-selector", "pool", "--key", "k", "-n", "team-a")
	ok(t, env, "actors", "create", "--name", "loose", "--runner-name-selector", "pool")

	r := ok(t, env, "doctor")
	if want := "no key is held by more than one live actor (3 keyed actors in 1 namespace)\n"; r.out != want {
		t.Errorf("doctor: %q, want %q", r.out, want)
	}
	rep := decodeJSON[doctorReport](t, ok(t, env, "doctor", "--all-namespaces", "--json").out)
	if rep.Namespaces != 2 || rep.KeyedActors != 4 || rep.KeyConflicts == nil || len(rep.KeyConflicts) != 0 {
		t.Errorf("doctor --all-namespaces --json: %+v", rep)
	}
	// An engine error keeps the context the command gave it, with one "berth: ".
	if r := berth(t, env, "doctor", "-n", "nope"); r.code != 1 || !strings.Contains(r.err, "\nberth: namespace nope: namespace.not_found: ") || strings.Count(r.err, "berth:") != 1 {
		t.Errorf("doctor -n nope: exit %d, stderr %q", r.code, r.err)
	}
	if r := berth(t, env, "doctor", "extra"); r.code != 2 {
		t.Errorf("doctor extra: exit %d, want 2", r.code)
	}
}

// withRunnerConfig gives the pool a normal runner config in namespace ns, so that actors of it
// can be created (and wait, pending, for a runner).
func withRunnerConfig(t *testing.T, url, ns, pool string) {
	t.Helper()
	cl, err := client.New(url, client.WithNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.RunnerConfigs().Upsert(context.Background(), pool, map[string]client.RunnerConfig{
		"default": {Normal: &client.RunnerConfigNormal{}}}); err != nil {
		t.Fatal(err)
	}
}

// Actors without a runner: get-or-create, sleep and reschedule, names, and -q.
func TestActorCommands(t *testing.T) {
	url := startEngine(t, "")
	env := []string{"BERTH_ENDPOINT=" + url}
	withRunnerConfig(t, url, "default", "pool")
	args := []string{"actors", "get-or-create", "--name", "room", "--key", "lobby", "--runner-name-selector", "pool", "--crash-policy", "restart"}

	first := ok(t, env, args...)
	if !strings.HasPrefix(first.err, "created actor ") || !strings.HasPrefix(first.out, "ID ") {
		t.Fatalf("get-or-create: stdout %q, stderr %q", first.out, first.err)
	}
	got := decodeJSON[actorJSON](t, ok(t, env, append(args, "--json")...).out)
	if got.Created == nil || *got.Created || got.State != "pending" || got.Key == nil || *got.Key != "lobby" {
		t.Fatalf("get-or-create --json, second call: %+v", got)
	}
	id := got.ActorId
	if r := ok(t, env, append(args, "-q")...); r.out != id+"\n" || r.err != "" {
		t.Errorf("get-or-create -q: stdout %q, stderr %q", r.out, r.err)
	}
	if r := berth(t, env, "actors", "get-or-create", "--name", "room", "--runner-name-selector", "pool"); r.code != 2 || !strings.Contains(r.err, "--key is required") {
		t.Errorf("get-or-create without --key: exit %d, stderr %q", r.code, r.err)
	}

	state := func() string {
		return decodeJSON[actorJSON](t, ok(t, env, "actors", "get", id, "--json").out).State
	}
	if r := ok(t, env, "actors", "sleep", id); r.out != "sleeping "+id+"\n" {
		t.Errorf("sleep: %q", r.out)
	}
	if s := state(); s != "sleeping" {
		t.Errorf("after sleep: %s", s)
	}
	if r := ok(t, env, "actors", "reschedule", id, "--json"); decodeJSON[map[string][]string](t, r.out)["rescheduled"][0] != id {
		t.Errorf("reschedule --json: %q", r.out)
	}
	if s := state(); s != "pending" {
		t.Errorf("after reschedule: %s", s)
	}

	other := strings.TrimSpace(ok(t, env, "actors", "create", "--name", "solo", "--runner-name-selector", "pool", "--crash-policy", "restart", "-q").out)
	if r := ok(t, env, "actors", "list", "-q"); r.out != id+"\n"+other+"\n" {
		t.Errorf("actors list -q = %q, want %s and %s", r.out, id, other)
	}
	if r := ok(t, env, "actors", "names"); !strings.Contains(r.out, "room ") || !strings.Contains(r.out, "solo ") || !strings.HasPrefix(r.out, "NAME ") {
		t.Errorf("actors names:\n%s", r.out)
	}
	if r := ok(t, env, "actors", "names", "-q", "--limit", "1"); r.out != "room\n" {
		t.Errorf("actors names -q --limit 1 = %q", r.out)
	}
	if r := ok(t, env, "namespaces", "list", "-q"); r.out != "default\n" {
		t.Errorf("namespaces list -q = %q", r.out)
	}
	if r := ok(t, env, "actors", "destroy", id, other); r.out != "destroyed "+id+"\ndestroyed "+other+"\n" {
		t.Errorf("destroy: %q", r.out)
	}
	if s := state(); s != "destroyed" {
		t.Errorf("after destroy: %s", s)
	}
}

// Runner configs set, listed, refreshed, checked and deleted; the engine may call loopback
// addresses, where a serverless app answers its /metadata.
func TestRunnerConfigs(t *testing.T) {
	url := startEngineWith(t, func(c *config.Config) { c.Pegboard.Serverless.AllowedCIDRs = []string{"127.0.0.0/8"} })
	env := []string{"BERTH_ENDPOINT=" + url}
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/metadata" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"runtime":"rivetkit","version":"2.3.19","envoyProtocolVersion":8,"envoy":{"kind":{"serverless":{}},"version":1}}`)
	}))
	defer app.Close()

	if r := ok(t, env, "datacenters", "list"); !strings.HasPrefix(r.out, "NAME ") || !strings.Contains(r.out, "\ndefault ") {
		t.Errorf("datacenters list:\n%s", r.out)
	}
	if dcs := decodeJSON[[]client.Datacenter](t, ok(t, env, "datacenters", "list", "--json").out); len(dcs) != 1 || dcs[0].Label != 1 {
		t.Errorf("datacenters list --json = %+v", dcs)
	}

	if r := ok(t, env, "runner-configs", "put", "pool", "--normal"); r.out != "set pool in default\n" {
		t.Errorf("put --normal: %q", r.out)
	}
	file := filepath.Join(t.TempDir(), "sl.json")
	if err := os.WriteFile(file, []byte(`{"serverless": {"url": "`+app.URL+`/api", "request_lifespan": 3600}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := ok(t, env, "runner-configs", "put", "sl", "--file", file, "--datacenter", "default", "-q"); r.out != "sl\n" {
		t.Errorf("put --file -q: %q", r.out)
	}
	if r := ok(t, env, "runner-configs", "list", "-q"); r.out != "pool\nsl\n" {
		t.Errorf("list -q = %q", r.out)
	}
	rows := decodeJSON[[]runnerConfig](t, ok(t, env, "runner-configs", "list", "--variant", "serverless", "--json").out)
	if len(rows) != 1 || rows[0].Name != "sl" || rows[0].Datacenter != "default" || rows[0].Serverless == nil || rows[0].Serverless.Url != app.URL+"/api" {
		t.Errorf("list --variant serverless --json = %+v", rows)
	}
	if r := ok(t, env, "runner-configs", "get", "sl"); !strings.Contains(r.out, "sl    default     serverless  "+app.URL+"/api") {
		t.Errorf("get sl:\n%s", r.out)
	}
	if r := ok(t, env, "runner-configs", "refresh", "sl"); r.out != "refreshed sl\n" {
		t.Errorf("refresh: %q", r.out)
	}
	if r := berth(t, env, "runner-configs", "refresh", "pool"); r.code != 1 || !strings.Contains(r.err, "core.internal_error") {
		t.Errorf("refresh of a normal pool: exit %d, stderr %q", r.code, r.err)
	}

	if r := ok(t, env, "runner-configs", "check", app.URL+"/api", "--header", "x-a=b"); r.out != app.URL+"/api answers: version 2.3.19\n" {
		t.Errorf("check: %q", r.out)
	}
	r := berth(t, env, "runner-configs", "check", app.URL+"/elsewhere")
	if r.code != 1 || r.out != "" || !strings.Contains(r.err, "berth: "+app.URL+"/elsewhere failed its check: non_success_status: ") {
		t.Errorf("check of a 404: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}
	r = berth(t, env, "runner-configs", "check", "http://10.0.0.1/api", "--json")
	if check := decodeJSON[client.ServerlessCheck](t, r.out); r.code != 1 || check.Failure == nil || check.Failure.Error.Metadata.Kind != "destination_blocked" {
		t.Errorf("check of a private address --json: exit %d, stdout %q", r.code, r.out)
	}

	if r := ok(t, env, "runner-configs", "delete", "sl", "pool"); r.out != "deleted sl\ndeleted pool\n" {
		t.Errorf("delete: %q", r.out)
	}
	if r := berth(t, env, "runner-configs", "get", "sl"); r.code != 1 || !strings.Contains(r.err, "runner_config.not_found: ") {
		t.Errorf("get of a deleted config: exit %d, stderr %q", r.code, r.err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"normal": {}, "bogus": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"put", "x"},
		{"put", "x", "--normal", "--file", file},
		{"put", "x", "--file", bad},
		{"list", "--variant", "odd"},
		{"check", "http://x", "--header", "novalue"},
		{"check"},
		{"refresh"},
	} {
		if r := berth(t, env, append([]string{"runner-configs"}, args...)...); r.code != 2 {
			t.Errorf("runner-configs %q: exit %d, stderr %q; want 2", args, r.code, r.err)
		}
	}
}

func TestHealth(t *testing.T) {
	env := []string{"BERTH_ENDPOINT=" + startEngine(t, "tok")} // no token needed
	if r := ok(t, env, "health"); !regexp.MustCompile(`^ok: engine .*; runner protocol \d+, envoy protocol \d+\)\n$`).MatchString(r.out) {
		t.Errorf("health: %q", r.out)
	}
	h := decodeJSON[struct {
		Health   client.Health   `json:"health"`
		Metadata client.Metadata `json:"metadata"`
	}](t, ok(t, env, "health", "--json").out)
	if h.Health.Status != "ok" || h.Metadata.Runtime != "engine" || h.Metadata.GoVersion == nil {
		t.Errorf("health --json: %+v", h)
	}
}

// Errors say what to do: start an engine or fix --endpoint, give a token, pick the command
// meant, write an id as ids are written; and "berth: " comes once.
func TestErrorMessages(t *testing.T) {
	url := startEngine(t, "tok")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() // nothing listens there any more
	ln.Close()
	good := id.New(1).String()

	tests := []struct {
		env  []string
		args []string
		code int
		want string
	}{
		{[]string{"BERTH_ENDPOINT=" + closed}, []string{"actors", "list"}, 1,
			"berth: cannot reach the engine at " + closed + " (connection refused); start one with 'berth start' or set --endpoint / BERTH_ENDPOINT\n"},
		{nil, []string{"health", "--endpoint", "http://no-such-host.invalid"}, 1, "berth: cannot reach the engine at http://no-such-host.invalid ("},
		{[]string{"BERTH_ENDPOINT=" + url}, []string{"runners", "list"}, 1, "api.unauthorized: "},
		{[]string{"BERTH_ENDPOINT=" + url}, []string{"runners", "list"}, 1, "give it with --token or BERTH_TOKEN"},
		{[]string{"BERTH_ENDPOINT=" + url, "BERTH_TOKEN=nope"}, []string{"namespaces", "list"}, 1, "refused the token of --token or BERTH_TOKEN"},
		{nil, []string{"actros"}, 2, `berth: unknown command "actros" for "berth"; did you mean actors?`},
		{nil, []string{"actors", "slep", "x"}, 2, `did you mean sleep?`},
		{nil, []string{"runner-config", "list"}, 2, `did you mean runner-configs?`},
		{nil, []string{"actors", "get", "nope"}, 2, `berth: actors get: ACTOR_ID "nope" is not an id (wrong length: `},
		{nil, []string{"actors", "get", "nope"}, 2, `an id is 30 characters of 0-9 and a-z, like ` + exampleID},
		{nil, []string{"actors", "delete", good, "nope!"}, 2, `actors delete: ACTOR_ID "nope!" is not an id`},
		{nil, []string{"actors", "sleep", strings.Repeat("_", 30)}, 2, `actors sleep: ACTOR_ID "______________________________" is not an id (invalid character: `},
		{nil, []string{"actors", "reschedule", "x"}, 2, `actors reschedule: ACTOR_ID "x" is not an id`},
		{nil, []string{"actors", "kv", "get", "x", "k"}, 2, `actors kv get: ACTOR_ID "x" is not an id`},
		{nil, []string{"runners", "get", "x"}, 2, `runners get: RUNNER_ID "x" is not an id`},
		{nil, []string{"runners", "drain", "x"}, 2, `runners drain: RUNNER_ID "x" is not an id`},
		{nil, []string{"actors", "list", "-q", "--json"}, 2, "give --json or --quiet, not both"},
		{nil, []string{"runner-configs", "list", "--limit", "-1", "--endpoint", url, "--token", "tok"}, 1, "berth: limit -1 out of range\n"},
		{[]string{"BERTH_ENDPOINT=" + url, "BERTH_TOKEN=tok"}, []string{"actors", "create", "--name", "a", "--runner-name-selector", "nopool"}, 1,
			"actor.no_runner_config_configured: "},
		{[]string{"BERTH_ENDPOINT=" + url, "BERTH_TOKEN=tok"}, []string{"actors", "create", "--name", "a", "--runner-name-selector", "nopool"}, 1,
			`no runner or envoy of pool "nopool" has ever connected`},
		{[]string{"BERTH_ENDPOINT=" + url, "BERTH_TOKEN=tok"}, []string{"actors", "create", "--name", "a", "--runner-name-selector", "nopool"}, 1,
			"or from 'berth runner-configs put' (PUT /runner-configs/nopool)"},
	}
	for _, tt := range tests {
		r := berth(t, tt.env, tt.args...)
		if r.code != tt.code || !strings.Contains(r.err, tt.want) || strings.Contains(r.err, "berth: berth") || r.out != "" {
			t.Errorf("berth %q: exit %d, stdout %q, stderr %q; want exit %d and %q", tt.args, r.code, r.out, r.err, tt.code, tt.want)
		}
	}
}

// The completion scripts come out for each shell, and the command they call completes.
func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "complete -o default -F __start_berth berth",
		"zsh":  "#compdef berth",
		"fish": "complete -c berth ",
	} {
		if r := ok(t, nil, "completion", shell); !strings.Contains(r.out, want) {
			t.Errorf("completion %s lacks %q", shell, want)
		}
	}
	if r := ok(t, nil, "completion", "bash", "--help"); !strings.Contains(r.out, "source <(berth completion bash)") {
		t.Errorf("completion bash --help:\n%s", r.out)
	}
	if r := berth(t, nil, "completion", "powershell"); r.code != 2 || !strings.Contains(r.err, `unknown command "powershell"`) {
		t.Errorf("completion powershell: exit %d, stderr %q", r.code, r.err)
	}
	r := ok(t, nil, cobra.ShellCompRequestCmd, "actors", "re")
	if lines := strings.Split(r.out, "\n"); !strings.HasPrefix(lines[0], "reschedule\t") || !strings.HasPrefix(lines[1], ":") {
		t.Errorf("completing actors re:\n%s", r.out)
	}
	if r := ok(t, nil, cobra.ShellCompRequestCmd, "runner-configs", ""); !strings.Contains(r.out, "refresh\t") || !strings.Contains(r.out, "check\t") {
		t.Errorf("completing runner-configs:\n%s", r.out)
	}
	if r := ok(t, nil, cobra.ShellCompRequestCmd, "actors", "create", "--crash-policy", ""); !strings.HasPrefix(r.out, "restart\nsleep\ndestroy\n:") {
		t.Errorf("completing --crash-policy:\n%s", r.out)
	}
}
