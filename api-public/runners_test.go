package apipublic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apipeer "github.com/berthhq/berth/api-peer"
	"github.com/berthhq/berth/api-public/openapitest"
	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded" // mem://
)

// hangMargin is how much later than the datacenter timeout a request that
// met a hung or dead datacenter may answer and still count as not hanging:
// generous, so a loaded CI machine does not fail it, yet far below the peer
// client's own timeout, so a real hang does.
const hangMargin = 5 * time.Second

var (
	bg    = context.Background()
	quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
)

// cluster is three datacenters, a (label 1, the leader), b (2) and c (3), each an api-peer
// over its own in-memory store behind an HTTP server, and the public API of b, checked
// against openapi.yaml. A test can swap a datacenter's api-peer for another handler.
type cluster struct {
	topo  apihttp.Topology
	dbs   map[string]udb.Database
	nsID  id.ID // "default", created in a's store
	token string
	pub   http.Handler
	// pubPeer is b's public API without a store: its own part of a list comes from b's
	// api-peer in process, through the peer client.
	pubPeer http.Handler
	mu      sync.Mutex
	peers   map[string]http.Handler // what each datacenter's server serves
	srvs    map[string]*httptest.Server
}

func newCluster(t *testing.T, dcTimeout time.Duration) *cluster {
	t.Helper()
	return newClusterWithToken(t, dcTimeout, "")
}

// newClusterWithToken is newCluster with the admin token set in every datacenter; c.do
// sends it.
func newClusterWithToken(t *testing.T, dcTimeout time.Duration, token string) *cluster {
	t.Helper()
	c := &cluster{dbs: map[string]udb.Database{}, peers: map[string]http.Handler{}, srvs: map[string]*httptest.Server{}, token: token}
	c.topo = apihttp.Topology{Local: 2}
	for i, name := range []string{"a", "b", "c"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c.mu.Lock()
			h := c.peers[name]
			c.mu.Unlock()
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		c.srvs[name] = srv
		c.topo.Datacenters = append(c.topo.Datacenters, apihttp.Datacenter{
			Name: name, Label: uint16(i + 1), IsLeader: name == "a", PublicURL: "http://" + name + ".example", PeerURL: srv.URL,
		})
	}
	leaderPeers := apihttp.NewPeerClient(apihttp.PeerOptions{Timeout: dcTimeout})
	t.Cleanup(leaderPeers.Close)
	for _, dc := range c.topo.Datacenters {
		db, err := udb.Open(bg, "mem://")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		c.dbs[dc.Name] = db
		topo := c.topo
		topo.Local = dc.Label
		c.peers[dc.Name] = apipeer.New(apipeer.Deps{DB: db, Topology: topo, Peers: leaderPeers, Auth: auth.Admin(token), Log: quiet}).Handler()
	}
	v, err := udb.Transact(bg, c.dbs["a"], func(tx udb.Transaction) (namespace.EnsureDefaultOutput, error) {
		return namespace.EnsureDefault(bg, tx, namespace.EnsureDefaultInput{NamespaceID: id.New(1), NowMs: 1000})
	})
	if err != nil {
		t.Fatal(err)
	}
	c.nsID = v.Namespace.NamespaceID
	peers := apihttp.NewPeerClient(apihttp.PeerOptions{Timeout: dcTimeout}).WithLocal(2, c.peers["b"])
	t.Cleanup(peers.Close)
	// As the engine does, b's public API has b's store, and serves b's part of a runner list
	// from it; pubPeer has none and asks b's api-peer in process for everything.
	topoB := c.topo
	topoB.Local = 2
	localB := apipeer.New(apipeer.Deps{DB: c.dbs["b"], Topology: topoB, Peers: leaderPeers, Log: quiet})
	c.pub = openapitest.Handler(t, New(Deps{DB: c.dbs["b"], Topology: c.topo, Peers: peers, DatacenterTimeout: dcTimeout, Auth: auth.Admin(token), Log: quiet, Local: localB}).Handler())
	c.pubPeer = openapitest.Handler(t, New(Deps{Topology: c.topo, Peers: peers, DatacenterTimeout: dcTimeout, Auth: auth.Admin(token), Log: quiet}).Handler())
	return c
}

// swap makes datacenter name serve h.
func (c *cluster) swap(name string, h http.Handler) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.peers[name] = h
}

type answer struct {
	status int
	body   string
}

func (c *cluster) do(t *testing.T, method, target, body string) answer {
	t.Helper()
	return c.doWith(t, c.pub, method, target, body)
}

// doWith sends the request to h, one of c's public APIs.
func (c *cluster) doWith(t *testing.T, h http.Handler, method, target, body string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return answer{w.Code, strings.TrimSpace(w.Body.String())}
}

func decode(t *testing.T, a answer, out any) {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	if err := json.Unmarshal([]byte(a.body), out); err != nil {
		t.Fatalf("decoding %s: %v", a.body, err)
	}
}

func parseErr(t *testing.T, a answer) *rerr.Error {
	t.Helper()
	e, err := rerr.Parse(a.status, []byte(a.body))
	if err != nil {
		t.Fatalf("not an error answer: %d %s", a.status, a.body)
	}
	return e
}

// seedRunners registers n runners in datacenter dc's store, all at nowMs, named
// pool-<i%names> (and <dc>-only for every fourth), and stops every fifth.
func (c *cluster) seedRunners(t *testing.T, dc string, n, names int, nowMs int64) {
	t.Helper()
	label := uint16(0)
	for _, d := range c.topo.Datacenters {
		if d.Name == dc {
			label = d.Label
		}
	}
	err := udb.Update(bg, c.dbs[dc], func(tx udb.Transaction) error {
		for i := range n {
			name := fmt.Sprintf("pool-%d", i%names)
			if i%4 == 0 {
				name = dc + "-only"
			}
			out, err := runner.Register(bg, tx, runner.RegisterInput{
				Namespace: c.nsID, Name: name, Key: fmt.Sprintf("%d-%d", nowMs, i), Version: 1, TotalSlots: 2,
				ProtocolVersion: 7, ConnID: id.New(label), NewRunnerID: id.New(label), NowMs: nowMs,
			})
			if err != nil {
				return err
			}
			if i%5 == 0 {
				if _, err := runner.Stop(bg, tx, runner.StopInput{RunnerID: out.RunnerID, NowMs: nowMs + 1}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pageRunners follows the cursors of GET /runners?query with page size limit and returns
// every runner listed; it fails on a page over limit, an empty page with a cursor, a runner
// listed twice or out of (create_ts, id) descending order.
func (c *cluster) pageRunners(t *testing.T, query url.Values, limit int) []runner.Runner {
	t.Helper()
	q := url.Values{}
	for k, v := range query {
		q[k] = slices.Clone(v)
	}
	q.Set("limit", fmt.Sprint(limit))
	var all []runner.Runner
	seen := map[id.ID]bool{}
	for range 10_000 {
		var page apitypes.RunnersListResponse
		decode(t, c.do(t, "GET", "/runners?"+q.Encode(), ""), &page)
		if len(page.Runners) > limit || len(page.Runners) == 0 && page.Pagination.Cursor != nil {
			t.Fatalf("%s: page of %d (limit %d), cursor %v", q.Encode(), len(page.Runners), limit, page.Pagination.Cursor)
		}
		for _, r := range page.Runners {
			if seen[r.RunnerID] {
				t.Fatalf("%s: runner %s listed twice", q.Encode(), r.RunnerID)
			}
			seen[r.RunnerID] = true
			if n := len(all); n > 0 {
				p := all[n-1]
				if p.CreateTs < r.CreateTs || p.CreateTs == r.CreateTs && p.RunnerID.Compare(r.RunnerID) < 0 {
					t.Fatalf("%s: out of order: (%d, %s) then (%d, %s)", q.Encode(), p.CreateTs, p.RunnerID, r.CreateTs, r.RunnerID)
				}
			}
			all = append(all, r)
		}
		if page.Pagination.Cursor == nil {
			return all
		}
		q.Set("cursor", *page.Pagination.Cursor)
	}
	t.Fatal("paging does not end")
	return nil
}

// want lists, from every store, the runners a filter selects.
func (c *cluster) want(t *testing.T, match func(runner.Runner) bool) map[id.ID]bool {
	t.Helper()
	out := map[id.ID]bool{}
	for _, dc := range c.topo.Datacenters {
		v, err := udb.ReadTransact(bg, c.dbs[dc.Name], func(r udb.ReadTransaction) (runner.ListForNsOutput, error) {
			return runner.ListForNs(bg, r, runner.ListForNsInput{Namespace: c.nsID, IncludeStopped: true, Limit: runner.MaxListLimit, Datacenter: dc.Name})
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range v.Runners {
			if match(r) {
				out[r.RunnerID] = true
			}
		}
	}
	return out
}

func TestRunnersFanOut(t *testing.T) {
	c := newCluster(t, 5*time.Second)
	for _, dc := range []string{"a", "b", "c"} {
		c.seedRunners(t, dc, 120, 3, 1_700_000_000_000) // one millisecond in every datacenter
		c.seedRunners(t, dc, 15, 2, 1_700_000_000_007)
	}
	active := func(r runner.Runner) bool { return r.StopTs == nil }
	tests := []struct {
		query string
		match func(runner.Runner) bool
	}{
		{"namespace=default", active},
		{"namespace=default&include_stopped=true", func(runner.Runner) bool { return true }},
		{"namespace=default&name=pool-1", func(r runner.Runner) bool { return active(r) && r.Name == "pool-1" }},
		{"namespace=default&name=pool-2&include_stopped=true", func(r runner.Runner) bool { return r.Name == "pool-2" }},
		{"namespace=default&name=c-only", func(r runner.Runner) bool { return active(r) && r.Name == "c-only" }},
		{"namespace=default&name=nobody", func(runner.Runner) bool { return false }},
	}
	for _, tt := range tests {
		want := c.want(t, tt.match)
		q, _ := url.ParseQuery(tt.query)
		for _, limit := range []int{1, 7, 100, 1000} {
			got := c.pageRunners(t, q, limit)
			if len(got) != len(want) {
				t.Errorf("%s limit %d: %d runners, want %d", tt.query, limit, len(got), len(want))
			}
			for _, r := range got {
				if !want[r.RunnerID] {
					t.Fatalf("%s: runner %+v not selected", tt.query, r)
				}
				if r.Datacenter != string(rune('a'+r.RunnerID.Label()-1)) {
					t.Fatalf("runner %s of label %d reported in datacenter %q", r.RunnerID, r.RunnerID.Label(), r.Datacenter)
				}
			}
		}
	}

	// By ids from every datacenter, plus one from a label outside the topology.
	all := c.pageRunners(t, url.Values{"namespace": {"default"}, "include_stopped": {"true"}}, 1000)
	q := url.Values{"namespace": {"default"}, "include_stopped": {"true"}}
	want := map[id.ID]bool{}
	var csv []string
	for i := 0; i < len(all); i += 37 {
		want[all[i].RunnerID] = true
		if i%2 == 0 {
			q.Add("runner_id", all[i].RunnerID.String())
		} else {
			csv = append(csv, all[i].RunnerID.String())
		}
	}
	q.Set("runner_ids", strings.Join(append(csv, id.New(9).String()), ","))
	for _, limit := range []int{1, 3, 100} {
		got := c.pageRunners(t, q, limit)
		if len(got) != len(want) {
			t.Errorf("by %d ids, limit %d: %d runners", len(want), limit, len(got))
		}
		for _, r := range got {
			if !want[r.RunnerID] {
				t.Errorf("by ids: %s not asked for", r.RunnerID)
			}
		}
	}
	var none apitypes.RunnersListResponse
	decode(t, c.do(t, "GET", "/runners?namespace=default&runner_id="+id.New(9).String(), ""), &none)
	if none.Runners == nil || len(none.Runners) != 0 || none.Pagination.Cursor != nil {
		t.Errorf("an id of no datacenter: %+v", none)
	}

	// The Rivet engine's bare create_ts cursor: everything created strictly before.
	var legacy apitypes.RunnersListResponse
	decode(t, c.do(t, "GET", "/runners?namespace=default&include_stopped=true&limit=1000&cursor=1700000000007", ""), &legacy)
	if len(legacy.Runners) != 360 || legacy.Pagination.Cursor == nil {
		t.Errorf("legacy cursor: %d runners, cursor %v", len(legacy.Runners), legacy.Pagination.Cursor)
	}
}

func TestRunnerNamesFanOut(t *testing.T) {
	c := newCluster(t, 5*time.Second)
	c.seedRunners(t, "a", 40, 7, 1_700_000_000_000)
	c.seedRunners(t, "b", 40, 3, 1_700_000_000_000)
	c.seedRunners(t, "c", 40, 9, 1_700_000_000_000)
	want := []string{"a-only", "b-only", "c-only"}
	for i := range 9 {
		want = append(want, fmt.Sprintf("pool-%d", i))
	}
	slices.Sort(want)
	for _, limit := range []int{1, 2, 7, 12, 100} {
		var got []string
		q := url.Values{"namespace": {"default"}, "limit": {fmt.Sprint(limit)}}
		for range 100 {
			var page apitypes.RunnersNamesResponse
			decode(t, c.do(t, "GET", "/runners/names?"+q.Encode(), ""), &page)
			if len(page.Names) > limit {
				t.Fatalf("limit %d: page of %d", limit, len(page.Names))
			}
			got = append(got, page.Names...)
			if page.Pagination.Cursor == nil {
				break
			}
			q.Set("cursor", *page.Pagination.Cursor)
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: %v\nwant %v", limit, got, want)
		}
	}
}

// TestListsWhenADatacenterFails: a datacenter that refuses connections or does not answer
// fails the list promptly with datacenter.unreachable naming it; requests it has no part in
// still succeed, and a wrong request is still reported as such.
func TestListsWhenADatacenterFails(t *testing.T) {
	const timeout = 300 * time.Millisecond
	c := newCluster(t, timeout)
	c.seedRunners(t, "a", 10, 2, 1_700_000_000_000)
	c.seedRunners(t, "b", 10, 2, 1_700_000_000_000)
	c.seedRunners(t, "c", 10, 2, 1_700_000_000_000)
	ids := c.pageRunners(t, url.Values{"namespace": {"default"}}, 100)

	release := make(chan struct{})
	defer close(release)
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	for _, mode := range []string{"hung", "down"} {
		if mode == "hung" {
			c.swap("c", hang)
		} else {
			c.srvs["c"].Close()
		}
		for _, path := range []string{"/runners?namespace=default", "/runners/names?namespace=default", "/runners?namespace=default&limit=1&include_stopped=true", "/envoys?namespace=default&name=p"} {
			start := time.Now()
			a := c.do(t, "GET", path, "")
			took := time.Since(start)
			e := parseErr(t, a)
			if a.status != 502 || e.Key() != "datacenter.unreachable" || e.Metadata["datacenter"] != "c" {
				t.Errorf("%s, c %s: %d %s", path, mode, a.status, a.body)
			}
			if took > timeout+hangMargin {
				t.Errorf("%s, c %s: answered after %s, timeout %s", path, mode, took, timeout)
			}
		}
		// Runners of a and b only: c is not asked.
		var picked []string
		for _, r := range ids {
			if r.RunnerID.Label() != 3 {
				picked = append(picked, "runner_id="+r.RunnerID.String())
			}
		}
		var page apitypes.RunnersListResponse
		decode(t, c.do(t, "GET", "/runners?namespace=default&"+strings.Join(picked, "&"), ""), &page)
		if len(page.Runners) != len(picked) {
			t.Errorf("c %s, by ids of a and b: %d runners, want %d", mode, len(page.Runners), len(picked))
		}
		// The namespace does not exist: a and b say so, and that is the answer.
		a := c.do(t, "GET", "/runners?namespace=nope", "")
		if e := parseErr(t, a); a.status != 404 || e.Key() != "namespace.not_found" {
			t.Errorf("c %s, unknown namespace: %d %s", mode, a.status, a.body)
		}
	}
}

func TestRunnersBadRequests(t *testing.T) {
	c := newCluster(t, 5*time.Second)
	// Refused here, before any datacenter is asked: a's api-peer would fail the test.
	c.swap("a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("datacenter a asked %s", r.URL)
	}))
	for _, tc := range []struct{ target, field string }{
		{"/runners", "namespace"},
		{"/runners?namespace=default&runner_id=bad", "runner_id"},
		{"/runners?namespace=default&runner_ids=bad", "runner_ids"},
		{"/runners?namespace=default&limit=-1", "limit"},
		{"/runners?namespace=default&limit=1e3", "limit"},
		{"/runners?namespace=default&include_stopped=1", "include_stopped"},
		{"/runners?namespace=default&name=", "name"},
		{"/runners?namespace=default&x=1", "x"},
		{"/runners/names?namespace=default&name=x", "name"},
		{"/runners/names?namespace=default&limit=-1", "limit"},
	} {
		req := openapitest.Unchecked(httptest.NewRequest("GET", tc.target, nil))
		if tc.field == "name" && strings.HasPrefix(tc.target, "/runners?") {
			req = httptest.NewRequest("GET", tc.target, nil) // the contract allows an empty name
		}
		w := httptest.NewRecorder()
		c.pub.ServeHTTP(w, req)
		a := answer{w.Code, w.Body.String()}
		if e := parseErr(t, a); a.status != 400 || e.Key() != "api.bad_request" || e.Metadata["field"] != tc.field {
			t.Errorf("%s: %d %s, want 400 naming %s", tc.target, a.status, a.body, tc.field)
		}
	}
}

// TestRunnersLocalMatchesPeer: b's public API serves b's part of GET /runners from its store
// (c.pub) with the very answers it gives when it asks b's api-peer in process (c.pubPeer):
// same status and bytes, for every filter, page, cursor and error.
func TestRunnersLocalMatchesPeer(t *testing.T) {
	c := newCluster(t, 5*time.Second)
	for _, dc := range []string{"a", "b", "c"} {
		c.seedRunners(t, dc, 60, 3, 1_700_000_000_000)
		c.seedRunners(t, dc, 9, 2, 1_700_000_000_007)
	}
	all := c.pageRunners(t, url.Values{"namespace": {"default"}, "include_stopped": {"true"}}, 1000)
	var ofB, mixed []string
	for i, r := range all {
		if r.RunnerID.Label() == 2 && i%3 == 0 {
			ofB = append(ofB, "runner_id="+r.RunnerID.String())
		}
		if i%11 == 0 {
			mixed = append(mixed, r.RunnerID.String())
		}
	}
	queries := []string{
		"namespace=default",
		"namespace=default&include_stopped=true&limit=1000",
		"namespace=default&name=pool-1&limit=7",
		"namespace=default&name=b-only&include_stopped=true",
		"namespace=default&name=nobody",
		"namespace=default&" + strings.Join(ofB, "&"),
		"namespace=default&include_stopped=true&limit=2&runner_ids=" + strings.Join(mixed, ","),
		"namespace=default&include_stopped=true&cursor=1700000000007",
		"namespace=default&cursor=not-a-cursor",
		"namespace=nope",
	}
	for _, q := range queries {
		for page := 0; page < 100; page++ { // follow the cursors
			target := "/runners?" + q
			got, want := c.do(t, "GET", target, ""), c.doWith(t, c.pubPeer, "GET", target, "")
			if got != want {
				t.Fatalf("GET %s:\nfrom the store: %d %s\n  from api-peer: %d %s", target, got.status, got.body, want.status, want.body)
			}
			var p apitypes.RunnersListResponse
			if got.status != http.StatusOK || json.Unmarshal([]byte(got.body), &p) != nil || p.Pagination.Cursor == nil {
				break
			}
			v, _ := url.ParseQuery(q)
			v.Set("cursor", *p.Pagination.Cursor)
			q = v.Encode()
		}
	}

	// c.pub does not ask b's api-peer for b's part.
	peers := apihttp.NewPeerClient(apihttp.PeerOptions{Timeout: 5 * time.Second}).WithLocal(2,
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t.Errorf("b's api-peer asked %s", r.URL)
			http.Error(w, "no", http.StatusTeapot)
		}))
	defer peers.Close()
	topoB := c.topo
	topoB.Local = 2
	local := apipeer.New(apipeer.Deps{DB: c.dbs["b"], Topology: topoB, Peers: peers, Log: quiet})
	pub := New(Deps{DB: c.dbs["b"], Topology: c.topo, Peers: peers, DatacenterTimeout: 5 * time.Second, Log: quiet, Local: local}).Handler()
	target := "/runners?namespace=default&include_stopped=true&limit=50"
	if got, want := c.doWith(t, pub, "GET", target, ""), c.do(t, "GET", target, ""); got != want || got.status != http.StatusOK {
		t.Errorf("GET %s without b's api-peer: %d %.200s\nwant %d %.200s", target, got.status, got.body, want.status, want.body)
	}
}
