package apipeer

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/api-public/openapitest"
	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/engine/pegboard"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// newActorsPeer is the leader's api-peer ("a", label 1) with an actor lifecycle and a config
// for the pool "pool" in the default namespace. No runner is connected: actors wait
// (pending) or, crash policy sleep, sleep with no_capacity.
func newActorsPeer(t *testing.T) *peer {
	t.Helper()
	p := newPeer(t, twoDCs(1), nil)
	p.ensurePool(t, p.defNsID, "pool")
	p.srv.deps.Actors = pegboard.NewActors(pegboard.ActorsOptions{
		DB: p.db, Watchers: pegboard.NewWatchers(), Log: quiet, Config: actor.DefaultConfig(), Label: 1, Datacenter: "a",
	})
	p.h = openapitest.Handler(t, p.srv.Handler())
	return p
}

func (p *peer) ensurePool(t *testing.T, ns id.ID, name string) {
	t.Helper()
	if _, err := udb.Transact(bg, p.db, func(tx udb.Transaction) (keys.RunnerConfig, error) {
		return runnerconfig.Ensure(bg, tx, runnerconfig.EnsureInput{Namespace: ns, Name: name})
	}); err != nil {
		t.Fatal(err)
	}
}

// createBody is a create request body for name with key ("" for none) and policy.
func createBody(name, key, policy string) string {
	k := ""
	if key != "" {
		k = `"key":"` + key + `",`
	}
	return `{"name":"` + name + `",` + k + `"runner_name_selector":"pool","crash_policy":"` + policy + `"}`
}

func (p *peer) create(t *testing.T, name, key, policy string) actor.Actor {
	t.Helper()
	var out apitypes.ActorsCreateResponse
	decode(t, do(t, p.h, "POST", "/actors?namespace=default", createBody(name, key, policy), false), &out)
	return out.Actor
}

func (p *peer) getActor(t *testing.T, aid id.ID) actor.Actor {
	t.Helper()
	var out apitypes.ActorsListResponse
	decode(t, do(t, p.h, "GET", "/actors?namespace=default&actor_id="+aid.String(), "", false), &out)
	if len(out.Actors) != 1 {
		t.Fatalf("GET %s: %d actors", aid, len(out.Actors))
	}
	return out.Actors[0]
}

func TestActorsCreate(t *testing.T) {
	p := newActorsPeer(t)
	input := []byte("hello\x00world")
	body := `{"datacenter":"a","name":"counter","key":"k1","input":"` + base64.StdEncoding.EncodeToString(input) +
		`","runner_name_selector":"pool","crash_policy":"sleep"}`
	var out apitypes.ActorsCreateResponse
	decode(t, do(t, p.h, "POST", "/actors?namespace=default", body, false), &out)
	a := out.Actor
	if a.Name != "counter" || a.Key == nil || *a.Key != "k1" || a.NamespaceID != p.defNsID || a.Datacenter != "a" ||
		a.RunnerNameSelector != "pool" || a.CrashPolicy != "sleep" || a.CreateTs == 0 || a.ActorID.Label() != 1 {
		t.Fatalf("created %+v", a)
	}
	// No runner: a sleep-policy actor sleeps at once with no_capacity.
	if a.SleepTs == nil || string(a.Error) != `"no_capacity"` || a.DestroyTs != nil {
		t.Fatalf("created %+v, error %s", a, a.Error)
	}
	stored, _ := udb.ReadTransact(bg, p.db, func(r udb.ReadTransaction) ([]byte, error) {
		b, _, err := keys.GetChunked(bg, r, keys.ActorInputKey{ActorID: a.ActorID})
		return b, err
	})
	if string(stored) != string(input) {
		t.Fatalf("input stored %q", stored)
	}
	if got := p.getActor(t, a.ActorID); got.ActorID != a.ActorID || *got.Key != "k1" || got.SleepTs == nil {
		t.Fatalf("read back %+v", got)
	}

	// A restart-policy actor with no capacity waits in the queue.
	b := p.create(t, "counter", "", "restart")
	if b.PendingAllocationTs == nil || b.Key != nil || b.SleepTs != nil {
		t.Fatalf("pending %+v", b)
	}

	// The key is taken while its actor lives: 409 naming the holder, in the metadata.
	a2 := do(t, p.h, "POST", "/actors?namespace=default", createBody("counter", "k1", "destroy"), false)
	e, err := rerr.Parse(a2.status, []byte(a2.body))
	if err != nil || a2.status != 409 || e.Key() != "actor.duplicate_key" || e.Metadata["existing_actor_id"] != a.ActorID.String() {
		t.Fatalf("duplicate key: %d %s", a2.status, a2.body)
	}
	// Another name may use it.
	p.create(t, "other", "k1", "sleep")

	// Names: every name created, with {} metadata.
	var names apitypes.ActorsNamesResponse
	decode(t, do(t, p.h, "GET", "/actors/names?namespace=default", "", false), &names)
	if len(names.Names) != 2 || string(names.Names["counter"].Metadata) != "{}" || names.Pagination.Cursor == nil {
		t.Fatalf("names %s", do(t, p.h, "GET", "/actors/names?namespace=default", "", false).body)
	}
	var page1, page2 apitypes.ActorsNamesResponse
	decode(t, do(t, p.h, "GET", "/actors/names?namespace=default&limit=1", "", false), &page1)
	if _, ok := page1.Names["counter"]; len(page1.Names) != 1 || !ok || page1.Pagination.Cursor == nil || *page1.Pagination.Cursor != "counter" {
		t.Fatalf("names page 1: %+v", page1)
	}
	decode(t, do(t, p.h, "GET", "/actors/names?namespace=default&limit=1&cursor=counter", "", false), &page2)
	if _, ok := page2.Names["other"]; len(page2.Names) != 1 || !ok || page2.Pagination.Cursor == nil || *page2.Pagination.Cursor != "other" {
		t.Fatalf("names page 2: %+v", page2)
	}
	// The listing ends with an empty page, without a cursor.
	if a := do(t, p.h, "GET", "/actors/names?namespace=default&limit=1&cursor=other", "", false); a.body != `{"names":{},"pagination":{"cursor":null}}` {
		t.Fatalf("names page 3: %s", a.body)
	}
}

func TestActorsErrors(t *testing.T) {
	p := newActorsPeer(t)
	a := p.create(t, "counter", "k1", "sleep")
	long := strings.Repeat("k", 1025)
	bigInput := base64.StdEncoding.EncodeToString(make([]byte, actor.MaxInputLen+1))
	tests := []struct {
		method, target, body string
		status               int
		key, field           string
		unchecked            bool
	}{
		{"POST", "/actors?namespace=default", `{"name":"n","input":"not base64!","runner_name_selector":"pool","crash_policy":"sleep"}`, 400, "api.bad_request", "input", false},
		{"POST", "/actors?namespace=default", `{"name":"n","input":"aGk","runner_name_selector":"pool","crash_policy":"sleep"}`, 400, "api.bad_request", "input", false},
		{"POST", "/actors?namespace=default", `{"name":"n","input":"` + bigInput + `","runner_name_selector":"pool","crash_policy":"sleep"}`, 413, "actor.input_too_large", "", false},
		{"POST", "/actors?namespace=default", createBody("n", long, "sleep"), 400, "actor.key_too_large", "", false},
		{"POST", "/actors?namespace=default", `{"name":"n","key":"","runner_name_selector":"pool","crash_policy":"sleep"}`, 400, "actor.empty_key", "", false},
		{"POST", "/actors?namespace=default", createBody("n", "", "never"), 400, "api.bad_request", "crash_policy", false},
		{"POST", "/actors?namespace=default", `{"runner_name_selector":"pool","crash_policy":"sleep"}`, 400, "api.bad_request", "name", false},
		{"POST", "/actors?namespace=default", `{"name":"n","runner_name_selector":"pool","crash_policy":"sleep","x":1}`, 400, "api.bad_request", "x", false},
		{"POST", "/actors?namespace=default", `{"name":"n","runner_name_selector":"nopool","crash_policy":"sleep"}`, 400, "actor.no_runner_config_configured", "", false},
		{"POST", "/actors?namespace=nope", createBody("n", "", "sleep"), 404, "namespace.not_found", "", false},
		{"POST", "/actors", createBody("n", "", "sleep"), 400, "api.bad_request", "namespace", false},
		{"PUT", "/actors?namespace=default", createBody("n", "", "sleep"), 400, "api.bad_request", "key", false},
		{"GET", "/actors?namespace=default&actor_id=nope", "", 400, "api.bad_request", "actor_id", false},
		{"GET", "/actors?namespace=default&actor_ids=" + a.ActorID.String() + ",nope", "", 400, "api.bad_request", "actor_ids", false},
		{"GET", "/actors?namespace=default", "", 400, "validation.invalid_input", "", false},
		{"GET", "/actors?namespace=default&key=k1", "", 400, "validation.invalid_input", "", false},
		{"GET", "/actors?namespace=default&name=counter&actor_id=" + a.ActorID.String(), "", 400, "validation.invalid_input", "", false},
		{"GET", "/actors?namespace=default&name=", "", 400, "api.bad_request", "name", false},
		{"GET", "/actors?namespace=default&name=counter&cursor=zz", "", 400, "api.bad_request", "cursor", false},
		{"GET", "/actors?namespace=default&name=counter&limit=-1", "", 400, "api.bad_request", "limit", false},
		{"GET", "/actors?namespace=nope&name=counter", "", 404, "namespace.not_found", "", false},
		{"DELETE", "/actors/nope?namespace=default", "", 400, "api.bad_request", "actor_id", false},
		{"DELETE", "/actors/" + id.New(1).String() + "?namespace=default", "", 404, "actor.not_found", "", false},
		{"DELETE", "/actors/" + id.New(7).String() + "?namespace=default", "", 404, "actor.not_found", "", false},
		{"POST", "/actors/nope/sleep?namespace=default", `{}`, 400, "api.bad_request", "actor_id", false},
		{"POST", "/actors/" + a.ActorID.String() + "/sleep?namespace=default", `{"x":1}`, 400, "api.bad_request", "x", false},
		{"POST", "/actors/" + id.New(1).String() + "/reschedule?namespace=default", `{}`, 404, "actor.not_found", "", false},
		{"GET", "/actors/names?namespace=default&limit=1e3", "", 400, "api.bad_request", "limit", false},
	}
	var many []string
	for range 33 {
		many = append(many, "actor_id="+id.New(1).String())
	}
	tests = append(tests, struct {
		method, target, body string
		status               int
		key, field           string
		unchecked            bool
	}{"GET", "/actors?namespace=default&" + strings.Join(many, "&"), "", 400, "validation.too_many_actor_ids", "", false})
	for _, tt := range tests {
		ans := do(t, p.h, tt.method, tt.target, tt.body, tt.unchecked)
		key, field := errKey(t, ans)
		if ans.status != tt.status || key != tt.key || field != tt.field {
			t.Errorf("%s %.100s %.100s: %d %s (field %q), want %d %s (field %q)", tt.method, tt.target, tt.body, ans.status, key, field, tt.status, tt.key, tt.field)
		}
	}
	// Nothing of the refused creates was written.
	var names apitypes.ActorsNamesResponse
	decode(t, do(t, p.h, "GET", "/actors/names?namespace=default", "", false), &names)
	if len(names.Names) != 1 {
		t.Fatalf("names after refused creates: %+v", names.Names)
	}
}

// TestActorsGetOrCreateConcurrent: concurrent PUTs with one key create exactly one actor,
// and every call answers it.
func TestActorsGetOrCreateConcurrent(t *testing.T) {
	p := newActorsPeer(t)
	const n = 16
	var wg sync.WaitGroup
	outs := make([]apitypes.ActorsGetOrCreateResponse, n)
	answers := make([]answer, n)
	for i := range n {
		wg.Go(func() {
			answers[i] = do(t, p.h, "PUT", "/actors?namespace=default", createBody("room", "lobby", "sleep"), false)
		})
	}
	wg.Wait()
	created := 0
	for i, a := range answers {
		decode(t, a, &outs[i])
		if outs[i].Created {
			created++
		}
		if outs[i].Actor.ActorID != outs[0].Actor.ActorID {
			t.Fatalf("answer %d names %s, answer 0 %s", i, outs[i].Actor.ActorID, outs[0].Actor.ActorID)
		}
	}
	if created != 1 {
		t.Fatalf("%d calls created, want 1", created)
	}
	var all apitypes.ActorsListResponse
	decode(t, do(t, p.h, "GET", "/actors?namespace=default&name=room&include_destroyed=true", "", false), &all)
	if len(all.Actors) != 1 {
		t.Fatalf("%d actors named room", len(all.Actors))
	}
	// Once it is destroyed, the next PUT creates a new holder.
	decode(t, do(t, p.h, "DELETE", "/actors/"+outs[0].Actor.ActorID.String()+"?namespace=default", "", false), &struct{}{})
	var next apitypes.ActorsGetOrCreateResponse
	decode(t, do(t, p.h, "PUT", "/actors?namespace=default", createBody("room", "lobby", "sleep"), false), &next)
	if !next.Created || next.Actor.ActorID == outs[0].Actor.ActorID {
		t.Fatalf("after destroy: %+v", next)
	}
}

func TestActorsDestroy(t *testing.T) {
	p := newActorsPeer(t)
	asleep := p.create(t, "counter", "k", "sleep")
	pending := p.create(t, "counter", "", "restart")
	for _, a := range []actor.Actor{asleep, pending} {
		target := "/actors/" + a.ActorID.String() + "?namespace=default"
		for range 2 { // idempotent
			ans := do(t, p.h, "DELETE", target, "", false)
			if ans.status != 200 || ans.body != "{}" {
				t.Fatalf("DELETE %s: %d %s", a.ActorID, ans.status, ans.body)
			}
		}
		// Upper case ids are accepted.
		if ans := do(t, p.h, "DELETE", "/actors/"+strings.ToUpper(a.ActorID.String())+"?namespace=default", "", false); ans.status != 200 {
			t.Fatalf("DELETE in upper case: %d %s", ans.status, ans.body)
		}
		got := p.getActor(t, a.ActorID)
		if got.DestroyTs == nil || got.PendingAllocationTs != nil {
			t.Fatalf("after delete: %+v", got)
		}
	}
	// The destroyed actors leave the default list, and stay in the one with destroyed.
	var live, all apitypes.ActorsListResponse
	decode(t, do(t, p.h, "GET", "/actors?namespace=default&name=counter", "", false), &live)
	decode(t, do(t, p.h, "GET", "/actors?namespace=default&name=counter&include_destroyed=true", "", false), &all)
	if len(live.Actors) != 0 || len(all.Actors) != 2 {
		t.Fatalf("lists after delete: %d live, %d in all", len(live.Actors), len(all.Actors))
	}
	// The key is free again.
	p.create(t, "counter", "k", "sleep")

	// An actor of another namespace is not found there, and is left alone.
	var ns apitypes.NamespacesCreateResponse
	decode(t, do(t, p.h, "POST", "/namespaces", `{"name":"other","display_name":"O"}`, false), &ns)
	p.ensurePool(t, ns.Namespace.NamespaceID, "pool")
	var theirs apitypes.ActorsCreateResponse
	decode(t, do(t, p.h, "POST", "/actors?namespace=other", createBody("counter", "", "sleep"), false), &theirs)
	ans := do(t, p.h, "DELETE", "/actors/"+theirs.Actor.ActorID.String()+"?namespace=default", "", false)
	if key, _ := errKey(t, ans); ans.status != 404 || key != "actor.not_found" {
		t.Fatalf("DELETE from another namespace: %d %s", ans.status, ans.body)
	}
	for _, target := range []string{"/sleep", "/reschedule"} {
		ans := do(t, p.h, "POST", "/actors/"+theirs.Actor.ActorID.String()+target+"?namespace=default", "{}", false)
		if key, _ := errKey(t, ans); ans.status != 404 || key != "actor.not_found" {
			t.Fatalf("%s from another namespace: %d %s", target, ans.status, ans.body)
		}
	}
	var list apitypes.ActorsListResponse
	decode(t, do(t, p.h, "GET", "/actors?namespace=default&actor_id="+theirs.Actor.ActorID.String(), "", false), &list)
	if len(list.Actors) != 0 {
		t.Fatalf("listed from another namespace: %+v", list)
	}
	decode(t, do(t, p.h, "GET", "/actors?namespace=other&actor_id="+theirs.Actor.ActorID.String(), "", false), &list)
	if len(list.Actors) != 1 || list.Actors[0].DestroyTs != nil {
		t.Fatalf("in its namespace: %+v", list)
	}
}

func TestActorsSleepReschedule(t *testing.T) {
	p := newActorsPeer(t)
	a := p.create(t, "counter", "", "restart")
	if a.PendingAllocationTs == nil {
		t.Fatalf("not pending: %+v", a)
	}
	post := func(what string) {
		t.Helper()
		ans := do(t, p.h, "POST", "/actors/"+a.ActorID.String()+"/"+what+"?namespace=default", "{}", false)
		if ans.status != 200 || ans.body != "{}" {
			t.Fatalf("%s: %d %s", what, ans.status, ans.body)
		}
	}
	// A waiting actor sleeps at once.
	post("sleep")
	if got := p.getActor(t, a.ActorID); got.SleepTs == nil || got.PendingAllocationTs != nil {
		t.Fatalf("after sleep: %+v", got)
	}
	post("sleep") // a sleeping one is left as it is
	// Reschedule places a sleeping actor now: with no runner it waits in the queue again.
	// (Its sleep_ts is left set by ops/actor, which Rivet clears; see the report.)
	post("reschedule")
	if got := p.getActor(t, a.ActorID); got.PendingAllocationTs == nil {
		t.Fatalf("after reschedule: %+v", got)
	}
	// On a destroyed actor both answer {} and change nothing.
	decode(t, do(t, p.h, "DELETE", "/actors/"+a.ActorID.String()+"?namespace=default", "", false), &struct{}{})
	post("sleep")
	post("reschedule")
	if got := p.getActor(t, a.ActorID); got.DestroyTs == nil || got.PendingAllocationTs != nil {
		t.Fatalf("destroyed after sleep and reschedule: %+v", got)
	}
}

// TestActorsList pages every mode through the API: each actor once, newest first.
func TestActorsList(t *testing.T) {
	p := newActorsPeer(t)
	var ids []id.ID
	for i := range 23 {
		a := p.create(t, "counter", fmt.Sprint("k", i), "sleep")
		ids = append(ids, a.ActorID)
		if i%5 == 0 {
			decode(t, do(t, p.h, "DELETE", "/actors/"+a.ActorID.String()+"?namespace=default", "", false), &struct{}{})
		}
	}
	pageAll := func(q url.Values, limit int) []actor.Actor {
		t.Helper()
		q.Set("namespace", "default")
		q.Set("limit", fmt.Sprint(limit))
		var all []actor.Actor
		for range 1000 {
			var page apitypes.ActorsListResponse
			decode(t, do(t, p.h, "GET", "/actors?"+q.Encode(), "", false), &page)
			if len(page.Actors) > limit {
				t.Fatalf("page of %d, limit %d", len(page.Actors), limit)
			}
			all = append(all, page.Actors...)
			if page.Pagination.Cursor == nil {
				break
			}
			q.Set("cursor", *page.Pagination.Cursor)
		}
		for i := 1; i < len(all); i++ {
			if actor.Cursor(all[i-1].CreateTs, all[i-1].ActorID) <= "" || all[i-1].CreateTs < all[i].CreateTs ||
				all[i-1].CreateTs == all[i].CreateTs && all[i-1].ActorID.Compare(all[i].ActorID) <= 0 {
				t.Fatalf("out of order at %d", i)
			}
		}
		return all
	}
	for _, limit := range []int{1, 4, 100} {
		if got := pageAll(url.Values{"name": {"counter"}}, limit); len(got) != 23-5 {
			t.Errorf("limit %d: %d live actors", limit, len(got))
		}
		if got := pageAll(url.Values{"name": {"counter"}, "include_destroyed": {"true"}}, limit); len(got) != 23 {
			t.Errorf("limit %d: %d actors with destroyed", limit, len(got))
		}
		// By ids, repeated and comma-separated, with repeats: each once.
		q := url.Values{"actor_ids": {ids[1].String() + "," + ids[2].String()}}
		for _, aid := range ids[:10] {
			q.Add("actor_id", aid.String())
		}
		got := pageAll(q, limit)
		var gotIDs []id.ID
		for _, a := range got {
			gotIDs = append(gotIDs, a.ActorID)
		}
		slices.SortFunc(gotIDs, func(a, b id.ID) int { return a.Compare(b) })
		want := slices.Clone(ids[:10])
		slices.SortFunc(want, func(a, b id.ID) int { return a.Compare(b) })
		if !slices.Equal(gotIDs, want) {
			t.Errorf("limit %d by ids: %d actors", limit, len(got))
		}
	}
	// By key: the live holder; a destroyed key's holder only with include_destroyed.
	for _, tt := range []struct {
		key        string
		destroyed  bool
		want       int
		wantHolder id.ID
	}{{"k1", false, 1, ids[1]}, {"k5", false, 0, id.ID{}}, {"k5", true, 1, ids[5]}, {"nope", true, 0, id.ID{}}} {
		q := url.Values{"name": {"counter"}, "key": {tt.key}}
		if tt.destroyed {
			q.Set("include_destroyed", "true")
		}
		got := pageAll(q, 10)
		if len(got) != tt.want || tt.want == 1 && got[0].ActorID != tt.wantHolder {
			t.Errorf("key %s destroyed %v: %+v", tt.key, tt.destroyed, got)
		}
	}
}

// TestActorsDestroyAnswersBeforeTheDeadline: a placed actor whose runner never reports the
// stop is recorded as destroying, and the delete answers {} before the request's deadline
// instead of failing; the stop threshold then finishes it.
func TestActorsDestroyAnswersBeforeTheDeadline(t *testing.T) {
	p := newActorsPeer(t)
	if _, err := udb.Transact(bg, p.db, func(tx udb.Transaction) (runner.RegisterOutput, error) {
		return runner.Register(bg, tx, runner.RegisterInput{Namespace: p.defNsID, Name: "pool", Key: "k", Version: 1, TotalSlots: 1,
			ProtocolVersion: 7, ConnID: id.New(1), NewRunnerID: id.New(1), NowMs: time.Now().UnixMilli()})
	}); err != nil {
		t.Fatal(err)
	}
	a := p.create(t, "counter", "", "restart")
	if a.PendingAllocationTs != nil {
		t.Fatalf("not placed: %+v", a)
	}
	ctx, cancel := context.WithTimeout(bg, time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, "DELETE", "/actors/"+a.ActorID.String()+"?namespace=default", nil)
	w := httptest.NewRecorder()
	p.h.ServeHTTP(w, req)
	if w.Code != 200 || strings.TrimSpace(w.Body.String()) != "{}" || ctx.Err() != nil {
		t.Fatalf("DELETE: %d %s (context: %v)", w.Code, w.Body, ctx.Err())
	}
	st, _ := udb.ReadTransact(bg, p.db, func(r udb.ReadTransaction) (keys.ActorState, error) {
		st, _, err := keys.Get(bg, r.Snapshot(), keys.ActorStateKey{ActorID: a.ActorID})
		return st, err
	})
	if st.Phase != keys.PhaseStopping || st.StopReason != keys.StopDestroy {
		t.Fatalf("after DELETE: phase %s, stop reason %s", st.Phase, st.StopReason)
	}
	// The next DELETE records nothing new and answers the same way.
	ctx2, cancel2 := context.WithTimeout(bg, 500*time.Millisecond)
	defer cancel2()
	w = httptest.NewRecorder()
	p.h.ServeHTTP(w, httptest.NewRequestWithContext(ctx2, "DELETE", "/actors/"+a.ActorID.String()+"?namespace=default", nil))
	if w.Code != 200 {
		t.Fatalf("second DELETE: %d %s", w.Code, w.Body)
	}
}
