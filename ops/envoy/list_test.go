package envoy

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/berthhq/berth/ops/internal/cursor"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// fixture is a namespace with many envoys, most created in one millisecond,
// some draining, some expired, plus envoys of another namespace with the
// same keys that no listing may show.
type fixture struct {
	db     udb.Database
	ns     id.ID
	envoys []Envoy // every envoy of ns, as Get returns it
	active map[string]bool
}

func newFixture(t *testing.T, sameMs int) *fixture {
	t.Helper()
	f := &fixture{db: opstest.Open(t), ns: id.New(1), active: map[string]bool{}}
	other := id.New(1)
	var envoyKeys []string
	add := func(pool string, now int64) {
		key := fmt.Sprintf("envoy-%04d", len(envoyKeys))
		register(t, f.db, input(f.ns, key, pool, now))
		register(t, f.db, input(other, key, pool, now))
		envoyKeys = append(envoyKeys, key)
	}
	for i := range 10 {
		add("a", 4000+int64(i%2))
	}
	for i := range sameMs {
		add([]string{"a", "b"}[i%2], 5000)
	}
	for range 10 {
		add("b", 6000)
	}
	for i, k := range envoyKeys {
		f.active[k] = true
		switch {
		case i%7 == 3:
			if _, err := expire(f.db, ExpireInput{Namespace: f.ns, EnvoyKey: k, NowMs: 9000}); err != nil {
				t.Fatal(err)
			}
			f.active[k] = false
		case i%5 == 1:
			if _, err := drain(f.db, DrainInput{Namespace: f.ns, EnvoyKey: k, NowMs: 9000}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, k := range envoyKeys {
		f.envoys = append(f.envoys, get(t, f.db, f.ns, k))
	}
	return f
}

// want is what a complete listing with in's filters returns, in order.
func (f *fixture) want(in ListInput) []string {
	byKey := map[string]bool{}
	for _, k := range in.EnvoyKeys {
		byKey[k] = true
	}
	var sel []Envoy
	for _, e := range f.envoys {
		if in.PoolName != "" && e.PoolName != in.PoolName {
			continue
		}
		if len(byKey) > 0 && byKey[e.EnvoyKey] || len(byKey) == 0 && f.active[e.EnvoyKey] {
			sel = append(sel, e)
		}
	}
	slices.SortFunc(sel, func(a, b Envoy) int {
		return cursor.Compare(a.CreateTs, []byte(a.EnvoyKey), b.CreateTs, []byte(b.EnvoyKey))
	})
	out := make([]string, len(sel))
	for i, e := range sel {
		out[i] = e.EnvoyKey
	}
	return out
}

func pageAll(t *testing.T, f *fixture, in ListInput) []string {
	t.Helper()
	byKey := map[string]Envoy{}
	for _, e := range f.envoys {
		byKey[e.EnvoyKey] = e
	}
	var got []string
	short := false // the last page was not full: only the empty page may follow
	for pages := 0; ; pages++ {
		if pages > len(f.envoys)+2 {
			t.Fatalf("%+v: paging does not end", in)
		}
		out, err := list(f.db, in)
		if err != nil {
			t.Fatalf("List(%+v): %v", in, err)
		}
		for _, e := range out.Envoys {
			if !equalEnvoy(e, byKey[e.EnvoyKey]) {
				t.Fatalf("listed %+v, Get gives %+v", e, byKey[e.EnvoyKey])
			}
			got = append(got, e.EnvoyKey)
		}
		if out.Cursor == nil {
			if len(out.Envoys) > 0 {
				t.Fatalf("%+v: a page of %d without a cursor; a listing ends with an empty page", in, len(out.Envoys))
			}
			return got
		}
		if len(out.Envoys) == 0 || short {
			t.Fatalf("%+v: a page of %d with a cursor after a short page", in, len(out.Envoys))
		}
		short = len(out.Envoys) < in.Limit
		in.Cursor = *out.Cursor
	}
}

func TestListPagingExactlyOnce(t *testing.T) {
	f := newFixture(t, 300)
	var subset []string
	for i, e := range f.envoys {
		if i%3 == 0 {
			subset = append(subset, e.EnvoyKey)
		}
	}
	subset = append(subset, "unknown-envoy", subset[1], "x", strings.Repeat("k", 20_000))
	for _, pool := range []string{"", "a", "b", "none"} {
		for _, envoyKeys := range [][]string{nil, subset} {
			limits := []int{3, 50, 299, 300, 301, 1000}
			if pool == "" && envoyKeys == nil {
				limits = append(limits, 1, 2)
			}
			for _, limit := range limits {
				in := ListInput{Namespace: f.ns, PoolName: pool, EnvoyKeys: envoyKeys, Limit: limit}
				want := f.want(in)
				if got := pageAll(t, f, in); !slices.Equal(got, want) {
					t.Fatalf("pool %q, %d keys, limit %d: paged %d envoys, want %d in order",
						pool, len(envoyKeys), limit, len(got), len(want))
				}
			}
		}
	}
}

func TestListCursors(t *testing.T) {
	f := newFixture(t, 40)
	out, err := list(f.db, ListInput{Namespace: f.ns})
	if err != nil || out.Cursor == nil || len(out.Envoys) != len(f.want(ListInput{})) {
		t.Fatalf("default listing: %d envoys, cursor %v, %v", len(out.Envoys), out.Cursor, err)
	}
	// The Rivet engine's bare create_ts cursor.
	for _, ts := range []int64{6000, 5000, 4001, 1} {
		out, err := list(f.db, ListInput{Namespace: f.ns, Cursor: strconv.FormatInt(ts, 10), Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var want, got []string
		for _, k := range f.want(ListInput{}) {
			if f.envoyByKey(k).CreateTs < ts {
				want = append(want, k)
			}
		}
		for _, e := range out.Envoys {
			got = append(got, e.EnvoyKey)
		}
		if !slices.Equal(got, want) {
			t.Errorf("legacy cursor %d: %d envoys, want %d", ts, len(got), len(want))
		}
	}
	for _, c := range []string{"?", cursor.Encode(1, nil), cursor.Encode(1, []byte{0xff})} {
		_, err := list(f.db, ListInput{Namespace: f.ns, Cursor: c})
		if e, ok := rerr.As(err); !ok || !rerr.Is(e, rerr.CodeAPIBadRequest) || e.Metadata["field"] != "cursor" {
			t.Errorf("cursor %q: %v", c, err)
		}
	}
	if _, err := list(f.db, ListInput{Namespace: f.ns, Limit: -1}); !rerr.Is(err, rerr.CodeAPIBadRequest) {
		t.Errorf("limit -1: %v", err)
	}
	// The page's last envoy expires before the next page: nothing skipped.
	in := ListInput{Namespace: f.ns, Limit: 5}
	want := f.want(in)
	first, err := list(f.db, in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := expire(f.db, ExpireInput{Namespace: f.ns, EnvoyKey: first.Envoys[4].EnvoyKey, NowMs: 10_000}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range first.Envoys {
		got = append(got, e.EnvoyKey)
	}
	in.Cursor = *first.Cursor
	got = append(got, pageAll(t, f, in)...)
	if !slices.Equal(got, want) {
		t.Fatalf("paged %d envoys, want %d", len(got), len(want))
	}
}

func (f *fixture) envoyByKey(k string) Envoy {
	for _, e := range f.envoys {
		if e.EnvoyKey == k {
			return e
		}
	}
	return Envoy{}
}

// prefetchRecorder records the ranges of each Prefetch through it and its snapshot view.
type prefetchRecorder struct {
	udb.ReadTransaction
	calls [][]udb.KeyRange
}

func (r *prefetchRecorder) Prefetch(ctx context.Context, keys [][]byte, ranges []udb.KeyRange) {
	r.calls = append(r.calls, ranges)
	r.ReadTransaction.Prefetch(ctx, keys, ranges)
}

func (r *prefetchRecorder) Snapshot() udb.ReadTransaction { return r }

// A page asks the store for all of its envoys' records in its first prefetch, with and
// without named keys.
func TestListPrefetchesThePage(t *testing.T) {
	f := newFixture(t, 30)
	for _, envoyKeys := range [][]string{nil, {f.envoys[0].EnvoyKey, f.envoys[3].EnvoyKey, f.envoys[5].EnvoyKey}} {
		rec := &prefetchRecorder{}
		out := opstest.Read(t, f.db, func(r udb.ReadTransaction) (ListOutput, error) {
			rec.ReadTransaction, rec.calls = r, nil
			return List(ctx, rec, ListInput{Namespace: f.ns, EnvoyKeys: envoyKeys, Limit: 10, Datacenter: dc})
		})
		if len(out.Envoys) == 0 || len(rec.calls) == 0 {
			t.Fatalf("%d keys: %d envoys listed, %d prefetches", len(envoyKeys), len(out.Envoys), len(rec.calls))
		}
		var want []udb.KeyRange
		for _, e := range out.Envoys {
			want = append(want, dataRanges(f.ns, e.EnvoyKey)...)
		}
		got := rec.calls[0]
		if len(got) < len(want) {
			t.Fatalf("%d keys: the first prefetch names %d ranges, want the %d of the page's %d envoys", len(envoyKeys), len(got), len(want), len(out.Envoys))
		}
		for _, w := range want {
			if !slices.ContainsFunc(got, func(r udb.KeyRange) bool { return bytes.Equal(r.Begin, w.Begin) && bytes.Equal(r.End, w.End) }) {
				t.Errorf("%d keys: the first prefetch lacks %x", len(envoyKeys), w.Begin)
			}
		}
	}
}
