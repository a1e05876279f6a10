package apipublic

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	apipeer "github.com/berthhq/berth/api-peer"
	"github.com/berthhq/berth/api-public/openapitest"
	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/engine/pegboard"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// newActorsCluster is newCluster with an actor lifecycle in every datacenter's api-peer and
// a config for the pool "pool" in each; c.pub is b's public API. No runner is connected:
// actors wait (pending) or, crash policy sleep, sleep with no_capacity.
func newActorsCluster(t *testing.T) *cluster {
	t.Helper()
	c := newCluster(t, 5*time.Second)
	leaderPeers := apihttp.NewPeerClient(apihttp.PeerOptions{Timeout: 5 * time.Second})
	t.Cleanup(leaderPeers.Close)
	for _, dc := range c.topo.Datacenters {
		db := c.dbs[dc.Name]
		if _, err := udb.Transact(bg, db, func(tx udb.Transaction) (keys.RunnerConfig, error) {
			return runnerconfig.Ensure(bg, tx, runnerconfig.EnsureInput{Namespace: c.nsID, Name: "pool"})
		}); err != nil {
			t.Fatal(err)
		}
		topo := c.topo
		topo.Local = dc.Label
		acts := pegboard.NewActors(pegboard.ActorsOptions{DB: db, Watchers: pegboard.NewWatchers(), Log: quiet, Config: actor.DefaultConfig(), Label: dc.Label, Datacenter: dc.Name})
		c.swap(dc.Name, apipeer.New(apipeer.Deps{DB: db, Topology: topo, Peers: leaderPeers, Log: quiet, Actors: acts}).Handler())
	}
	// b's own api-peer in process, as the engine wires it (whatever c.peers["b"] is now).
	local := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		h := c.peers["b"]
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	})
	peers := apihttp.NewPeerClient(apihttp.PeerOptions{Timeout: 5 * time.Second}).WithLocal(2, local)
	t.Cleanup(peers.Close)
	c.pub = openapitest.Handler(t, New(Deps{DB: c.dbs["b"], Topology: c.topo, Peers: peers, DatacenterTimeout: 5 * time.Second, Log: quiet}).Handler())
	return c
}

func actorBody(dc, name, key, policy string) string {
	b := `{"name":"` + name + `","runner_name_selector":"pool","crash_policy":"` + policy + `"`
	if dc != "" {
		b += `,"datacenter":"` + dc + `"`
	}
	if key != "" {
		b += `,"key":"` + key + `"`
	}
	return b + "}"
}

func (c *cluster) createActor(t *testing.T, dc, name, key string) actor.Actor {
	t.Helper()
	var out apitypes.ActorsCreateResponse
	decode(t, c.do(t, "POST", "/actors?namespace=default", actorBody(dc, name, key, "sleep")), &out)
	return out.Actor
}

// pageActors follows the cursor of GET /actors?query until the last page and returns every
// actor listed, checking the page size and the order.
func (c *cluster) pageActors(t *testing.T, query url.Values, limit int) []actor.Actor {
	t.Helper()
	q := url.Values{}
	for k, v := range query {
		q[k] = slices.Clone(v)
	}
	q.Set("namespace", "default")
	q.Set("limit", fmt.Sprint(limit))
	var all []actor.Actor
	for range 1000 {
		var page apitypes.ActorsListResponse
		decode(t, c.do(t, "GET", "/actors?"+q.Encode(), ""), &page)
		if len(page.Actors) > limit {
			t.Fatalf("page of %d, limit %d", len(page.Actors), limit)
		}
		all = append(all, page.Actors...)
		if page.Pagination.Cursor == nil {
			break
		}
		if len(page.Actors) == 0 {
			t.Fatal("an empty page with a cursor")
		}
		q.Set("cursor", *page.Pagination.Cursor)
	}
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if a.CreateTs < b.CreateTs || a.CreateTs == b.CreateTs && a.ActorID.Compare(b.ActorID) <= 0 {
			t.Fatalf("actors %d and %d out of order", i-1, i)
		}
	}
	return all
}

func idsOf(actors []actor.Actor) []id.ID {
	out := make([]id.ID, len(actors))
	for i, a := range actors {
		out[i] = a.ActorID
	}
	slices.SortFunc(out, func(a, b id.ID) int { return a.Compare(b) })
	return out
}

// TestActorsAcrossDatacenters: creates go to the datacenter named (else b, the local one);
// per-actor calls reach the id's datacenter; lists merge every datacenter exactly once.
func TestActorsAcrossDatacenters(t *testing.T) {
	c := newActorsCluster(t)
	var all []actor.Actor
	for i := range 12 {
		dc := []string{"a", "b", "c", ""}[i%4]
		a := c.createActor(t, dc, "counter", fmt.Sprint("k", i))
		want := map[string]string{"a": "a", "b": "b", "c": "c", "": "b"}[dc]
		if a.Datacenter != want || a.ActorID.Label() != map[string]uint16{"a": 1, "b": 2, "c": 3}[want] {
			t.Fatalf("created in %q: %+v", dc, a)
		}
		all = append(all, a)
	}
	c.createActor(t, "c", "c-only", "")

	for _, limit := range []int{1, 5, 100} {
		if got := c.pageActors(t, url.Values{"name": {"counter"}}, limit); !slices.Equal(idsOf(got), idsOf(all)) {
			t.Errorf("limit %d: %d actors, want %d", limit, len(got), len(all))
		}
	}
	// By ids across datacenters, with an id of no datacenter: each listed once.
	q := url.Values{"actor_ids": {all[0].ActorID.String() + "," + id.New(9).String()}}
	for _, a := range all[:7] {
		q.Add("actor_id", a.ActorID.String())
	}
	for _, limit := range []int{2, 100} {
		if got := c.pageActors(t, q, limit); !slices.Equal(idsOf(got), idsOf(all[:7])) {
			t.Errorf("by ids, limit %d: %d actors", limit, len(got))
		}
	}
	// By key: the holder, wherever it lives.
	got := c.pageActors(t, url.Values{"name": {"counter"}, "key": {"k2"}}, 10)
	if len(got) != 1 || got[0].ActorID != all[2].ActorID || got[0].Datacenter != "c" {
		t.Fatalf("by key: %+v", got)
	}

	// Per-actor calls are routed by the id's label: destroy an actor of a and one of c through
	// b's public API.
	for _, a := range []actor.Actor{all[0], all[2]} {
		for range 2 {
			if ans := c.do(t, "DELETE", "/actors/"+a.ActorID.String()+"?namespace=default", ""); ans.status != 200 || ans.body != "{}" {
				t.Fatalf("DELETE %s: %d %s", a.Datacenter, ans.status, ans.body)
			}
		}
	}
	got = c.pageActors(t, url.Values{"actor_id": {all[0].ActorID.String(), all[2].ActorID.String()}}, 10)
	if len(got) != 2 || got[0].DestroyTs == nil || got[1].DestroyTs == nil {
		t.Fatalf("after delete: %+v", got)
	}
	if got := c.pageActors(t, url.Values{"name": {"counter"}}, 100); len(got) != len(all)-2 {
		t.Fatalf("after delete: %d live", len(got))
	}
	if got := c.pageActors(t, url.Values{"name": {"counter"}, "include_destroyed": {"true"}}, 3); len(got) != len(all) {
		t.Fatalf("with destroyed: %d", len(got))
	}
	// Sleep and reschedule reach c.
	a := all[6]
	for _, what := range []string{"reschedule", "sleep"} {
		if ans := c.do(t, "POST", "/actors/"+a.ActorID.String()+"/"+what+"?namespace=default", "{}"); ans.status != 200 || ans.body != "{}" {
			t.Fatalf("%s: %d %s", what, ans.status, ans.body)
		}
	}
	got = c.pageActors(t, url.Values{"actor_id": {a.ActorID.String()}}, 10)
	if len(got) != 1 || got[0].SleepTs == nil || got[0].PendingAllocationTs != nil {
		t.Fatalf("after reschedule and sleep: %+v", got)
	}

	// Names: merged, sorted, each once, paged.
	var names []string
	cursor := ""
	for range 10 {
		target := "/actors/names?namespace=default&limit=1"
		if cursor != "" {
			target += "&cursor=" + url.QueryEscape(cursor)
		}
		var page apitypes.ActorsNamesResponse
		decode(t, c.do(t, "GET", target, ""), &page)
		for n, v := range page.Names {
			if string(v.Metadata) != "{}" {
				t.Fatalf("%s: metadata %s", n, v.Metadata)
			}
			names = append(names, n)
		}
		if page.Pagination.Cursor == nil {
			break
		}
		cursor = *page.Pagination.Cursor
	}
	if !slices.Equal(names, []string{"c-only", "counter"}) {
		t.Fatalf("names %v", names)
	}
}

func TestActorsPublicErrors(t *testing.T) {
	c := newActorsCluster(t)
	a := c.createActor(t, "a", "counter", "k")
	tests := []struct {
		method, target, body string
		status               int
		key, field           string
		meta                 map[string]any
	}{
		{"POST", "/actors?namespace=default", actorBody("nowhere", "n", "", "sleep"), 404, "datacenter.not_found", "", map[string]any{"datacenter": "nowhere"}},
		{"PUT", "/actors?namespace=default", actorBody("nowhere", "n", "k", "sleep"), 404, "datacenter.not_found", "", nil},
		{"POST", "/actors?namespace=default", `{"name":"n","input":"%%%","runner_name_selector":"pool","crash_policy":"sleep"}`, 400, "api.bad_request", "input", nil},
		{"POST", "/actors?namespace=default", actorBody("a", "counter", "k", "sleep"), 409, "actor.duplicate_key", "", map[string]any{"existing_actor_id": a.ActorID.String()}},
		{"POST", "/actors?namespace=nope", actorBody("c", "n", "", "sleep"), 404, "namespace.not_found", "", nil},
		{"DELETE", "/actors/nope?namespace=default", "", 400, "api.bad_request", "actor_id", nil},
		{"DELETE", "/actors/" + id.New(9).String() + "?namespace=default", "", 404, "actor.not_found", "", nil},
		{"DELETE", "/actors/" + id.New(3).String() + "?namespace=default", "", 404, "actor.not_found", "", nil},
		{"POST", "/actors/" + id.New(9).String() + "/sleep?namespace=default", "{}", 404, "actor.not_found", "", nil},
		{"POST", "/actors/nope/reschedule?namespace=default", "{}", 400, "api.bad_request", "actor_id", nil},
		{"GET", "/actors?namespace=default&actor_id=nope", "", 400, "api.bad_request", "actor_id", nil},
		{"GET", "/actors?namespace=default", "", 400, "validation.invalid_input", "", nil},
		{"GET", "/actors?namespace=default&name=counter&cursor=zz", "", 400, "api.bad_request", "cursor", nil},
		{"GET", "/actors?namespace=nope&name=counter", "", 404, "namespace.not_found", "", nil},
	}
	for _, tt := range tests {
		ans := c.do(t, tt.method, tt.target, tt.body)
		e := parseErr(t, ans)
		field, _ := e.Metadata["field"].(string)
		if ans.status != tt.status || e.Key() != tt.key || field != tt.field {
			t.Errorf("%s %s %s: %d %s (field %q), want %d %s (field %q)", tt.method, tt.target, tt.body, ans.status, e.Key(), field, tt.status, tt.key, tt.field)
		}
		for k, v := range tt.meta {
			if e.Metadata[k] != v {
				t.Errorf("%s %s: metadata %v, want %s=%v", tt.method, tt.target, e.Metadata, k, v)
			}
		}
	}
}

// TestActorsGetOrCreateOneKey: concurrent PUTs with one key, through the public API, create
// exactly one actor in the datacenter named.
func TestActorsGetOrCreateOneKey(t *testing.T) {
	c := newActorsCluster(t)
	const n = 12
	outs := make([]apitypes.ActorsGetOrCreateResponse, n)
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			answers[i] = c.do(t, "PUT", "/actors?namespace=default", actorBody("c", "room", "lobby", "sleep"))
		})
	}
	wg.Wait()
	created := 0
	for i := range n {
		decode(t, answers[i], &outs[i])
		if outs[i].Created {
			created++
		}
		if outs[i].Actor.ActorID != outs[0].Actor.ActorID || outs[i].Actor.Datacenter != "c" {
			t.Fatalf("answer %d: %+v, answer 0: %+v", i, outs[i].Actor, outs[0].Actor)
		}
	}
	if created != 1 {
		t.Fatalf("%d created", created)
	}
}
