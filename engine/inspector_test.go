package engine

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// chromiumPath finds a Chromium or Chrome binary, or "".
func chromiumPath() string {
	if p := os.Getenv("BERTH_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// inspector drives /ui of an engine in headless Chromium.
type inspector struct {
	t     *testing.T
	ctx   context.Context // the browser tab
	base  string          // http://host:port
	shots string          // where screenshots go
	mode  string          // "auth" or "open": prefixes the screenshots' names
}

// newInspector opens a browser on e's /ui; with token set it logs in through the form first.
// Screenshots go to $BERTH_UI_SCREENSHOTS (a test artefact directory), else t.TempDir().
func newInspector(t *testing.T, ctx context.Context, e *Engine, token string) *inspector {
	t.Helper()
	browserPath := chromiumPath()
	if browserPath == "" {
		t.Skip("no chromium binary found (install Debian's chromium package, as .ci/run does, or set BERTH_CHROMIUM)")
	}
	shots := os.Getenv("BERTH_UI_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browserPath), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 900))
	actx, stopAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(stopAlloc)
	bctx, stopBrowser := chromedp.NewContext(actx)
	t.Cleanup(stopBrowser)
	in := &inspector{t: t, ctx: bctx, base: "http://" + e.PublicAddr().String(), shots: shots, mode: "open"}
	if token != "" {
		in.mode = "auth"
		in.do("login page", chromedp.Navigate(in.base+"/ui/"), chromedp.WaitVisible(chromedp.CSS(`#token`)))
		in.shot("login")
		in.do("login", chromedp.SendKeys(chromedp.CSS(`#token`), token), chromedp.Submit(chromedp.CSS(`#token`)), chromedp.WaitVisible(chromedp.CSS(`#view`)))
	} else {
		in.do("open", chromedp.Navigate(in.base+"/ui/"))
	}
	in.wait(`document.querySelector("#namespace option")`)
	return in
}

func (in *inspector) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	in.t.Helper()
	if err := chromedp.Do(in.ctx, actions...); err != nil {
		in.t.Fatalf("%s: %v", what, err)
	}
}

// wait waits until the JavaScript expression is truthy.
func (in *inspector) wait(expr string) {
	in.t.Helper()
	if _, err := chromedp.Run(in.ctx, chromedp.Poll[bool]("(() => { try { return !!("+expr+") } catch { return false } })()", chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		status, _ := chromedp.Run(in.ctx, chromedp.Text(chromedp.CSS(`#status`)))
		in.t.Fatalf("waiting for %s: %v (status %q)", expr, err, status)
	}
}

// eval returns the value of a JavaScript expression.
func eval[T any](in *inspector, expr string) T {
	in.t.Helper()
	v, err := chromedp.Run(in.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		in.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// open goes to route (as "#/actors?…") and waits until that page has rendered, with
// ready a JavaScript expression true once its content is there.
func (in *inspector) open(route, ready string) {
	in.t.Helper()
	eval[bool](in, fmt.Sprintf(`document.querySelector("#status").textContent = "";
		if (location.hash === %[1]q) window.dispatchEvent(new HashChangeEvent("hashchange")); else location.hash = %[1]q;
		true`, route))
	// The page for this hash: a render of the previous hash may still finish after the
	// status was cleared (hashchange fires later), and that one must not count.
	in.wait(`document.querySelector("#status").textContent !== "" && document.querySelector("#view").dataset.hash === location.hash && (` + ready + `)`)
	if cls := eval[string](in, `document.querySelector("#status").className`); cls == "error" {
		in.t.Fatalf("%s: %s", route, eval[string](in, `document.querySelector("#status").textContent`))
	}
}

// inAuthModes runs f as a subtest on an engine with auth on (admin token "tok") and as one
// on an engine with auth off.
func inAuthModes(t *testing.T, f func(t *testing.T, e *Engine, token string)) {
	for _, token := range []string{"tok", ""} {
		t.Run("token="+token, func(t *testing.T) {
			cfg := testConfig(token)
			cfg.Auth.AllowAnonymous = token == ""
			f(t, startEngine(t, cfg), token)
		})
	}
}

// click clicks the first element css selects.
func (in *inspector) click(css string) {
	in.t.Helper()
	eval[bool](in, fmt.Sprintf(`document.querySelector(%q).click(), true`, css))
}

// rows returns the text of the cells of a table's body, a row per entry.
func (in *inspector) rows(table string) [][]string {
	in.t.Helper()
	return eval[[][]string](in, `[...document.querySelectorAll("table#`+table+` tbody tr")].map(r => [...r.cells].map(c => c.textContent.trim()))`)
}

// shot writes a screenshot of the whole page as <mode>-<name>.png.
func (in *inspector) shot(name string) {
	in.t.Helper()
	png, err := chromedp.Run(in.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		in.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(in.shots, in.mode+"-"+name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		in.t.Fatal(err)
	}
	in.t.Logf("screenshot %s", path)
}

// The inspector's navigation and list pages, with auth on (logging in through the form)
// and off: actors searched by name, key and id, filtered by state and pool, paged by
// cursor; runners, envoys, runner configs, namespaces and datacenters.
func TestInspectorLists(t *testing.T) {
	inAuthModes(t, func(t *testing.T, e *Engine, token string) {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		r := newEchoRunner(t, ctx, e)
		create := func(name string, key *string) actor.Actor {
			a, err := e.lifecycle.Actors.Create(ctx, actor.CreateInput{Namespace: defaultNS(t, e), NamespaceName: "default",
				Name: name, Key: key, Selector: "pool", CrashPolicy: actor.CrashSleep})
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		first := create("dash-actor", nil)
		<-r.starts
		// 55 more: the runner's 4 slots hold 3 of them, the others sleep (no capacity).
		var many []actor.Actor
		for i := range 55 {
			k := fmt.Sprintf("k%02d", i)
			many = append(many, create("many", &k))
		}
		for range 3 {
			<-r.starts
		}
		in := newInspector(t, ctx, e, token)

		// The default list: the first name, its actor running, linked to its page.
		in.open("#/actors", `document.querySelector("table#actors")`)
		rows := in.rows("actors")
		if len(rows) != 1 || rows[0][0] != "dash-actor" || rows[0][2] != "running" || rows[0][3] != "0" || rows[0][7] != first.ActorID.String() {
			t.Errorf("actors of the first name: %q", rows)
		}
		in.shot("actors")

		// Cursor pages: 50, then the other 5, and back.
		in.open("#/actors?name=many", `document.querySelector("table#actors")`)
		if n := len(in.rows("actors")); n != 50 {
			t.Errorf("first page of many: %d rows, want 50", n)
		}
		seen := map[string]bool{}
		for _, row := range in.rows("actors") {
			seen[row[1]] = true
		}
		in.click("button.next")
		in.wait(`document.querySelector(".page-no").textContent.startsWith("page 2")`)
		for _, row := range in.rows("actors") {
			seen[row[1]] = true
		}
		if len(seen) != 55 {
			t.Errorf("the two pages of many show %d distinct keys, want 55", len(seen))
		}
		if eval[bool](in, `document.querySelector("button.next").disabled`) != true {
			t.Errorf("Next is enabled on the last page")
		}
		in.click("button.prev")
		in.wait(`document.querySelector(".page-no").textContent.startsWith("page 1")`)
		if n := len(in.rows("actors")); n != 50 {
			t.Errorf("back to the first page: %d rows", n)
		}

		// Filters: by state (read across API pages), by pool; search by key and by ids.
		in.open("#/actors?name=many&state=running", `document.querySelector("table#actors")`)
		rows = in.rows("actors")
		if len(rows) != 3 {
			t.Errorf("running actors of many: %q, want 3", rows)
		}
		for _, row := range rows {
			if row[2] != "running" {
				t.Errorf("state filter let through %q", row)
			}
		}
		in.shot("actors-filtered")
		in.open("#/actors?name=many&state=sleeping", `document.querySelector("table#actors")`)
		if n := len(in.rows("actors")); n != 52 {
			t.Errorf("sleeping actors of many: %d, want 52", n)
		}
		in.open("#/actors?name=many&pool=other", `document.querySelector("table#actors")`)
		if rows := in.rows("actors"); len(rows) != 1 || rows[0][0] != "none" {
			t.Errorf("pool filter: %q, want none", rows)
		}
		in.open("#/actors?name=many&key=k07", `document.querySelector("table#actors")`)
		if rows := in.rows("actors"); len(rows) != 1 || rows[0][1] != "k07" || rows[0][7] != many[7].ActorID.String() {
			t.Errorf("key search: %q", rows)
		}
		ids := many[3].ActorID.String() + "," + first.ActorID.String()
		in.open("#/actors?actor_id="+ids, `document.querySelector("table#actors")`)
		if rows := in.rows("actors"); len(rows) != 2 {
			t.Errorf("id search: %q, want 2 rows", rows)
		}
		// The search form writes the route.
		in.open("#/actors", `document.querySelector("table#actors")`)
		in.do("search form", chromedp.SetValue(chromedp.CSS(`#actor-search input[name=name]`), "many"),
			chromedp.SetValue(chromedp.CSS(`#actor-search input[name=key]`), "k11"))
		eval[bool](in, `document.querySelector("#actor-search").requestSubmit(), true`)
		in.wait(`location.hash === "#/actors?name=many&key=k11" && document.querySelectorAll("table#actors tbody tr").length === 1 && document.querySelector("table#actors tbody td:nth-child(2)").textContent === "k11"`)

		// The id links to the actor's page.
		in.open("#/actors", `document.querySelector("table#actors a.id")`)
		in.click("table#actors a.id")
		in.wait(`location.hash === "#/actor/` + first.ActorID.String() + `" && document.querySelector("#actor-fields")`)
		if name := eval[string](in, `document.querySelector('#actor-fields dd[data-field="Name"]').textContent`); name != "dash-actor" {
			t.Errorf("actor page name %q", name)
		}

		// The other list pages: one row each (none for envoys).
		for _, pg := range []struct {
			table string
			want  func(row []string) bool
		}{
			{"runners", func(r []string) bool { return r[0] == "pool" && r[2] == "active" && r[3] == "0 / 4" }},
			{"envoys", func(r []string) bool { return r[0] == "none" }},
			{"runner-configs", func(r []string) bool { return r[0] == "pool" && r[2] == "normal" && r[4] == "none" }},
			{"namespaces", func(r []string) bool { return r[0] == "default" }},
			{"datacenters", func(r []string) bool { return len(r) > 2 && strings.HasPrefix(r[2], "http") }},
		} {
			in.open("#/"+pg.table, `document.querySelector("table#`+pg.table+`")`)
			if rows := in.rows(pg.table); len(rows) != 1 || !pg.want(rows[0]) {
				t.Errorf("%s: %q", pg.table, rows)
			}
			in.shot(pg.table)
		}

		if token != "" { // logging out ends the session: the login form is back
			in.click("form.logout button")
			in.do("logout", chromedp.WaitVisible(chromedp.CSS(`#token`)),
				chromedp.Navigate(in.base+"/ui/"), chromedp.WaitVisible(chromedp.CSS(`#token`)))
		}
	})
}

// The actor page in Chromium, with auth on and off: its fields and host, its hibernating
// WebSocket, its KV entries as text (hex for binary) or hex, searched by a text or hex
// prefix.
func TestInspectorActorPage(t *testing.T) {
	inAuthModes(t, func(t *testing.T, e *Engine, token string) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		a := inspectedActor(t, ctx, e)
		in := newInspector(t, ctx, e, token)
		route := "#/actor/" + a.ActorID.String()
		in.open(route, `document.querySelector("table#kv-entries")`)
		field := func(name string) string {
			return eval[string](in, `document.querySelector('#actor-fields dd[data-field="`+name+`"]').textContent`)
		}
		if field("Name") != "inspected" || field("State") != "running" || !strings.HasPrefix(field("Host"), "runner ") || field("Alarm") != "none" {
			t.Errorf("fields: name %q state %q host %q alarm %q", field("Name"), field("State"), field("Host"), field("Alarm"))
		}
		if rows := in.rows("timeline"); len(rows) != 3 || rows[0][1] != "running" || rows[1][1] != "placed" || !strings.HasPrefix(rows[1][3], "runner ") || rows[2][1] != "created" {
			t.Errorf("timeline: %q", rows)
		}
		if rows := in.rows("hibernating"); len(rows) != 1 || rows[0][0] != "01020304" || rows[0][1] != "0a0b0c0d" {
			t.Errorf("hibernating WebSockets: %q", rows)
		}
		// The live request log: a gateway request to the actor appears once the stream is on.
		in.wait(`document.querySelector("#requests")?.dataset.state === "live"`)
		res, err := http.Get(in.base + "/gateway/" + a.ActorID.String() + "/hello?x=1")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		in.wait(`document.querySelector("#live-requests tbody tr:not(.placeholder)")`)
		if rows := in.rows("live-requests"); len(rows) != 1 || rows[0][1] != "GET" || rows[0][2] != "/hello?x=1" || rows[0][3] != strconv.Itoa(res.StatusCode) {
			t.Errorf("live requests: %q (the gateway answered %d)", rows, res.StatusCode)
		}
		rows := in.rows("kv-entries")
		if len(rows) != 5 || rows[0][0] != "a" || rows[0][1] != "1" || rows[3][0] != "62 69 6e ff 00" || rows[3][1] != "00 01 02" ||
			rows[4][1] != "héllo" || !strings.Contains(rows[2][2], "2000 B (first 1024 shown)") {
			t.Errorf("KV entries: %q", rows)
		}
		in.shot("actor")

		in.open(route+"?kv_prefix=bi", `document.querySelector("table#kv-entries")`)
		if rows := in.rows("kv-entries"); len(rows) != 2 || rows[0][0] != "big" {
			t.Errorf("text prefix bi: %q", rows)
		}
		in.open(route+"?kv_prefix=62+69+6e&kv_mode=hex&kv_view=hex", `document.querySelector("table#kv-entries")`)
		if rows := in.rows("kv-entries"); len(rows) != 1 || rows[0][0] != "62 69 6e ff 00" {
			t.Errorf("hex prefix 62 69 6e: %q", rows)
		}
		in.open(route+"?kv_view=hex", `document.querySelector("table#kv-entries")`)
		if rows := in.rows("kv-entries"); len(rows) != 5 || rows[0][0] != "61" || rows[4][1] != "68 c3 a9 6c 6c 6f" {
			t.Errorf("hex view: %q", rows)
		}
		in.shot("actor-kv-hex")

		// SQLite: the tables, then a table's rows by pages of 50.
		tabs := eval[[]string](in, `[...document.querySelectorAll("#sqlite-tables a")].map(a => a.textContent)`)
		if strings.Join(tabs, ",") != `items,odd "name"` {
			t.Errorf("sqlite tables: %q", tabs)
		}
		in.open(route+"?sql_table=items", `document.querySelector("table#sqlite-rows")`)
		rows = in.rows("sqlite-rows")
		if len(rows) != 50 || rows[0][1] != "item 1" || rows[0][2] != "blob 2 B" || !strings.HasSuffix(rows[6][1], "…") {
			t.Errorf("sqlite rows: %d, first %q", len(rows), rows[0])
		}
		in.shot("actor-sqlite")
		in.click("#sqlite a.next")
		in.wait(`document.querySelector("#sqlite .page-no")?.textContent === "rows 51–100"`)
		in.click("#sqlite a.next")
		in.wait(`document.querySelector("#sqlite .page-no")?.textContent === "rows 101–120" && !document.querySelector("#sqlite a.next")`)
	})
}

// phaseOf reads actor aid's phase from e's store.
func phaseOf(t *testing.T, e *Engine, aid id.ID) actor.Phase {
	t.Helper()
	st, err := udb.ReadTransact(context.Background(), e.db, func(r udb.ReadTransaction) (actor.Status, error) {
		st, _, err := actor.Lookup(context.Background(), r, aid)
		return st, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return st.Phase
}

// awaitPhase waits until actor aid reaches phase (the runner's stop reply is asynchronous).
func awaitPhase(t *testing.T, e *Engine, aid id.ID, phase actor.Phase) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for phaseOf(t, e, aid) != phase {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("actor %s: phase %s, want %s", aid, phaseOf(t, e, aid), phase)
		}
	}
}

// The inspector's actions in Chromium, with auth on and off: create an actor from the
// form, then sleep, reschedule and destroy it (a cancelled destroy changes nothing), and
// drain the runner, each confirmed in a dialog.
func TestInspectorActions(t *testing.T) {
	inAuthModes(t, func(t *testing.T, e *Engine, token string) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		r := newEchoRunner(t, ctx, e)
		if _, err := e.lifecycle.Actors.Create(ctx, actor.CreateInput{Namespace: defaultNS(t, e), NamespaceName: "default",
			Name: "existing", Selector: "pool", CrashPolicy: actor.CrashSleep}); err != nil {
			t.Fatal(err)
		}
		<-r.starts
		in := newInspector(t, ctx, e, token)
		confirm := func(button string) {
			t.Helper()
			in.click(button)
			in.wait(`document.querySelector("dialog#confirm[open]")`)
			in.click("dialog#confirm button.confirm")
			in.wait(`!document.querySelector("dialog#confirm")`)
		}

		// Create: the form's actor is created and its page opens.
		in.open("#/actors", `document.querySelector("table#actors")`)
		in.click("button.create")
		in.wait(`document.querySelector("dialog#confirm[open] input[name=pool]")`)
		in.do("create form", chromedp.SetValue(chromedp.CSS(`dialog#confirm input[name=name]`), "made"),
			chromedp.SetValue(chromedp.CSS(`dialog#confirm input[name=key]`), "k1"),
			chromedp.SetValue(chromedp.CSS(`dialog#confirm input[name=pool]`), "pool"))
		in.shot("create-dialog")
		in.click("dialog#confirm button.confirm")
		in.wait(`location.hash.startsWith("#/actor/") && document.querySelector('#actor-fields dd[data-field="Name"]')?.textContent === "made"`)
		aid, err := id.Parse(strings.TrimPrefix(eval[string](in, `location.hash`), "#/actor/"))
		if err != nil {
			t.Fatal(err)
		}
		<-r.starts
		route := "#/actor/" + aid.String()

		in.open(route, `document.querySelector("button.sleep")`)
		confirm("button.sleep")
		awaitPhase(t, e, aid, actor.PhaseSleeping)

		in.open(route, `document.querySelector("button.reschedule")`)
		confirm("button.reschedule")
		<-r.starts // placed again at once
		awaitPhase(t, e, aid, actor.PhaseRunning)

		in.open(route, `document.querySelector("button.destroy")`)
		in.click("button.destroy")
		in.wait(`document.querySelector("dialog#confirm[open]")`)
		in.shot("destroy-dialog")
		in.click("dialog#confirm button.cancel")
		in.wait(`!document.querySelector("dialog#confirm")`)
		if p := phaseOf(t, e, aid); p != actor.PhaseRunning {
			t.Fatalf("after a cancelled destroy: %s", p)
		}
		confirm("button.destroy")
		in.wait(`document.querySelector('#actor-fields dd[data-field="State"]')?.textContent === "destroyed" && !document.querySelector("button.destroy")`)
		in.open(route, `document.querySelector("table#timeline")`)
		var kinds []string
		for _, row := range in.rows("timeline") {
			kinds = append(kinds, row[1])
		}
		if want := "destroyed,stopping,running,placed,sleeping,stopping,running,placed,created"; strings.Join(kinds, ",") != want {
			t.Errorf("timeline after the actions: %q, want %s", kinds, want)
		}
		if txt := eval[string](in, `document.querySelector("#view").textContent`); strings.Contains(txt, "null") || strings.Contains(txt, "not_found") {
			t.Errorf("the destroyed actor's page shows %q", txt)
		}
		in.shot("actor-destroyed")

		in.open("#/runners", `document.querySelector("table#runners button.drain")`)
		confirm("table#runners button.drain")
		in.open("#/runners?all=1", `document.querySelector("table#runners")`)
		if rows := in.rows("runners"); len(rows) != 1 || len(rows[0]) < 3 || (rows[0][2] != "draining" && rows[0][2] != "stopped") {
			t.Errorf("runners after the drain: %q", rows)
		}
	})
}
