package actor

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// createNamed creates an actor of name with key (nil: none) in namespace ns at w.now, with
// crash policy sleep (no runner: it sleeps at once with no_capacity).
func (w *world) createNamed(ns id.ID, name string, key *string) id.ID {
	w.t.Helper()
	aid := id.New(1)
	opstest.Write(w.t, w.db, func(tx udb.Transaction) (CreateOutput, error) {
		return Create(ctx, tx, CreateInput{Namespace: ns, NamespaceName: "default", ActorID: aid, Name: name, Key: key,
			Selector: "pool", CrashPolicy: CrashSleep, NowMs: w.now, Datacenter: "dc", Config: w.cfg})
	})
	return aid
}

// otherNamespace returns a new namespace with the pool's config.
func (w *world) otherNamespace() id.ID {
	w.t.Helper()
	ns := id.New(1)
	opstest.Write(w.t, w.db, func(tx udb.Transaction) (keys.RunnerConfig, error) {
		return runnerconfig.Ensure(ctx, tx, runnerconfig.EnsureInput{Namespace: ns, Name: "pool"})
	})
	return ns
}

func (w *world) destroy(aid id.ID) {
	w.t.Helper()
	out := opstest.Write(w.t, w.db, func(tx udb.Transaction) (DestroyOutput, error) {
		return Destroy(ctx, tx, Input{ActorID: aid, NowMs: w.now, Config: w.cfg})
	})
	if !out.Done {
		w.t.Fatalf("destroy of %s not done", aid)
	}
}

func (w *world) list(in ListInput) (ListOutput, error) {
	in.Datacenter = "dc"
	return udb.ReadTransact(ctx, w.db, func(r udb.ReadTransaction) (ListOutput, error) {
		return List(ctx, r, in)
	})
}

// pageAll follows the cursor from in until the last page and returns the ids listed, in
// order, failing on a page over the limit, an empty page with a cursor, or a repeat.
func (w *world) pageAll(in ListInput) []id.ID {
	w.t.Helper()
	var all []id.ID
	for range 10_000 {
		out, err := w.list(in)
		if err != nil {
			w.t.Fatal(err)
		}
		if len(out.Actors) > in.Limit {
			w.t.Fatalf("page of %d, limit %d", len(out.Actors), in.Limit)
		}
		for _, a := range out.Actors {
			if a.Datacenter != "dc" || a.NamespaceID != in.Namespace {
				w.t.Fatalf("%+v", a)
			}
			all = append(all, a.ActorID)
		}
		if out.Cursor == nil {
			if len(out.Actors) > 0 {
				w.t.Fatal("a page with actors but no cursor: a listing ends with an empty page")
			}
			checkListOrder(w.t, w, all)
			return all
		}
		if len(out.Actors) == 0 {
			w.t.Fatal("an empty page with a cursor")
		}
		in.Cursor = *out.Cursor
	}
	w.t.Fatal("paging does not end")
	return nil
}

// checkListOrder fails unless ids are in (create_ts, id) descending order, without repeats.
func checkListOrder(t *testing.T, w *world, ids []id.ID) {
	t.Helper()
	ts := func(aid id.ID) int64 { return w.state(aid).CreateTs }
	for i := 1; i < len(ids); i++ {
		a, b := ids[i-1], ids[i]
		if ta, tb := ts(a), ts(b); ta < tb || ta == tb && a.Compare(b) <= 0 {
			t.Fatalf("actors %d and %d out of order: (%d, %s) then (%d, %s)", i-1, i, ta, a, tb, b)
		}
	}
}

func sortedIDs(ids []id.ID) []id.ID {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b id.ID) int { return a.Compare(b) })
	return out
}

func TestListByName(t *testing.T) {
	w := newWorld(t)
	var live, all []id.ID
	for i := range 60 {
		if i == 30 {
			w.now++ // two milliseconds, 30 actors each
		}
		aid := w.createNamed(w.ns, "counter", nil)
		all = append(all, aid)
		if i%4 == 0 {
			w.destroy(aid)
		} else {
			live = append(live, aid)
		}
	}
	w.createNamed(w.ns, "other", nil)
	w.createNamed(w.otherNamespace(), "counter", nil) // another namespace

	for _, limit := range []int{1, 7, 30, 100} {
		got := w.pageAll(ListInput{Namespace: w.ns, Name: "counter", Limit: limit})
		if !slices.Equal(sortedIDs(got), sortedIDs(live)) {
			t.Errorf("limit %d: %d actors, want the %d live ones", limit, len(got), len(live))
		}
		got = w.pageAll(ListInput{Namespace: w.ns, Name: "counter", IncludeDestroyed: true, Limit: limit})
		if !slices.Equal(sortedIDs(got), sortedIDs(all)) {
			t.Errorf("limit %d with destroyed: %d actors, want %d", limit, len(got), len(all))
		}
	}

	// The default limit is 100.
	out, err := w.list(ListInput{Namespace: w.ns, Name: "counter", IncludeDestroyed: true})
	if err != nil || len(out.Actors) != 60 || out.Cursor == nil {
		t.Fatalf("default limit: %d actors, cursor %v, %v", len(out.Actors), out.Cursor, err)
	}
	// The actor object is the state's view.
	for _, a := range out.Actors {
		if a.Name != "counter" || a.RunnerNameSelector != "pool" || a.CrashPolicy != CrashSleep || a.Key != nil {
			t.Fatalf("%+v", a)
		}
		if destroyed := a.DestroyTs != nil; destroyed == slices.Contains(live, a.ActorID) {
			t.Fatalf("%s: destroy_ts %v", a.ActorID, a.DestroyTs)
		}
	}

	// Rivet's bare create_ts cursor lists what was created before that millisecond.
	out, err = w.list(ListInput{Namespace: w.ns, Name: "counter", IncludeDestroyed: true, Cursor: strconv.FormatInt(w.now, 10)})
	if err != nil || len(out.Actors) != 30 || out.Actors[0].CreateTs != w.now-1 {
		t.Fatalf("legacy cursor: %d actors, %v", len(out.Actors), err)
	}

	// A name nobody used lists nothing.
	out, err = w.list(ListInput{Namespace: w.ns, Name: "nobody"})
	if err != nil || len(out.Actors) != 0 || out.Cursor != nil {
		t.Fatalf("unknown name: %+v %v", out, err)
	}
}

func TestListByKey(t *testing.T) {
	w := newWorld(t)
	k := strp("room-1")
	var history []id.ID // newest last
	for range 5 {
		aid := w.createNamed(w.ns, "counter", k)
		history = append(history, aid)
		w.destroy(aid)
		w.now++
	}
	holder := w.createNamed(w.ns, "counter", k)
	history = append(history, holder)
	w.createNamed(w.ns, "counter", strp("room-2"))
	w.createNamed(w.ns, "other", k)

	// The live holder only; the page after it is empty (the Rivet engine's cursor stays
	// on the holder, whose page it returns again and again).
	for _, limit := range []int{1, 100} {
		out, err := w.list(ListInput{Namespace: w.ns, Name: "counter", Key: k, Limit: limit})
		if err != nil || len(out.Actors) != 1 || out.Actors[0].ActorID != holder || out.Cursor == nil {
			t.Fatalf("limit %d: %+v %v", limit, out, err)
		}
		if *out.Actors[0].Key != "room-1" {
			t.Fatalf("key %v", out.Actors[0].Key)
		}
		next, err := w.list(ListInput{Namespace: w.ns, Name: "counter", Key: k, Limit: limit, Cursor: *out.Cursor})
		if err != nil || len(next.Actors) != 0 || next.Cursor != nil {
			t.Fatalf("limit %d, after the holder: %+v %v", limit, next, err)
		}
	}
	// With destroyed: every actor that held the key, newest first.
	slices.Reverse(history)
	for _, limit := range []int{1, 2, 100} {
		got := w.pageAll(ListInput{Namespace: w.ns, Name: "counter", Key: k, IncludeDestroyed: true, Limit: limit})
		if !slices.Equal(got, history) {
			t.Errorf("limit %d: %v, want %v", limit, got, history)
		}
	}
	// Once the holder is destroyed, nobody holds the key.
	w.destroy(holder)
	out, err := w.list(ListInput{Namespace: w.ns, Name: "counter", Key: k})
	if err != nil || len(out.Actors) != 0 || out.Cursor != nil {
		t.Fatalf("after destroy: %+v %v", out, err)
	}
	// An unknown key lists nothing.
	out, err = w.list(ListInput{Namespace: w.ns, Name: "counter", Key: strp("nope"), IncludeDestroyed: true})
	if err != nil || len(out.Actors) != 0 {
		t.Fatalf("unknown key: %+v %v", out, err)
	}
}

func TestListByIDs(t *testing.T) {
	w := newWorld(t)
	var ids []id.ID
	for i := range 10 {
		if i%3 == 0 {
			w.now++
		}
		ids = append(ids, w.createNamed(w.ns, fmt.Sprint("n", i%2), nil))
	}
	w.destroy(ids[4])
	foreign := w.createNamed(w.otherNamespace(), "n0", nil) // another namespace: left out
	ask := append(slices.Clone(ids), ids[0], ids[1], id.New(1), foreign)

	for _, limit := range []int{1, 3, 100} {
		got := w.pageAll(ListInput{Namespace: w.ns, ActorIDs: ask, Limit: limit})
		// Destroyed actors are listed too (Rivet's id mode ignores include_destroyed).
		if !slices.Equal(sortedIDs(got), sortedIDs(ids)) {
			t.Errorf("limit %d: %d actors, want %d", limit, len(got), len(ids))
		}
	}
}

func TestListChecks(t *testing.T) {
	w := newWorld(t)
	many := make([]id.ID, 33)
	for i := range many {
		many[i] = id.New(1)
	}
	tests := []struct {
		in   ListInput
		want rerr.Code
		meta string // field or message
	}{
		{ListInput{ActorIDs: many}, rerr.CodeValidationTooManyActorIDs, ""},
		{ListInput{ActorIDs: many[:1], Name: "a"}, rerr.CodeValidationInvalidInput, "Cannot provide both actor_id and (name + key). Use either actor_id or (name + key)."},
		{ListInput{ActorIDs: many[:1], Key: strp("k")}, rerr.CodeValidationInvalidInput, "Cannot provide both actor_id and (name + key). Use either actor_id or (name + key)."},
		{ListInput{Key: strp("k")}, rerr.CodeValidationInvalidInput, "Name is required when key is provided."},
		{ListInput{}, rerr.CodeValidationInvalidInput, "Name is required when not using actor_ids."},
		{ListInput{Name: "a", Limit: -1}, rerr.CodeAPIBadRequest, "limit"},
		{ListInput{Name: "a", Cursor: "x!"}, rerr.CodeAPIBadRequest, "cursor"},
		{ListInput{Name: "a", Cursor: Cursor(1, id.New(1))[:12]}, rerr.CodeAPIBadRequest, "cursor"},
	}
	for _, tt := range tests {
		tt.in.Namespace = w.ns
		_, err := w.list(tt.in)
		e, ok := rerr.As(err)
		if !ok || !rerr.Is(e, tt.want) {
			t.Errorf("%+v: %v, want %s", tt.in, err, tt.want)
			continue
		}
		if tt.meta == "" {
			continue
		}
		if got := fmt.Sprint(e.Metadata["field"]) + fmt.Sprint(e.Metadata["message"]); got != tt.meta+"<nil>" && got != "<nil>"+tt.meta {
			t.Errorf("%+v: metadata %v, want %s", tt.in, e.Metadata, tt.meta)
		}
	}
	// 32 ids are fine.
	if _, err := w.list(ListInput{Namespace: w.ns, ActorIDs: many[:32]}); err != nil {
		t.Fatal(err)
	}
}

func TestListNames(t *testing.T) {
	w := newWorld(t)
	var want []string
	for i := range 25 {
		name := fmt.Sprintf("name-%02d", i)
		want = append(want, name)
		w.createNamed(w.ns, name, nil)
	}
	w.createNamed(w.ns, "name-03", nil) // a name once
	w.createNamed(w.otherNamespace(), "elsewhere", nil)
	// A runner's announced metadata is listed as it was stored.
	opstest.Write(t, w.db, func(tx udb.Transaction) (struct{}, error) {
		keys.Set(tx, keys.ActorNameKey{Namespace: w.ns, Name: "name-07"}, keys.ActorNameValue{Metadata: `{"a":[1]}`})
		return struct{}{}, nil
	})

	for _, limit := range []int{1, 4, 25, 100} {
		var got []string
		after := ""
		for range 100 {
			out := opstest.Read(t, w.db, func(r udb.ReadTransaction) (ListNamesOutput, error) {
				return ListNames(ctx, r, ListNamesInput{Namespace: w.ns, AfterName: after, Limit: limit})
			})
			if len(out.Names) > limit {
				t.Fatalf("page of %d, limit %d", len(out.Names), limit)
			}
			for _, n := range out.Names {
				got = append(got, n.Name)
				wantMD := `{}`
				if n.Name == "name-07" {
					wantMD = `{"a":[1]}`
				}
				if string(n.Metadata) != wantMD {
					t.Fatalf("%s: metadata %s", n.Name, n.Metadata)
				}
			}
			if out.Cursor == nil {
				break
			}
			after = *out.Cursor
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: %v", limit, got)
		}
	}
}
