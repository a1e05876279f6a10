package apipeer

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// seedRunners registers n runners of namespace ns named pool-<i%names>, all at nowMs, with ids
// labelled label, and stops every stopEvery-th (0: none). It returns their ids in
// registration order.
func seedRunners(t *testing.T, db udb.Database, ns id.ID, label uint16, n, names, stopEvery int, nowMs int64) []id.ID {
	t.Helper()
	var ids []id.ID
	err := udb.Update(bg, db, func(tx udb.Transaction) error {
		ids = ids[:0]
		for i := range n {
			out, err := runner.Register(bg, tx, runner.RegisterInput{
				Namespace: ns, Name: fmt.Sprintf("pool-%d", i%names), Key: fmt.Sprintf("key-%d-%d", nowMs, i),
				Version: 1, TotalSlots: 4, ProtocolVersion: 7, ConnID: id.New(label), NewRunnerID: id.New(label), NowMs: nowMs,
			})
			if err != nil {
				return err
			}
			ids = append(ids, out.RunnerID)
			if stopEvery > 0 && i%stopEvery == 0 {
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
	return ids
}

// pageRunners follows the cursor of GET /runners?query until the last page and returns every
// runner listed, in order, failing on a page larger than limit or a non-null cursor on the
// last one.
func pageRunners(t *testing.T, p *peer, query url.Values, limit int) []runner.Runner {
	t.Helper()
	var all []runner.Runner
	q := maps(query)
	q.Set("limit", fmt.Sprint(limit))
	for range 10_000 {
		var page apitypes.RunnersListResponse
		decode(t, do(t, p.h, "GET", "/runners?"+q.Encode(), "", false), &page)
		if len(page.Runners) > limit {
			t.Fatalf("page of %d, limit %d", len(page.Runners), limit)
		}
		all = append(all, page.Runners...)
		if page.Pagination.Cursor == nil {
			return all
		}
		if len(page.Runners) == 0 {
			t.Fatal("an empty page with a cursor")
		}
		q.Set("cursor", *page.Pagination.Cursor)
	}
	t.Fatal("paging does not end")
	return nil
}

func maps(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

// checkOrder fails unless runners are in (create_ts, id) descending order, without repeats.
func checkOrder(t *testing.T, runners []runner.Runner) {
	t.Helper()
	for i := 1; i < len(runners); i++ {
		a, b := runners[i-1], runners[i]
		if a.CreateTs < b.CreateTs || a.CreateTs == b.CreateTs && a.RunnerID.Compare(b.RunnerID) <= 0 {
			t.Fatalf("runners %d and %d out of order: (%d, %s) then (%d, %s)", i-1, i, a.CreateTs, a.RunnerID, b.CreateTs, b.RunnerID)
		}
	}
}

func TestRunnersList(t *testing.T) {
	p := newPeer(t, twoDCs(1), nil)
	ids := seedRunners(t, p.db, p.defNsID, 1, 250, 3, 5, 1_700_000_000_000) // one millisecond
	seedRunners(t, p.db, p.defNsID, 1, 20, 2, 0, 1_700_000_000_500)
	stopped := map[id.ID]bool{}
	for i, rid := range ids {
		if i%5 == 0 {
			stopped[rid] = true
		}
	}

	tests := []struct {
		query string
		want  int
	}{
		{"namespace=default", 270 - 50},
		{"namespace=default&include_stopped=true", 270},
		{"namespace=default&name=pool-1", 83 - 16 + 10},
		{"namespace=default&name=pool-1&include_stopped=true", 83 + 10},
		{"namespace=default&name=pool-2", 83 - 17},
	}
	for _, tt := range tests {
		q, _ := url.ParseQuery(tt.query)
		for _, limit := range []int{1, 7, 100, 1000} {
			got := pageRunners(t, p, q, limit)
			if len(got) != tt.want {
				t.Errorf("%s limit %d: %d runners, want %d", tt.query, limit, len(got), tt.want)
			}
			checkOrder(t, got)
			for _, r := range got {
				if r.Datacenter != "a" || r.NamespaceID != p.defNsID {
					t.Fatalf("%+v", r)
				}
				if q.Get("include_stopped") != "true" && r.StopTs != nil {
					t.Fatalf("%s: stopped runner %s listed", tt.query, r.RunnerID)
				}
				if name := q.Get("name"); name != "" && r.Name != name {
					t.Fatalf("%s: runner of %s listed", tt.query, r.Name)
				}
			}
		}
	}

	// By ids, repeated, comma-separated and both; unknown ids are left out.
	pick := []id.ID{ids[0], ids[1], ids[2], ids[3], id.New(1)}
	var csv []string
	q := url.Values{"namespace": {"default"}, "include_stopped": {"true"}}
	for i, rid := range pick {
		if i%2 == 0 {
			q.Add("runner_id", rid.String())
		} else {
			csv = append(csv, rid.String())
		}
	}
	q.Set("runner_ids", strings.Join(csv, ","))
	for _, limit := range []int{1, 3, 100} {
		got := pageRunners(t, p, q, limit)
		checkOrder(t, got)
		if len(got) != 4 {
			t.Errorf("by ids, limit %d: %d runners, want 4", limit, len(got))
		}
	}
	q.Del("include_stopped")
	if got := pageRunners(t, p, q, 100); len(got) != 3 || slices.ContainsFunc(got, func(r runner.Runner) bool { return r.RunnerID == ids[0] }) {
		t.Errorf("by ids without stopped ones: %d runners", len(got))
	}

	// The Rivet engine's bare create_ts cursor: runners created strictly before.
	var legacy apitypes.RunnersListResponse
	decode(t, do(t, p.h, "GET", "/runners?namespace=default&include_stopped=true&limit=1000&cursor=1700000000500", "", false), &legacy)
	if len(legacy.Runners) != 250 || legacy.Pagination.Cursor == nil {
		t.Errorf("legacy cursor: %d runners, cursor %v", len(legacy.Runners), legacy.Pagination.Cursor)
	}
	// An empty cursor is the first page.
	var first apitypes.RunnersListResponse
	decode(t, do(t, p.h, "GET", "/runners?namespace=default&limit=5&cursor=", "", false), &first)
	if len(first.Runners) != 5 || first.Runners[0].CreateTs != 1_700_000_000_500 {
		t.Errorf("empty cursor: %+v", first.Runners)
	}
}

func TestRunnersErrors(t *testing.T) {
	p := newPeer(t, twoDCs(1), nil)
	const both = ""
	tests := []struct {
		path, query string // path "" is both /runners and /runners/names
		status      int
		key, field  string
		unchecked   bool // a request the contract rejects
	}{
		{both, "", 400, "api.bad_request", "namespace", true},
		{both, "namespace=", 400, "api.bad_request", "namespace", true},
		{both, "namespace=nope", 404, "namespace.not_found", "", false},
		{both, "namespace=default&namespace=default", 400, "api.bad_request", "namespace", true},
		{both, "namespace=default&bogus=1", 400, "api.bad_request", "bogus", true},
		{both, "namespace=default&limit=-1", 400, "api.bad_request", "limit", true},
		{both, "namespace=default&limit=x", 400, "api.bad_request", "limit", true},
		{"/runners", "namespace=default&runner_id=xyz", 400, "api.bad_request", "runner_id", true},
		{"/runners", "namespace=default&runner_ids=" + id.New(1).String() + ",xyz", 400, "api.bad_request", "runner_ids", true},
		{"/runners", "namespace=default&include_stopped=yes", 400, "api.bad_request", "include_stopped", true},
		{"/runners", "namespace=default&cursor=!!", 400, "api.bad_request", "cursor", false},
		{"/runners", "namespace=default&name=", 400, "api.bad_request", "name", false},
		{"/runners/names", "namespace=default&runner_id=" + id.New(1).String(), 400, "api.bad_request", "runner_id", true},
	}
	for _, tt := range tests {
		paths := []string{tt.path}
		if tt.path == both {
			paths = []string{"/runners", "/runners/names"}
		}
		for _, path := range paths {
			a := do(t, p.h, "GET", path+"?"+tt.query, "", tt.unchecked)
			key, field := errKey(t, a)
			if a.status != tt.status || key != tt.key || field != tt.field {
				t.Errorf("GET %s?%s: %d %s (field %q), want %d %s (field %q)", path, tt.query, a.status, key, field, tt.status, tt.key, tt.field)
			}
		}
	}
}

func TestRunnerNames(t *testing.T) {
	p := newPeer(t, twoDCs(1), nil)
	seedRunners(t, p.db, p.defNsID, 1, 60, 23, 2, 1_700_000_000_000)
	var want []string
	for i := range 23 {
		want = append(want, fmt.Sprintf("pool-%d", i))
	}
	slices.Sort(want)
	for _, limit := range []int{1, 7, 23, 100} {
		var got []string
		q := url.Values{"namespace": {"default"}, "limit": {fmt.Sprint(limit)}}
		for range 100 {
			var page apitypes.RunnersNamesResponse
			decode(t, do(t, p.h, "GET", "/runners/names?"+q.Encode(), "", false), &page)
			got = append(got, page.Names...)
			if page.Pagination.Cursor == nil {
				break
			}
			q.Set("cursor", *page.Pagination.Cursor)
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: %v", limit, got)
		}
	}
}

// TestFollowerResolvesAtLeader: a datacenter that is not the leader lists its own runners
// under the namespace id the leader gave, asks the leader once per name, and names the
// leader when it cannot reach it.
func TestFollowerResolvesAtLeader(t *testing.T) {
	leader := newPeer(t, twoDCs(1), nil)
	var leaderCalls int
	leaderSrv := httptest.NewServer(countCalls(&leaderCalls, leader.h))
	topo := twoDCs(2)
	topo.Datacenters[0].PeerURL = leaderSrv.URL
	peers := apihttp.NewPeerClient(apihttp.PeerOptions{Timeout: 2 * time.Second})
	defer peers.Close()
	follower := newPeer(t, topo, peers)
	ids := seedRunners(t, follower.db, leader.defNsID, 2, 30, 2, 0, 1_700_000_000_000)

	got := pageRunners(t, follower, url.Values{"namespace": {"default"}}, 7)
	if len(got) != 30 || got[0].Datacenter != "b" || got[0].RunnerID.Label() != 2 {
		t.Fatalf("follower list: %d runners, first %+v", len(got), got[0])
	}
	checkOrder(t, got)
	if !slices.ContainsFunc(got, func(r runner.Runner) bool { return r.RunnerID == ids[0] }) {
		t.Error("a seeded runner is missing")
	}
	if leaderCalls != 1 {
		t.Errorf("the leader was asked %d times, want once (the name is cached)", leaderCalls)
	}

	a := do(t, follower.h, "GET", "/runners?namespace=nope", "", false)
	if key, _ := errKey(t, a); a.status != 404 || key != "namespace.not_found" {
		t.Errorf("unknown namespace: %d %s", a.status, a.body)
	}

	// The leader goes away: the cached name still resolves; a new one names the leader.
	leaderSrv.Close()
	var names apitypes.RunnersNamesResponse
	decode(t, do(t, follower.h, "GET", "/runners/names?namespace=default", "", false), &names)
	if len(names.Names) != 2 {
		t.Errorf("names with the leader gone: %v", names.Names)
	}
	a = do(t, follower.h, "GET", "/runners?namespace=other", "", false)
	if e, ok := parseErr(a); !ok || a.status != 502 || e.Key() != "datacenter.unreachable" || e.Metadata["datacenter"] != "a" {
		t.Errorf("leader gone: %d %s", a.status, a.body)
	}
}

// countCalls counts the requests h serves (one at a time in these tests).
func countCalls(n *int, h http.Handler) http.Handler {
	var mu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		*n++
		mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func parseErr(a answer) (*rerr.Error, bool) {
	e, err := rerr.Parse(a.status, []byte(a.body))
	return e, err == nil
}
