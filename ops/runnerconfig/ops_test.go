package runnerconfig

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

var ctx = context.Background()

var (
	ns1 = id.New(1)
	ns2 = id.New(1)
)

func normal(delay uint32) keys.RunnerConfig {
	c := defaultCommon()
	c.ActorEvictionDelay = delay
	return keys.RunnerConfig{Normal: &keys.NormalRunnerConfig{RunnerConfigCommon: c}}
}

func serverless(url string, headers map[string]string) keys.RunnerConfig {
	return keys.RunnerConfig{Serverless: &keys.ServerlessRunnerConfig{
		URL: url, Headers: headers, RequestLifespan: 600, MaxConcurrentActors: 1000, DrainGracePeriod: 60,
		SlotsPerRunner: 1, MaxRunners: 1000, RunnerConfigCommon: defaultCommon(),
	}}
}

func upsert(t testing.TB, db udb.Database, ns id.ID, name string, c keys.RunnerConfig) UpsertOutput {
	t.Helper()
	return opstest.Write(t, db, func(tx udb.Transaction) (UpsertOutput, error) {
		return Upsert(ctx, tx, UpsertInput{Namespace: ns, Name: name, Config: c})
	})
}

func del(t testing.TB, db udb.Database, ns id.ID, name string) DeleteOutput {
	t.Helper()
	return opstest.Write(t, db, func(tx udb.Transaction) (DeleteOutput, error) {
		return Delete(ctx, tx, DeleteInput{Namespace: ns, Name: name})
	})
}

func get(db udb.Database, ns id.ID, name string) (Entry, error) {
	return opstest.Transact(db, func(tx udb.Transaction) (Entry, error) {
		return Get(ctx, tx, GetInput{Namespace: ns, Name: name})
	})
}

func list(db udb.Database, in ListInput) (ListOutput, error) {
	return opstest.Transact(db, func(tx udb.Transaction) (ListOutput, error) { return List(ctx, tx, in) })
}

func setProtocolVersion(t testing.TB, db udb.Database, ns id.ID, name string, v uint16) {
	t.Helper()
	opstest.Write(t, db, func(tx udb.Transaction) (struct{}, error) {
		keys.Set(tx, keys.RunnerConfigProtocolVersionKey{Namespace: ns, Name: name}, v)
		return struct{}{}, nil
	})
}

// index returns the by-variant index of ns as "variant:name" strings, and
// checks that each entry holds its config's current value.
func index(t testing.TB, db udb.Database, ns id.ID) []string {
	t.Helper()
	return opstest.Read(t, db, func(r udb.ReadTransaction) ([]string, error) {
		var out []string
		for _, v := range keys.RunnerConfigVariants {
			begin, end := keys.RunnerConfigByVariantKeyRange(ns, v).All()
			kvs, err := r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{}).All(ctx)
			if err != nil {
				return nil, err
			}
			for _, kv := range kvs {
				k, err := keys.UnpackRunnerConfigByVariantKey(kv.Key)
				if err != nil {
					return nil, err
				}
				cfg, err := k.Decode(kv.Value)
				if err != nil {
					return nil, err
				}
				data, _, err := keys.Get(ctx, r, keys.RunnerConfigDataKey{Namespace: ns, Name: k.Name})
				if err != nil || show(data) != show(cfg) {
					t.Errorf("index entry %s:%s = %s, data key = %s, %v", v, k.Name, show(cfg), show(data), err)
				}
				out = append(out, v.String()+":"+k.Name)
			}
		}
		return out, nil
	})
}

func TestUpsertGetDelete(t *testing.T) {
	db := opstest.Open(t)
	if _, err := get(db, ns1, "pool"); !rerr.Is(err, rerr.CodeRunnerConfigNotFound) {
		t.Fatalf("get before upsert: %v", err)
	}
	out := upsert(t, db, ns1, "pool", normal(1))
	if !out.Created || !out.EndpointConfigChanged {
		t.Errorf("first upsert: %+v", out)
	}
	e, err := get(db, ns1, "pool")
	if err != nil || e.Name != "pool" || show(e.Config) != show(normal(1)) || e.ProtocolVersion != nil {
		t.Fatalf("get: %+v, %v", e, err)
	}
	if _, err := get(db, ns2, "pool"); !rerr.Is(err, rerr.CodeRunnerConfigNotFound) {
		t.Errorf("other namespace: %v", err)
	}
	if got := index(t, db, ns1); !slices.Equal(got, []string{"normal:pool"}) {
		t.Errorf("index %v", got)
	}

	// Normal → serverless moves the index entry; the protocol version stays.
	setProtocolVersion(t, db, ns1, "pool", 6)
	s := serverless("https://a.example/", map[string]string{"k": "v"})
	if out := upsert(t, db, ns1, "pool", s); out.Created || !out.EndpointConfigChanged {
		t.Errorf("normal → serverless: %+v", out)
	}
	if got := index(t, db, ns1); !slices.Equal(got, []string{"serverless:pool"}) {
		t.Errorf("index after variant change: %v", got)
	}
	e, err = get(db, ns1, "pool")
	if err != nil || show(e.Config) != show(s) || e.ProtocolVersion == nil || *e.ProtocolVersion != 6 {
		t.Fatalf("get serverless: %+v, %v", e, err)
	}

	// Same url and headers: the endpoint did not change, even if other fields did.
	s2 := serverless("https://a.example/", map[string]string{"k": "v"})
	s2.Serverless.MaxRunners = 5
	if out := upsert(t, db, ns1, "pool", s2); out.EndpointConfigChanged {
		t.Errorf("same endpoint: %+v", out)
	}
	for _, step := range []struct {
		name    string
		c       keys.RunnerConfig
		changed bool
	}{
		{"other url", serverless("https://b.example/", map[string]string{"k": "v"}), true},
		{"other headers", serverless("https://b.example/", map[string]string{"k": "w"}), true},
		{"same again", serverless("https://b.example/", map[string]string{"k": "w"}), false},
		{"no headers", serverless("https://b.example/", nil), true},
		{"empty headers equal none", serverless("https://b.example/", map[string]string{}), false},
		{"to normal", normal(0), true},
		{"normal again", normal(0), true}, // Rivet: a normal config always reports a change
	} {
		if out := upsert(t, db, ns1, "pool", step.c); out.EndpointConfigChanged != step.changed {
			t.Errorf("%s: endpoint_config_changed %v, want %v", step.name, out.EndpointConfigChanged, step.changed)
		}
	}
	if got := index(t, db, ns1); !slices.Equal(got, []string{"normal:pool"}) {
		t.Errorf("index after going back to normal: %v", got)
	}

	// Delete clears the config and its index entry, keeps the protocol version; it is idempotent.
	if out := del(t, db, ns1, "pool"); !out.Existed {
		t.Errorf("delete: %+v", out)
	}
	if _, err := get(db, ns1, "pool"); !rerr.Is(err, rerr.CodeRunnerConfigNotFound) {
		t.Errorf("get after delete: %v", err)
	}
	if got := index(t, db, ns1); len(got) != 0 {
		t.Errorf("index after delete: %v", got)
	}
	if out := del(t, db, ns1, "pool"); out.Existed {
		t.Errorf("second delete: %+v", out)
	}
	if l, err := list(db, ListInput{Namespace: ns1}); err != nil || len(l.Configs) != 0 || l.Cursor != nil {
		t.Errorf("list after delete (the protocol version alone is no config): %+v, %v", l, err)
	}
	upsert(t, db, ns1, "pool", normal(0))
	if e, err := get(db, ns1, "pool"); err != nil || e.ProtocolVersion == nil || *e.ProtocolVersion != 6 {
		t.Errorf("recreated config lost the protocol version: %+v, %v", e, err)
	}
}

func TestUpsertRefusesBadInput(t *testing.T) {
	db := opstest.Open(t)
	bad := serverless("https://a.example/", nil)
	bad.Serverless.SlotsPerRunner = 0
	huge := normal(0)
	meta := `{"x":"` + strings.Repeat("a", udb.MaxValueSize) + `"}`
	huge.Metadata = &meta
	for name, tc := range map[string]struct {
		in   UpsertInput
		want rerr.Code
	}{
		"zero namespace":     {UpsertInput{Name: "p", Config: normal(0)}, rerr.CodeCoreInternalError},
		"empty name":         {UpsertInput{Namespace: ns1, Config: normal(0)}, rerr.CodeAPIBadRequest},
		"slash":              {UpsertInput{Namespace: ns1, Name: "a/b", Config: normal(0)}, rerr.CodeAPIBadRequest},
		"invalid config":     {UpsertInput{Namespace: ns1, Name: "p", Config: bad}, rerr.CodeRunnerConfigInvalid},
		"too large to store": {UpsertInput{Namespace: ns1, Name: "p", Config: huge}, rerr.CodeRunnerConfigInvalid},
		"short stop threshold": {UpsertInput{Namespace: ns1, Name: "p", Config: serverless("https://a.example/", nil),
			ActorStopThresholdMs: 59_999}, rerr.CodeRunnerConfigInvalid},
	} {
		_, err := opstest.Transact(db, func(tx udb.Transaction) (UpsertOutput, error) { return Upsert(ctx, tx, tc.in) })
		if !rerr.Is(err, tc.want) {
			t.Errorf("%s: %v, want %s", name, err, tc.want)
		}
	}
	if got := index(t, db, ns1); len(got) != 0 {
		t.Errorf("a refused upsert wrote %v", got)
	}
	for _, name := range []string{"", "a/b"} {
		if _, err := opstest.Transact(db, func(tx udb.Transaction) (DeleteOutput, error) {
			return Delete(ctx, tx, DeleteInput{Namespace: ns1, Name: name})
		}); !rerr.Is(err, rerr.CodeAPIBadRequest) {
			t.Errorf("delete %q: %v", name, err)
		}
		if _, err := get(db, ns1, name); !rerr.Is(err, rerr.CodeAPIBadRequest) {
			t.Errorf("get %q: %v", name, err)
		}
	}
}

// TestConcurrentUpserts: two upserts of one name that read the same state
// conflict; the loser, retried, sees the winner's config (so its
// endpoint_config_changed and index cleanup are computed against it).
func TestConcurrentUpserts(t *testing.T) {
	db := opstest.Open(t)
	upsert(t, db, ns1, "pool", serverless("https://a.example/", nil))
	a, b := opstest.Begin(t, db), opstest.Begin(t, db)
	toNormal := func(tx udb.Transaction) error {
		_, err := Upsert(ctx, tx, UpsertInput{Namespace: ns1, Name: "pool", Config: normal(0)})
		return err
	}
	var outB UpsertOutput
	sameEndpoint := func(tx udb.Transaction) error {
		var err error
		outB, err = Upsert(ctx, tx, UpsertInput{Namespace: ns1, Name: "pool", Config: serverless("https://a.example/", nil)})
		return err
	}
	if err := toNormal(a.Tx()); err != nil {
		t.Fatal(err)
	}
	if err := sameEndpoint(b.Tx()); err != nil {
		t.Fatal(err)
	}
	if outB.EndpointConfigChanged {
		t.Error("before the conflict, b saw the same endpoint")
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	err := b.Commit()
	if !opstest.IsConflict(err) {
		t.Fatalf("second commit: %v, want a conflict", err)
	}
	if err := b.Retry(err, sameEndpoint); err != nil {
		t.Fatal(err)
	}
	if !outB.EndpointConfigChanged {
		t.Error("retried over a normal config, b must report a change")
	}
	if got := index(t, db, ns1); !slices.Equal(got, []string{"serverless:pool"}) {
		t.Errorf("index %v", got)
	}

	// An upsert racing a delete: whichever commits second retries; the index stays right.
	a, b = opstest.Begin(t, db), opstest.Begin(t, db)
	if _, err := Delete(ctx, a.Tx(), DeleteInput{Namespace: ns1, Name: "pool"}); err != nil {
		t.Fatal(err)
	}
	if err := toNormal(b.Tx()); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	err = a.Commit()
	if !opstest.IsConflict(err) {
		t.Fatalf("delete after upsert: %v, want a conflict", err)
	}
	if err := a.Retry(err, func(tx udb.Transaction) error {
		out, err := Delete(ctx, tx, DeleteInput{Namespace: ns1, Name: "pool"})
		if err == nil && !out.Existed {
			t.Error("retried delete did not see the upserted config")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got := index(t, db, ns1); len(got) != 0 {
		t.Errorf("index %v", got)
	}
}

// TestListDuringUpserts lists while configs change variant: every listing
// is a consistent snapshot (each name once, under its current variant).
func TestListDuringUpserts(t *testing.T) {
	db := opstest.Open(t)
	const n = 20
	for i := range n {
		upsert(t, db, ns1, fmt.Sprintf("p%02d", i), normal(0))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := fmt.Sprintf("p%02d", i%n)
			c := normal(uint32(i))
			if i%2 == 1 {
				c = serverless("https://a.example/", nil)
			}
			if _, err := opstest.Transact(db, func(tx udb.Transaction) (UpsertOutput, error) {
				return Upsert(ctx, tx, UpsertInput{Namespace: ns1, Name: name, Config: c})
			}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 50 {
		all, err := list(db, ListInput{Namespace: ns1})
		if err != nil || len(all.Configs) != n {
			t.Fatalf("list: %d configs, %v", len(all.Configs), err)
		}
		var byVariant int
		for _, v := range keys.RunnerConfigVariants {
			l, err := list(db, ListInput{Namespace: ns1, Variant: &v, Limit: 7})
			for err == nil {
				byVariant += len(l.Configs)
				if l.Cursor == nil {
					break
				}
				l, err = list(db, ListInput{Namespace: ns1, Cursor: *l.Cursor, Limit: 7})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		// Paging the variants one after the other is not one snapshot, so only bound it.
		if byVariant == 0 || byVariant > 2*n {
			t.Fatalf("by variant: %d", byVariant)
		}
	}
	close(stop)
	wg.Wait()
}

// TestListPaging pages through a namespace with every filter and several
// page sizes: each config appears exactly once, in name order, with its
// protocol version.
func TestListPaging(t *testing.T) {
	db := opstest.Open(t)
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[keys.RunnerConfigVariant][]string{}
	var all []string
	pvs := map[string]uint16{}
	for i := range 150 {
		name := fmt.Sprintf("pool-%03d", rng.IntN(1000))
		if slices.Contains(all, name) {
			continue
		}
		c := normal(uint32(i))
		if rng.IntN(3) == 0 {
			c = serverless("https://a.example/"+name, nil)
		}
		upsert(t, db, ns1, name, c)
		want[c.Variant()] = append(want[c.Variant()], name)
		all = append(all, name)
		if rng.IntN(4) == 0 {
			pvs[name] = uint16(rng.IntN(7))
			setProtocolVersion(t, db, ns1, name, pvs[name])
		}
	}
	// Noise: another namespace, and an orphan protocol version between two configs.
	upsert(t, db, ns2, "pool-000", normal(0))
	setProtocolVersion(t, db, ns1, "pool-5000", 3)
	for _, names := range want {
		slices.Sort(names)
	}
	slices.Sort(all)

	page := func(in ListInput) []string {
		t.Helper()
		var got []string
		seen := map[string]bool{}
		filter := in.Variant // the listing's variant: the query's, else the cursor's
		if vs, _, _ := strings.Cut(in.Cursor, ":"); filter == nil && vs != "" {
			v, _ := keys.ParseRunnerConfigVariant(vs)
			filter = &v
		}
		for pages := 0; ; pages++ {
			if pages > 1000 {
				t.Fatal("paging does not end")
			}
			out, err := list(db, in)
			if err != nil {
				t.Fatalf("%+v: %v", in, err)
			}
			if len(out.Configs) > in.Limit && in.Limit > 0 && len(in.Names) == 0 {
				t.Fatalf("page of %d, limit %d", len(out.Configs), in.Limit)
			}
			for _, e := range out.Configs {
				if seen[e.Name] {
					t.Fatalf("%s listed twice", e.Name)
				}
				seen[e.Name] = true
				got = append(got, e.Name)
				pv, has := pvs[e.Name]
				if (e.ProtocolVersion != nil) != has || has && *e.ProtocolVersion != pv {
					t.Errorf("%s: protocol version %v, want %v (%v)", e.Name, e.ProtocolVersion, pv, has)
				}
				if filter != nil && e.Config.Variant() != *filter {
					t.Errorf("%s is %s, filter %s", e.Name, e.Config.Variant(), *filter)
				}
			}
			if out.Cursor == nil {
				if len(out.Configs) > 0 && len(in.Names) == 0 {
					t.Fatalf("a page of %d without a cursor; a listing ends with an empty page", len(out.Configs))
				}
				return got
			}
			if len(out.Configs) == 0 {
				t.Fatal("empty page with a cursor")
			}
			prefix := ":"
			if filter != nil {
				prefix = filter.String() + ":"
			}
			if want := prefix + out.Configs[len(out.Configs)-1].Name; *out.Cursor != want {
				t.Fatalf("cursor %q, want %q", *out.Cursor, want)
			}
			in.Cursor = *out.Cursor
		}
	}
	named := []string{all[3], all[0], "missing", all[len(all)-1], all[3], all[40]}
	wantNamed := []string{all[0], all[3], all[40], all[len(all)-1]}
	for _, limit := range []int{1, 2, 7, 100, 0, MaxListLimit} {
		if got := page(ListInput{Namespace: ns1, Limit: limit}); !slices.Equal(got, all) {
			t.Errorf("limit %d, all: %d of %d\n%v", limit, len(got), len(all), got)
		}
		for _, v := range keys.RunnerConfigVariants {
			if got := page(ListInput{Namespace: ns1, Limit: limit, Variant: &v}); !slices.Equal(got, want[v]) {
				t.Errorf("limit %d, %s: %v\nwant %v", limit, v, got, want[v])
			}
			var wantV []string
			for _, n := range wantNamed {
				if slices.Contains(want[v], n) {
					wantV = append(wantV, n)
				}
			}
			if got := page(ListInput{Namespace: ns1, Limit: limit, Variant: &v, Names: named}); !slices.Equal(got, wantV) {
				t.Errorf("limit %d, %s, named: %v\nwant %v", limit, v, got, wantV)
			}
		}
		if got := page(ListInput{Namespace: ns1, Limit: limit, Names: named}); !slices.Equal(got, wantNamed) {
			t.Errorf("limit %d, named: %v\nwant %v", limit, got, wantNamed)
		}
	}

	// A variant cursor passed alone keeps the filter; the query's variant wins over it.
	v := keys.RunnerConfigServerless
	out, err := list(db, ListInput{Namespace: ns1, Variant: &v, Limit: 1})
	if err != nil || out.Cursor == nil {
		t.Fatal(out, err)
	}
	rest := page(ListInput{Namespace: ns1, Cursor: *out.Cursor, Limit: 5})
	if !slices.Equal(rest, want[v][1:]) {
		t.Errorf("cursor alone: %v", rest)
	}
	nv := keys.RunnerConfigNormal
	after, err := list(db, ListInput{Namespace: ns1, Variant: &nv, Cursor: "serverless:" + want[nv][2], Limit: 1})
	if err != nil || len(after.Configs) != 1 || after.Configs[0].Name != want[nv][3] || *after.Cursor != "normal:"+want[nv][3] {
		t.Errorf("query variant wins: %+v, %v", after, err)
	}
	// A cursor whose name is gone continues after it.
	del(t, db, ns1, all[5])
	got := page(ListInput{Namespace: ns1, Cursor: ":" + all[5], Limit: 3})
	if !slices.Equal(got, all[6:]) {
		t.Errorf("after a deleted name: %v", got)
	}
}

func TestListRejects(t *testing.T) {
	db := opstest.Open(t)
	bad := keys.RunnerConfigVariant(9)
	for name, tc := range map[string]struct {
		in    ListInput
		field string
	}{
		"negative limit":  {ListInput{Namespace: ns1, Limit: -1}, "limit"},
		"unknown variant": {ListInput{Namespace: ns1, Variant: &bad}, "variant"},
		"cursor no colon": {ListInput{Namespace: ns1, Cursor: "pool"}, "cursor"},
		"cursor variant":  {ListInput{Namespace: ns1, Cursor: "Normal:pool"}, "cursor"},
		"cursor no name":  {ListInput{Namespace: ns1, Cursor: "normal:"}, "cursor"},
		"cursor too long": {ListInput{Namespace: ns1, Cursor: ":" + strings.Repeat("a", MaxNameLen+1)}, "cursor"},
		"bad name":        {ListInput{Namespace: ns1, Names: []string{"ok", "a/b"}}, "runner_name"},
	} {
		_, err := list(db, tc.in)
		if e, ok := rerr.As(err); !ok || !rerr.Is(e, rerr.CodeAPIBadRequest) || e.Metadata["field"] != tc.field {
			t.Errorf("%s: %v, want api.bad_request naming %s", name, err, tc.field)
		}
	}
}

// TestCorruptConfig: stored bytes that do not decode are store.corrupt for
// readers and upserts; Delete clears them.
func TestCorruptConfig(t *testing.T) {
	db := opstest.Open(t)
	upsert(t, db, ns1, "good", normal(0))
	opstest.Write(t, db, func(tx udb.Transaction) (struct{}, error) {
		tx.Set(keys.RunnerConfigDataKey{Namespace: ns1, Name: "bad"}.Pack(), []byte{0x06, 0x00, 0x07})
		tx.Set(keys.RunnerConfigByVariantKey{Namespace: ns1, Variant: keys.RunnerConfigNormal, Name: "bad"}.Pack(), []byte{0x01})
		return struct{}{}, nil
	})
	nv := keys.RunnerConfigNormal
	for name, f := range map[string]func() error{
		"get":          func() error { _, err := get(db, ns1, "bad"); return err },
		"list":         func() error { _, err := list(db, ListInput{Namespace: ns1}); return err },
		"list variant": func() error { _, err := list(db, ListInput{Namespace: ns1, Variant: &nv}); return err },
		"list names":   func() error { _, err := list(db, ListInput{Namespace: ns1, Names: []string{"bad"}}); return err },
		"upsert": func() error {
			_, err := opstest.Transact(db, func(tx udb.Transaction) (UpsertOutput, error) {
				return Upsert(ctx, tx, UpsertInput{Namespace: ns1, Name: "bad", Config: normal(0)})
			})
			return err
		},
	} {
		if err := f(); !rerr.Is(err, rerr.CodeStoreCorrupt) {
			t.Errorf("%s: %v, want store.corrupt", name, err)
		}
	}
	if out := del(t, db, ns1, "bad"); !out.Existed {
		t.Error("delete of the corrupt config")
	}
	if l, err := list(db, ListInput{Namespace: ns1}); err != nil || len(l.Configs) != 1 {
		t.Errorf("after delete: %+v, %v", l, err)
	}
	// An index entry whose variant does not match its config.
	opstest.Write(t, db, func(tx udb.Transaction) (struct{}, error) {
		keys.Set(tx, keys.RunnerConfigByVariantKey{Namespace: ns1, Variant: keys.RunnerConfigServerless, Name: "x"}, normal(0))
		return struct{}{}, nil
	})
	sv := keys.RunnerConfigServerless
	if _, err := list(db, ListInput{Namespace: ns1, Variant: &sv}); !rerr.Is(err, rerr.CodeStoreCorrupt) {
		t.Errorf("mismatched index entry: %v", err)
	}
	// Metadata that is not JSON.
	bad := normal(0)
	bad.Metadata = strp("{")
	opstest.Write(t, db, func(tx udb.Transaction) (struct{}, error) {
		keys.Set(tx, keys.RunnerConfigDataKey{Namespace: ns2, Name: "m"}, bad)
		return struct{}{}, nil
	})
	if _, err := get(db, ns2, "m"); !rerr.Is(err, rerr.CodeStoreCorrupt) {
		t.Errorf("bad metadata: %v", err)
	}
}

// TestGetSerializable: a serializable Get conflicts with a concurrent change
// of the config; the default snapshot Get does not.
func TestGetSerializable(t *testing.T) {
	db := opstest.Open(t)
	upsert(t, db, ns1, "pool", normal(0))
	for _, serializable := range []bool{false, true} {
		reader := opstest.Begin(t, db)
		if _, err := Get(ctx, reader.Tx(), GetInput{Namespace: ns1, Name: "pool", Serializable: serializable}); err != nil {
			t.Fatal(err)
		}
		reader.Tx().Set([]byte("\x15\x7fmarker"), []byte{}) // make it a write transaction
		upsert(t, db, ns1, "pool", normal(1))
		if err := reader.Commit(); opstest.IsConflict(err) != serializable {
			t.Errorf("serializable %v: commit %v", serializable, err)
		}
	}
}
