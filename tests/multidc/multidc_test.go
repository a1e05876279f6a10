package multidc

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// t0 is when the seeded runners and envoys were created: hundreds in each datacenter share
// this one millisecond.
const t0 = 1_750_000_000_000

// freshPing is the last ping the seeded runners and envoys get: the test's start, so that
// with the hour-long lost thresholds the engines are given (cluster_test.go) none is lost.
var freshPing = time.Now().UnixMilli()

// TestMultiDatacenter starts three berth processes (a, the leader, b and c), each with its
// own file store seeded beforehand, and lists runners, runner names and envoys through the
// public API of each, with every filter and several page sizes.
func TestMultiDatacenter(t *testing.T) {
	if testing.Short() {
		t.Skip("builds berth and starts three processes")
	}
	bin := buildBerth(t, t.TempDir())
	t.Run("paging", func(t *testing.T) { testPaging(t, bin) })
	t.Run("datacenter down", func(t *testing.T) { testDatacenterDown(t, bin) })
}

// world is what the test seeded: every runner and envoy, and the namespaces' ids.
type world struct {
	defaultNs, otherNs id.ID
	runners            []runnerRec
	envoys             []envoyRec
}

type runnerRec struct {
	id       id.ID
	dc, ns   string
	name     string
	createTs int64
	stopped  bool
}

type envoyRec struct {
	dc, key, pool string
	createTs      int64
	expired       bool
}

// seed creates the namespaces in the leader's store, then in each datacenter's store:
// runners of the default namespace (n at t0, n/5 at t0+3; named pool-<i%3>, or only-<dc> for
// every fourth; every fifth stopped), 20 runners of namespace "other" at t0, and envoys
// (env-<i> for i < n, the same keys in every datacenter, at t0, in pools epool-<i%2>, every
// sixth expired and every fifth drained; and 20 <dc>-own-<i> at t0+2). Ids carry the
// datacenter's label.
func seed(t *testing.T, c *cluster, n int) *world {
	t.Helper()
	w := &world{}
	for _, d := range c.dcs {
		db := d.openStore(t)
		if d.leader {
			w.defaultNs = transact(t, db, func(tx udb.Transaction) (id.ID, error) {
				out, err := namespace.EnsureDefault(bg, tx, namespace.EnsureDefaultInput{NamespaceID: id.New(d.label), NowMs: t0})
				return out.Namespace.NamespaceID, err
			})
			w.otherNs = transact(t, db, func(tx udb.Transaction) (id.ID, error) {
				ns, err := namespace.Create(bg, tx, namespace.CreateInput{NamespaceID: id.New(d.label), Name: "other", DisplayName: "Other", NowMs: t0})
				return ns.NamespaceID, err
			})
		}
		w.seedRunners(t, db, d, w.defaultNs, "default", n, t0)
		w.seedRunners(t, db, d, w.defaultNs, "default", n/5, t0+3)
		w.seedRunners(t, db, d, w.otherNs, "other", 20, t0)
		w.seedEnvoys(t, db, d, n)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func transact[T any](t *testing.T, db udb.Database, f func(tx udb.Transaction) (T, error)) T {
	t.Helper()
	out, err := udb.Transact(bg, db, f)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (w *world) seedRunners(t *testing.T, db udb.Database, d *dc, ns id.ID, nsName string, n int, nowMs int64) {
	t.Helper()
	const batch = 100
	for start := 0; start < n; start += batch {
		recs := transact(t, db, func(tx udb.Transaction) ([]runnerRec, error) {
			var recs []runnerRec
			for i := start; i < min(n, start+batch); i++ {
				name := fmt.Sprintf("pool-%d", i%3)
				if i%4 == 0 {
					name = "only-" + d.name
				}
				conn := id.New(d.label)
				out, err := runner.Register(bg, tx, runner.RegisterInput{
					Namespace: ns, Name: name, Key: fmt.Sprintf("%d-%d", nowMs, i), Version: 1, TotalSlots: 8, ProtocolVersion: 7,
					ConnID: conn, NewRunnerID: id.New(d.label), NowMs: nowMs,
				})
				if err != nil {
					return nil, err
				}
				// Pinged now, so that the engines' loss detection leaves it alone while the test runs.
				if _, err := runner.UpdatePing(bg, tx, runner.UpdatePingInput{RunnerID: out.RunnerID, ConnID: conn, NowMs: freshPing}); err != nil {
					return nil, err
				}
				stopped := i%5 == 0
				if stopped {
					if _, err := runner.Stop(bg, tx, runner.StopInput{RunnerID: out.RunnerID, NowMs: nowMs + 1}); err != nil {
						return nil, err
					}
				}
				recs = append(recs, runnerRec{id: out.RunnerID, dc: d.name, ns: nsName, name: name, createTs: nowMs, stopped: stopped})
			}
			return recs, nil
		})
		w.runners = append(w.runners, recs...)
	}
}

func (w *world) seedEnvoys(t *testing.T, db udb.Database, d *dc, n int) {
	t.Helper()
	register := func(tx udb.Transaction, key, pool string, nowMs int64) error {
		conn := id.New(d.label)
		if _, err := envoy.Register(bg, tx, envoy.RegisterInput{Namespace: w.defaultNs, EnvoyKey: key, PoolName: pool,
			Version: 1, ProtocolVersion: 6, ConnID: conn, NowMs: nowMs}); err != nil {
			return err
		}
		// Pinged now, so that the engines' expiry loop leaves it alone while the test runs.
		_, err := envoy.UpdatePing(bg, tx, envoy.UpdatePingInput{Namespace: w.defaultNs, EnvoyKey: key, ConnID: conn, NowMs: freshPing})
		return err
	}
	recs := transact(t, db, func(tx udb.Transaction) ([]envoyRec, error) {
		var recs []envoyRec
		for i := range n {
			rec := envoyRec{dc: d.name, key: fmt.Sprintf("env-%d", i), pool: fmt.Sprintf("epool-%d", i%2), createTs: t0, expired: i%6 == 0}
			if err := register(tx, rec.key, rec.pool, t0); err != nil {
				return nil, err
			}
			if i%5 == 0 {
				if _, err := envoy.Drain(bg, tx, envoy.DrainInput{Namespace: w.defaultNs, EnvoyKey: rec.key, NowMs: t0 + 1}); err != nil {
					return nil, err
				}
			}
			if rec.expired {
				if _, err := envoy.Expire(bg, tx, envoy.ExpireInput{Namespace: w.defaultNs, EnvoyKey: rec.key, NowMs: t0 + 1}); err != nil {
					return nil, err
				}
			}
			recs = append(recs, rec)
		}
		for i := range 20 {
			rec := envoyRec{dc: d.name, key: fmt.Sprintf("%s-own-%d", d.name, i), pool: "epool-0", createTs: t0 + 2}
			if err := register(tx, rec.key, rec.pool, rec.createTs); err != nil {
				return nil, err
			}
			recs = append(recs, rec)
		}
		return recs, nil
	})
	w.envoys = append(w.envoys, recs...)
}

// listPage is one page of any of the three lists.
type listPage struct {
	Runners    []runner.Runner `json:"runners"`
	Envoys     []envoy.Envoy   `json:"envoys"`
	Names      []string        `json:"names"`
	Pagination struct {
		Cursor *string `json:"cursor"`
	} `json:"pagination"`
}

// pageAll follows the cursors of GET path?query on d with page size limit, and returns the
// pages; it fails on a page over limit or an empty page with a cursor.
func (c *cluster) pageAll(d *dc, path string, query url.Values, limit int) []listPage {
	c.t.Helper()
	q := url.Values{}
	for k, v := range query {
		q[k] = slices.Clone(v)
	}
	q.Set("limit", fmt.Sprint(limit))
	var pages []listPage
	for range 100_000 {
		var p listPage
		c.getJSON(d, path+"?"+q.Encode(), &p)
		n := len(p.Runners) + len(p.Envoys) + len(p.Names)
		if n > limit || n == 0 && p.Pagination.Cursor != nil {
			c.t.Fatalf("GET %s?%s on %s: %d items, cursor %v", path, q.Encode(), d.name, n, p.Pagination.Cursor)
		}
		pages = append(pages, p)
		if p.Pagination.Cursor == nil {
			return pages
		}
		q.Set("cursor", *p.Pagination.Cursor)
	}
	c.t.Fatalf("GET %s?%s on %s: paging does not end", path, q.Encode(), d.name)
	return nil
}

func testPaging(t *testing.T, bin string) {
	c := newCluster(t, bin, 5*time.Second)
	w := seed(t, c, 300)
	c.start()
	labelOf := map[string]uint16{"a": 1, "b": 2, "c": 3}

	all := func(runnerRec) bool { return true }
	active := func(r runnerRec) bool { return !r.stopped }
	byIDs := url.Values{"namespace": {"default"}, "include_stopped": {"true"}}
	pickedIDs := map[id.ID]bool{}
	var csv []string
	for i, r := range w.runners {
		if r.ns == "default" && i%41 == 0 {
			pickedIDs[r.id] = true
			if len(pickedIDs)%2 == 0 {
				byIDs.Add("runner_id", r.id.String())
			} else {
				csv = append(csv, r.id.String())
			}
		}
	}
	byIDs.Set("runner_ids", strings.Join(csv, ","))
	runnerTests := []struct {
		query string
		q     url.Values
		match func(runnerRec) bool
	}{
		{query: "namespace=default", match: active},
		{query: "namespace=default&include_stopped=true", match: all},
		{query: "namespace=default&name=pool-1", match: func(r runnerRec) bool { return active(r) && r.name == "pool-1" }},
		{query: "namespace=default&name=only-b&include_stopped=true", match: func(r runnerRec) bool { return r.name == "only-b" }},
		{query: "namespace=other", match: active},
		{q: byIDs, match: func(r runnerRec) bool { return pickedIDs[r.id] }},
	}
	for _, tc := range runnerTests {
		q := tc.q
		if q == nil {
			q, _ = url.ParseQuery(tc.query)
		}
		want := map[id.ID]bool{}
		for _, r := range w.runners {
			if r.ns == q.Get("namespace") && tc.match(r) {
				want[r.id] = true
			}
		}
		for _, d := range c.dcs {
			for _, limit := range []int{1, 7, 100, 1000} {
				var got []runner.Runner
				for _, p := range c.pageAll(d, "/runners", q, limit) {
					got = append(got, p.Runners...)
				}
				checkRunners(t, fmt.Sprintf("%s on %s, limit %d", q.Encode(), d.name, limit), got, want)
			}
		}
	}

	// Runner names: the union, each once, in order.
	var wantNames []string
	for _, r := range w.runners {
		if r.ns == "default" {
			wantNames = append(wantNames, r.name)
		}
	}
	slices.Sort(wantNames)
	wantNames = slices.Compact(wantNames)
	for _, d := range c.dcs {
		for _, limit := range []int{1, 2, 7, 100} {
			var got []string
			for _, p := range c.pageAll(d, "/runners/names", url.Values{"namespace": {"default"}}, limit) {
				got = append(got, p.Names...)
			}
			if !slices.Equal(got, wantNames) {
				t.Errorf("runner names on %s, limit %d: %v, want %v", d.name, limit, got, wantNames)
			}
		}
	}

	// Envoys: the same keys in every datacenter, created in one millisecond.
	envoyTests := []struct {
		query string
		match func(envoyRec) bool
	}{
		{"namespace=default", func(e envoyRec) bool { return !e.expired }},
		{"namespace=default&name=epool-1", func(e envoyRec) bool { return !e.expired && e.pool == "epool-1" }},
		// By key: expired envoys too; keys of no envoy match nothing.
		{"namespace=default&envoy_key=env-5&envoy_key=env-6&envoy_key=env-7&envoy_key=b-own-3&envoy_key=nobody",
			func(e envoyRec) bool { return slices.Contains([]string{"env-5", "env-6", "env-7", "b-own-3"}, e.key) }},
		{"namespace=default&name=epool-0&envoy_key=env-5&envoy_key=env-6&envoy_key=env-8",
			func(e envoyRec) bool { return e.key == "env-6" || e.key == "env-8" }},
	}
	for _, tc := range envoyTests {
		q, _ := url.ParseQuery(tc.query)
		want := map[string]bool{}
		for _, e := range w.envoys {
			if tc.match(e) {
				want[e.dc+"/"+e.key] = true
			}
		}
		for _, d := range c.dcs {
			for _, limit := range []int{1, 7, 100, 1000} {
				var got []envoy.Envoy
				for _, p := range c.pageAll(d, "/envoys", q, limit) {
					got = append(got, p.Envoys...)
				}
				checkEnvoys(t, fmt.Sprintf("%s on %s, limit %d", tc.query, d.name, limit), got, want, labelOf)
			}
		}
	}
}

// checkRunners fails unless got holds exactly the runners of want, each once, in (create_ts,
// id) descending order.
func checkRunners(t *testing.T, what string, got []runner.Runner, want map[id.ID]bool) {
	t.Helper()
	seen := map[id.ID]bool{}
	for i, r := range got {
		if seen[r.RunnerID] {
			t.Fatalf("%s: runner %s listed twice", what, r.RunnerID)
		}
		seen[r.RunnerID] = true
		if !want[r.RunnerID] {
			t.Fatalf("%s: runner %s (%s, %s) not selected", what, r.RunnerID, r.Datacenter, r.Name)
		}
		if r.Datacenter != string(rune('a'+r.RunnerID.Label()-1)) {
			t.Fatalf("%s: runner %s of label %d reported in %q", what, r.RunnerID, r.RunnerID.Label(), r.Datacenter)
		}
		if i > 0 {
			p := got[i-1]
			if c := cmp.Or(cmp.Compare(p.CreateTs, r.CreateTs), p.RunnerID.Compare(r.RunnerID)); c <= 0 {
				t.Fatalf("%s: out of order at %d: (%d, %s) then (%d, %s)", what, i, p.CreateTs, p.RunnerID, r.CreateTs, r.RunnerID)
			}
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%s: %d runners, want %d", what, len(seen), len(want))
	}
}

// checkEnvoys fails unless got holds exactly the envoys of want ("dc/key"), each once, in
// (create_ts, key, datacenter label) descending order.
func checkEnvoys(t *testing.T, what string, got []envoy.Envoy, want map[string]bool, labelOf map[string]uint16) {
	t.Helper()
	seen := map[string]bool{}
	for i, e := range got {
		k := e.Datacenter + "/" + e.EnvoyKey
		if seen[k] {
			t.Fatalf("%s: envoy %s listed twice", what, k)
		}
		seen[k] = true
		if !want[k] {
			t.Fatalf("%s: envoy %s not selected", what, k)
		}
		if i > 0 {
			p := got[i-1]
			c := cmp.Or(cmp.Compare(p.CreateTs, e.CreateTs), strings.Compare(p.EnvoyKey, e.EnvoyKey), cmp.Compare(labelOf[p.Datacenter], labelOf[e.Datacenter]))
			if c <= 0 {
				t.Fatalf("%s: out of order at %d: %s/%s then %s", what, i, p.Datacenter, p.EnvoyKey, k)
			}
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%s: %d envoys, want %d", what, len(seen), len(want))
	}
}

// testDatacenterDown stops datacenters and checks that the lists answer promptly with
// datacenter.unreachable naming the one that does not answer (lists are all or nothing; see
// api-public/runners_fanout.go), while requests it has no part in still succeed.
func testDatacenterDown(t *testing.T, bin string) {
	const timeout = time.Second
	c := newCluster(t, bin, timeout)
	w := seed(t, c, 20)
	c.start()
	a, b, cc := c.dcs[0], c.dcs[1], c.dcs[2]
	var notC []string
	for _, r := range w.runners {
		if r.dc != "c" && r.ns == "default" {
			notC = append(notC, "runner_id="+r.id.String())
		}
	}
	lists := []string{"/runners?namespace=default", "/runners?namespace=default&include_stopped=true&limit=1",
		"/runners/names?namespace=default", "/envoys?namespace=default&name=epool-1"}
	var before listPage
	c.getJSON(b, lists[0], &before) // every datacenter resolves "default" now

	expectUnreachable := func(from *dc, path, down string, within time.Duration) {
		t.Helper()
		start := time.Now()
		status, e := c.getError(from, path)
		if took := time.Since(start); took > within {
			t.Errorf("GET %s on %s with %s down: answered after %s", path, from.name, down, took)
		}
		if status != http.StatusBadGateway || e.Key() != "datacenter.unreachable" || e.Metadata["datacenter"] != down {
			t.Errorf("GET %s on %s with %s down: %d %s %v", path, from.name, down, status, e.Key(), e.Metadata)
		}
	}

	// c hangs (SIGSTOP): its part times out.
	c.hang(cc)
	for _, path := range lists {
		expectUnreachable(a, path, "c", timeout+5*time.Second)
	}
	expectUnreachable(b, lists[0], "c", timeout+5*time.Second)
	var page listPage
	c.getJSON(b, "/runners?namespace=default&limit=1000&"+strings.Join(notC, "&"), &page)
	if len(page.Runners) != len(notC)*4/5 { // every fifth runner is stopped
		t.Errorf("runners of a and b by id with c hung: %d, want %d", len(page.Runners), len(notC)*4/5)
	}
	var nss struct{ Namespaces []namespace.Namespace }
	c.getJSON(b, "/namespaces", &nss)
	if len(nss.Namespaces) != 2 {
		t.Errorf("namespaces with c hung: %+v", nss)
	}
	c.resume(cc)
	c.getJSON(a, lists[0], &page)
	if len(page.Runners) != len(before.Runners) {
		t.Errorf("after c resumed: %d runners, want %d", len(page.Runners), len(before.Runners))
	}

	// c is killed: its part fails at once (connection refused).
	cc.kill()
	for _, from := range []*dc{a, b} {
		for _, path := range lists {
			expectUnreachable(from, path, "c", timeout+5*time.Second)
		}
	}
	// The leader is killed too: namespace calls and lists name it.
	a.kill()
	expectUnreachable(b, "/namespaces", "a", timeout+5*time.Second)
	expectUnreachable(b, lists[0], "a", timeout+5*time.Second)
}
