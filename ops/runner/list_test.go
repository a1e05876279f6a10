package runner

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/berthhq/berth/ops/internal/cursor"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// fixture is a namespace with many runners, most created in one
// millisecond, some drained, some stopped, plus runners of another
// namespace that no listing may show.
type fixture struct {
	db      udb.Database
	ns      id.ID
	other   id.ID
	runners []Runner // every runner of ns, as Get returns it
}

func newFixture(t *testing.T, sameMs int) *fixture {
	t.Helper()
	f := &fixture{db: opstest.Open(t), ns: id.New(1), other: id.New(1)}
	var rids []id.ID
	add := func(ns id.ID, name string, now int64) {
		out := register(t, f.db, input(ns, name, fmt.Sprintf("key-%d", len(rids)), now))
		if ns == f.ns {
			rids = append(rids, out.RunnerID)
		}
	}
	for i := range 10 {
		add(f.ns, "a", 4000+int64(i%2))
	}
	for i := range sameMs {
		add(f.ns, []string{"a", "b"}[i%2], 5000)
	}
	for range 10 {
		add(f.ns, "b", 6000)
	}
	for i := range 20 {
		add(f.other, "a", 5000+int64(i%3-1))
	}
	for i, rid := range rids {
		switch {
		case i%7 == 3:
			opstest.Write(t, f.db, func(tx udb.Transaction) (StopOutput, error) {
				return Stop(ctx, tx, StopInput{RunnerID: rid, NowMs: 9000})
			})
		case i%5 == 1:
			opstest.Write(t, f.db, func(tx udb.Transaction) (DrainOutput, error) {
				return Drain(ctx, tx, DrainInput{RunnerID: rid, NowMs: 9000})
			})
		}
	}
	for _, rid := range rids {
		f.runners = append(f.runners, get(t, f.db, rid))
	}
	return f
}

// want is what a complete listing with in's filters returns, in order.
func (f *fixture) want(in ListForNsInput) []id.ID {
	ids := map[id.ID]bool{}
	for _, rid := range in.RunnerIDs {
		ids[rid] = true
	}
	var sel []Runner
	for _, r := range f.runners {
		if (in.Name == "" || r.Name == in.Name) && (in.IncludeStopped || r.StopTs == nil) && (len(ids) == 0 || ids[r.RunnerID]) {
			sel = append(sel, r)
		}
	}
	slices.SortFunc(sel, func(a, b Runner) int { return cursor.Compare(a.CreateTs, a.RunnerID[:], b.CreateTs, b.RunnerID[:]) })
	out := make([]id.ID, len(sel))
	for i, r := range sel {
		out[i] = r.RunnerID
	}
	return out
}

// pageAll follows cursors to the end and returns every runner listed.
func pageAll(t *testing.T, f *fixture, in ListForNsInput) []id.ID {
	t.Helper()
	byID := map[id.ID]Runner{}
	for _, r := range f.runners {
		byID[r.RunnerID] = r
	}
	var got []id.ID
	short := false // the last page was not full: only the empty page may follow
	for pages := 0; ; pages++ {
		if pages > len(f.runners)+2 {
			t.Fatalf("%+v: paging does not end", in)
		}
		out, err := list(f.db, in)
		if err != nil {
			t.Fatalf("ListForNs(%+v): %v", in, err)
		}
		for _, r := range out.Runners {
			if !equalRunner(r, byID[r.RunnerID]) {
				t.Fatalf("listed %+v, Get gives %+v", r, byID[r.RunnerID])
			}
			got = append(got, r.RunnerID)
		}
		if out.Cursor == nil {
			if len(out.Runners) > 0 {
				t.Fatalf("%+v: a page of %d without a cursor; a listing ends with an empty page", in, len(out.Runners))
			}
			return got
		}
		if len(out.Runners) == 0 || short {
			t.Fatalf("%+v: a page of %d with a cursor after a short page; want full pages before the last", in, len(out.Runners))
		}
		short = len(out.Runners) < in.Limit
		in.Cursor = *out.Cursor
	}
}

func TestListForNsPagingExactlyOnce(t *testing.T) {
	f := newFixture(t, 300)
	var subset []id.ID
	for i, r := range f.runners {
		if i%3 == 0 {
			subset = append(subset, r.RunnerID)
		}
	}
	// Unknown ids, a repeat and another namespace's runner are left out.
	subset = append(subset, id.New(1), subset[0])
	otherRunner := opstest.Read(t, f.db, func(r udb.ReadTransaction) (ListForNsOutput, error) {
		return ListForNs(ctx, r, ListForNsInput{Namespace: f.other, Limit: 1})
	}).Runners[0].RunnerID
	subset = append(subset, otherRunner)

	for _, name := range []string{"", "a", "b", "none"} {
		for _, stopped := range []bool{false, true} {
			for _, ids := range [][]id.ID{nil, subset} {
				limits := []int{3, 50, 299, 300, 301, 1000}
				if name == "" && stopped {
					limits = append(limits, 1, 2) // many pages: once is enough
				}
				for _, limit := range limits {
					in := ListForNsInput{Namespace: f.ns, Name: name, IncludeStopped: stopped, RunnerIDs: ids, Limit: limit}
					want := f.want(in)
					if got := pageAll(t, f, in); !slices.Equal(got, want) {
						t.Fatalf("name %q, include_stopped %v, %d ids, limit %d: paged %d runners, want %d in order",
							name, stopped, len(ids), limit, len(got), len(want))
					}
				}
			}
		}
	}
}

func TestListForNsDefaults(t *testing.T) {
	f := newFixture(t, 150)
	out, err := list(f.db, ListForNsInput{Namespace: f.ns})
	if err != nil || len(out.Runners) != DefaultListLimit || out.Cursor == nil {
		t.Fatalf("default limit: %d runners, cursor %v, %v", len(out.Runners), out.Cursor, err)
	}
	if _, err := list(f.db, ListForNsInput{Namespace: f.ns, Limit: -1}); !rerr.Is(err, rerr.CodeAPIBadRequest) {
		t.Errorf("limit -1: %v; want api.bad_request", err)
	}
	for _, c := range []string{"x", "-", cursor.Encode(5000, []byte("an-envoy-key"))} {
		_, err := list(f.db, ListForNsInput{Namespace: f.ns, Cursor: c})
		if e, ok := rerr.As(err); !ok || !rerr.Is(e, rerr.CodeAPIBadRequest) || e.Metadata["field"] != "cursor" {
			t.Errorf("cursor %q: %v; want api.bad_request naming cursor", c, err)
		}
	}
}

// The Rivet engine's cursor, a bare create_ts, still works: the page starts
// at the runners created before that millisecond.
func TestListForNsLegacyCursor(t *testing.T) {
	f := newFixture(t, 40)
	for _, ts := range []int64{6000, 5000, 4001, 4000, 1} {
		out, err := list(f.db, ListForNsInput{Namespace: f.ns, IncludeStopped: true, Cursor: strconv.FormatInt(ts, 10), Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var want []id.ID
		for _, rid := range f.want(ListForNsInput{IncludeStopped: true}) {
			if r := f.runnerByID(rid); r.CreateTs < ts {
				want = append(want, rid)
			}
		}
		var got []id.ID
		for _, r := range out.Runners {
			got = append(got, r.RunnerID)
		}
		if !slices.Equal(got, want) || (out.Cursor == nil) != (len(got) == 0) {
			t.Errorf("legacy cursor %d: %d runners (cursor %v), want %d", ts, len(got), out.Cursor, len(want))
		}
	}
}

func (f *fixture) runnerByID(rid id.ID) Runner {
	for _, r := range f.runners {
		if r.RunnerID == rid {
			return r
		}
	}
	return Runner{}
}

// A page's last runner may stop before the next page is asked for: the
// cursor still places the next page right after it.
func TestListForNsCursorItemGone(t *testing.T) {
	f := newFixture(t, 60)
	in := ListForNsInput{Namespace: f.ns, Limit: 10}
	want := f.want(in)
	first, err := list(f.db, in)
	if err != nil {
		t.Fatal(err)
	}
	last := first.Runners[len(first.Runners)-1].RunnerID
	opstest.Write(t, f.db, func(tx udb.Transaction) (StopOutput, error) {
		return Stop(ctx, tx, StopInput{RunnerID: last, NowMs: 10_000})
	})
	in.Cursor = *first.Cursor
	got := []id.ID{}
	for _, r := range first.Runners {
		got = append(got, r.RunnerID)
	}
	got = append(got, pageAll(t, f, in)...)
	if !slices.Equal(got, want) {
		t.Fatalf("paged %d runners, want the %d listed before the stop, each once", len(got), len(want))
	}
}

func TestListNames(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	names := []string{"delta", "alpha", "charlie", "bravo", "echo", "alpha"}
	for i, n := range names {
		register(t, db, input(ns, n, strconv.Itoa(i), int64(i)))
	}
	register(t, db, input(id.New(1), "zulu", "z", 1))
	listNames := func(in ListNamesInput) ListNamesOutput {
		return opstest.Read(t, db, func(r udb.ReadTransaction) (ListNamesOutput, error) { return ListNames(ctx, r, in) })
	}
	want := []string{"alpha", "bravo", "charlie", "delta", "echo"}
	for _, limit := range []int{1, 2, 4, 5, 6} {
		var got []string
		in := ListNamesInput{Namespace: ns, Limit: limit}
		for {
			out := listNames(in)
			got = append(got, out.Names...)
			if out.Cursor == nil {
				if len(out.Names) > 0 {
					t.Fatalf("limit %d: page %v without a cursor", limit, out.Names)
				}
				break
			}
			if *out.Cursor != out.Names[len(out.Names)-1] {
				t.Fatalf("limit %d: page %v with cursor %q", limit, out.Names, *out.Cursor)
			}
			in.AfterName = *out.Cursor
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: %v, want %v", limit, got, want)
		}
	}
	if out := listNames(ListNamesInput{Namespace: ns, AfterName: "c"}); !slices.Equal(out.Names, []string{"charlie", "delta", "echo"}) {
		t.Errorf("after \"c\": %v", out.Names)
	}
}
