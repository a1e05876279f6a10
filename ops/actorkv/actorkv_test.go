package actorkv

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

var (
	bg      = context.Background()
	version = []byte("berth-test")
)

func b(s string) []byte { return []byte(s) }

func bs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func put(db udb.Database, aid id.ID, now int64, kv ...string) error {
	var ks, vs [][]byte
	for i := 0; i < len(kv); i += 2 {
		ks, vs = append(ks, b(kv[i])), append(vs, b(kv[i+1]))
	}
	return putKV(db, aid, now, ks, vs)
}

func putKV(db udb.Database, aid id.ID, now int64, ks, vs [][]byte) error {
	_, err := opstest.Transact(db, func(tx udb.Transaction) (struct{}, error) {
		return struct{}{}, Put(bg, tx, PutInput{ActorID: aid, Keys: ks, Values: vs, Version: version, NowMs: now})
	})
	return err
}

func mustPut(t *testing.T, db udb.Database, aid id.ID, kv ...string) {
	t.Helper()
	if err := put(db, aid, 1000, kv...); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, db udb.Database, aid id.ID, ks ...string) []Entry {
	t.Helper()
	return opstest.Read(t, db, func(r udb.ReadTransaction) ([]Entry, error) {
		return Get(bg, r, GetInput{ActorID: aid, Keys: bs(ks...)})
	})
}

func list(t *testing.T, db udb.Database, in ListInput) []Entry {
	t.Helper()
	return opstest.Read(t, db, func(r udb.ReadTransaction) ([]Entry, error) { return List(bg, r, in) })
}

func size(t *testing.T, db udb.Database, aid id.ID) int64 {
	t.Helper()
	return opstest.Read(t, db, func(r udb.ReadTransaction) (int64, error) { return Size(bg, r, aid) })
}

func write(t *testing.T, db udb.Database, f func(tx udb.Transaction) error) error {
	t.Helper()
	_, err := opstest.Transact(db, func(tx udb.Transaction) (struct{}, error) { return struct{}{}, f(tx) })
	return err
}

// keysOf returns the entries' keys as strings.
func keysOf(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = string(e.Key)
	}
	return out
}

// quotaSize is what the size counter must hold for these entries.
func quotaSize(es []Entry) int64 {
	var n int64
	for _, e := range es {
		n += e.size()
	}
	return n
}

// checkSize requires the counter to match the stored entries.
func checkSize(t *testing.T, db udb.Database, aid id.ID) {
	t.Helper()
	all := list(t, db, ListInput{ActorID: aid})
	if got, want := size(t, db, aid), quotaSize(all); got != want {
		t.Fatalf("size counter %d, stored entries take %d", got, want)
	}
}

func TestPutGet(t *testing.T) {
	db := opstest.Open(t)
	aid, other := id.New(1), id.New(1)
	big := bytes.Repeat([]byte("0123456789abcdefghij"), 1500) // 30,000 bytes: 3 chunks
	big = append(big, 'z')                                    // and a fourth of one byte
	ks := [][]byte{b("a"), {}, {0x00, 0xff}, b("big"), b("empty")}
	vs := [][]byte{b("1"), b("empty key"), b("nul"), big, {}}
	if err := putKV(db, aid, 1234, ks, vs); err != nil {
		t.Fatal(err)
	}
	mustPut(t, db, other, "a", "other actor")

	got := opstest.Read(t, db, func(r udb.ReadTransaction) ([]Entry, error) {
		return Get(bg, r, GetInput{ActorID: aid, Keys: [][]byte{b("missing"), b("big"), {}, b("a"), b("big"), b("empty"), {0x00, 0xff}, {0x00}}})
	})
	// Only found keys, in the order asked, each once.
	want := []Entry{{Key: b("big"), Value: big}, {Key: []byte{}, Value: b("empty key")}, {Key: b("a"), Value: b("1")}, {Key: b("empty"), Value: []byte{}}, {Key: []byte{0x00, 0xff}, Value: b("nul")}}
	if len(got) != len(want) {
		t.Fatalf("got keys %q, want %d entries", keysOf(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) {
			t.Errorf("entry %d: %q = %d bytes, want %q = %d bytes", i, got[i].Key, len(got[i].Value), want[i].Key, len(want[i].Value))
		}
		if string(got[i].Metadata.Version) != string(version) || got[i].Metadata.UpdateTs != 1234 {
			t.Errorf("entry %d metadata %+v", i, got[i].Metadata)
		}
	}
	// The big value is stored in 10,000-byte chunks: 0..2 full, 3 with one byte.
	rows := opstest.Read(t, db, func(r udb.ReadTransaction) ([]udb.KeyValue, error) {
		begin, end := keys.ActorKVKeyRange(aid, b("big"))
		return r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{}).All(bg)
	})
	if len(rows) != 5 || len(rows[0].Value) != keys.ChunkSize || len(rows[3].Value) != 1 {
		t.Fatalf("big value rows: %d", len(rows))
	}
	// An empty value has no chunk, only its metadata.
	if es := get(t, db, aid, "empty"); len(es) != 1 || len(es[0].Value) != 0 {
		t.Fatalf("empty value: %+v", es)
	}
	if es := get(t, db, other, "a", "big"); len(keysOf(es)) != 1 || string(es[0].Value) != "other actor" {
		t.Fatalf("other actor: %+v", es)
	}
	if es := get(t, db, aid); len(es) != 0 {
		t.Fatalf("no keys: %+v", es)
	}
	checkSize(t, db, aid)
	checkSize(t, db, other)
}

func TestPutOverwrite(t *testing.T) {
	db := opstest.Open(t)
	aid := id.New(1)
	mustPut(t, db, aid, "k", strings.Repeat("x", 35_000))
	if err := put(db, aid, 2000, "k", "small"); err != nil {
		t.Fatal(err)
	}
	es := get(t, db, aid, "k")
	if len(es) != 1 || string(es[0].Value) != "small" || es[0].Metadata.UpdateTs != 2000 {
		t.Fatalf("after overwrite: %q %+v", keysOf(es), es)
	}
	checkSize(t, db, aid)
	if got := size(t, db, aid); got != 3+5 {
		t.Fatalf("size %d, want 8", got)
	}
	// A key given twice in one put: the later value wins, counted once.
	if err := put(db, aid, 3000, "d", "first", "e", "x", "d", "second"); err != nil {
		t.Fatal(err)
	}
	if es := get(t, db, aid, "d"); len(es) != 1 || string(es[0].Value) != "second" {
		t.Fatalf("duplicate put: %+v", es)
	}
	checkSize(t, db, aid)
}

func TestList(t *testing.T) {
	db := opstest.Open(t)
	aid := id.New(1)
	stored := []string{"", "\x00", "a", "a\x00", "a\x01", "ab", "abc", "ab\xff", "b", "c", "d", "\xff"}
	var kv []string
	for _, k := range stored {
		kv = append(kv, k, "v"+k)
	}
	mustPut(t, db, aid, kv...)
	mustPut(t, db, id.New(1), "a", "other actor") // never listed
	u := func(n uint64) *uint64 { return &n }
	tests := []struct {
		name string
		in   ListInput
		want []string
	}{
		{"all", ListInput{}, stored},
		{"all reverse", ListInput{Reverse: true}, []string{"\xff", "d", "c", "b", "ab\xff", "abc", "ab", "a\x01", "a\x00", "a", "\x00", ""}},
		{"range inclusive", ListInput{Query: ListRange{Start: b("a"), End: b("ab")}}, []string{"a", "a\x00", "a\x01", "ab"}},
		{"range exclusive", ListInput{Query: ListRange{Start: b("a"), End: b("ab"), Exclusive: true}}, []string{"a", "a\x00", "a\x01"}},
		{"range between stored keys", ListInput{Query: ListRange{Start: b("aa"), End: b("bb")}}, []string{"ab", "abc", "ab\xff", "b"}},
		{"range start == end inclusive", ListInput{Query: ListRange{Start: b("b"), End: b("b")}}, []string{"b"}},
		{"range start == end exclusive", ListInput{Query: ListRange{Start: b("b"), End: b("b"), Exclusive: true}}, nil},
		{"range start > end", ListInput{Query: ListRange{Start: b("d"), End: b("a")}}, nil},
		{"range nul bytes", ListInput{Query: ListRange{Start: b("a\x00"), End: b("a\x01")}}, []string{"a\x00", "a\x01"}},
		{"range reverse limit", ListInput{Query: ListRange{Start: b("a"), End: b("d")}, Reverse: true, Limit: u(2)}, []string{"d", "c"}},
		{"prefix", ListInput{Query: ListPrefix{Prefix: b("ab")}}, []string{"ab", "abc", "ab\xff"}},
		{"prefix reverse", ListInput{Query: ListPrefix{Prefix: b("a")}, Reverse: true}, []string{"ab\xff", "abc", "ab", "a\x01", "a\x00", "a"}},
		{"prefix nul", ListInput{Query: ListPrefix{Prefix: b("a\x00")}}, []string{"a\x00"}},
		{"prefix after", ListInput{Query: ListPrefixAfter{Prefix: b("ab"), After: b("ab")}}, []string{"abc", "ab\xff"}},
		{"prefix after, limit", ListInput{Query: ListPrefixAfter{Prefix: b("a"), After: b("a\x01")}, Limit: u(2)}, []string{"ab", "abc"}},
		{"prefix after past it", ListInput{Query: ListPrefixAfter{Prefix: b("ab"), After: b("b")}}, nil},
		{"after before the prefix", ListInput{Query: ListPrefixAfter{Prefix: b("ab"), After: b("a")}}, []string{"ab", "abc", "ab\xff"}},
		{"after a key ending in 0xff", ListInput{Query: ListPrefixAfter{Prefix: b("ab"), After: b("ab\xff")}}, nil},
		{"prefix 0xff", ListInput{Query: ListPrefix{Prefix: b("\xff")}}, []string{"\xff"}},
		{"prefix empty", ListInput{Query: ListPrefix{}}, stored},
		{"prefix longer than keys", ListInput{Query: ListPrefix{Prefix: b("abcd")}}, nil},
		{"limit 0", ListInput{Limit: u(0)}, nil},
		{"limit 1", ListInput{Limit: u(1)}, []string{""}},
		{"limit 3 reverse", ListInput{Limit: u(3), Reverse: true}, []string{"\xff", "d", "c"}},
		{"limit above total", ListInput{Limit: u(1 << 40)}, stored},
	}
	for _, tt := range tests {
		tt.in.ActorID = aid
		es := list(t, db, tt.in)
		if got := keysOf(es); !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
		for _, e := range es {
			if string(e.Value) != "v"+string(e.Key) {
				t.Errorf("%s: %q = %q", tt.name, e.Key, e.Value)
			}
		}
	}
}

// TestListLargeValues: multi-chunk values come back whole in both directions and with a
// limit that stops inside the rows of the next key.
func TestListLargeValues(t *testing.T) {
	db := opstest.Open(t)
	aid := id.New(1)
	vals := map[string]string{}
	for i, k := range []string{"a", "b", "c"} {
		vals[k] = strings.Repeat(string(rune('x'+i)), 20_000+i*7_001)
		mustPut(t, db, aid, k, vals[k])
	}
	one := uint64(2)
	for _, in := range []ListInput{{}, {Reverse: true}, {Limit: &one}, {Reverse: true, Limit: &one}} {
		in.ActorID = aid
		es := list(t, db, in)
		want := 3
		if in.Limit != nil {
			want = 2
		}
		if len(es) != want {
			t.Fatalf("%+v: %d entries", in, len(es))
		}
		for _, e := range es {
			if string(e.Value) != vals[string(e.Key)] {
				t.Fatalf("%+v: %q has %d bytes, want %d", in, e.Key, len(e.Value), len(vals[string(e.Key)]))
			}
		}
	}
}

func TestDelete(t *testing.T) {
	db := opstest.Open(t)
	aid := id.New(1)
	mustPut(t, db, aid, "a", "1", "b", strings.Repeat("2", 15_000), "c", "3")
	err := write(t, db, func(tx udb.Transaction) error {
		return Delete(bg, tx, DeleteInput{ActorID: aid, Keys: bs("b", "missing", "a", "b")})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(list(t, db, ListInput{ActorID: aid})); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("after delete: %q", got)
	}
	checkSize(t, db, aid)
}

func TestDeleteRange(t *testing.T) {
	stored := []string{"a", "b", "b\x00", "ba", "c", "d"}
	tests := []struct {
		start, end string
		left       []string
	}{
		{"b", "c", []string{"a", "c", "d"}},           // half-open: c stays
		{"a", "a", stored},                            // empty
		{"c", "a", stored},                            // start after end: nothing
		{"", "\xff", nil},                             // everything
		{"b\x00", "bb", []string{"a", "b", "c", "d"}}, // between stored keys
		{"x", "z", stored},                            // no key in the range
	}
	for _, tt := range tests {
		db := opstest.Open(t)
		aid := id.New(1)
		var kv []string
		for _, k := range stored {
			kv = append(kv, k, strings.Repeat(k, 3000))
		}
		mustPut(t, db, aid, kv...)
		err := write(t, db, func(tx udb.Transaction) error {
			return DeleteRange(bg, tx, DeleteRangeInput{ActorID: aid, Start: b(tt.start), End: b(tt.end)})
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := keysOf(list(t, db, ListInput{ActorID: aid})); !slices.Equal(got, tt.left) && !(len(got) == 0 && len(tt.left) == 0) {
			t.Errorf("delete [%q, %q): left %q, want %q", tt.start, tt.end, got, tt.left)
		}
		checkSize(t, db, aid)
	}
}

func TestDropAll(t *testing.T) {
	db := opstest.Open(t)
	aid, other := id.New(1), id.New(1)
	mustPut(t, db, aid, "a", "1", "b", strings.Repeat("2", 25_000))
	mustPut(t, db, other, "a", "kept")
	if err := write(t, db, func(tx udb.Transaction) error { DropAll(tx, aid); return nil }); err != nil {
		t.Fatal(err)
	}
	if es := list(t, db, ListInput{ActorID: aid}); len(es) != 0 {
		t.Fatalf("after drop: %q", keysOf(es))
	}
	if n := size(t, db, aid); n != 0 {
		t.Fatalf("size after drop %d", n)
	}
	// Nothing of the actor is left in its subspace, the counter included.
	rows := opstest.Read(t, db, func(r udb.ReadTransaction) ([]udb.KeyValue, error) {
		begin, end := keys.ActorKVRange(aid)
		return r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{}).All(bg)
	})
	if len(rows) != 0 {
		t.Fatalf("%d rows left", len(rows))
	}
	if es := get(t, db, other, "a"); len(es) != 1 {
		t.Fatal("drop touched another actor")
	}
	mustPut(t, db, aid, "new", "after drop")
	checkSize(t, db, aid)
}

// TestLimits: each limit is refused with an error naming it, and nothing is written.
func TestLimits(t *testing.T) {
	long := strings.Repeat("k", MaxKeySize-1) // 2047 + 2 > 2048
	maxKey := strings.Repeat("k", MaxKeySize-2)
	many := make([][]byte, MaxKeys+1)
	for i := range many {
		many[i] = fmt.Appendf(nil, "k%d", i)
	}
	vals := func(n, size int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = bytes.Repeat([]byte{'v'}, size)
		}
		return out
	}
	// 8 keys of 4 bytes (+2 each) with values of 122,000 bytes: 976,048 bytes, under 976 KiB
	// (999,424); with values of 125,000: 1,000,048, over.
	fitKeys := bs("k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7")
	for i := range fitKeys {
		fitKeys[i] = append(fitKeys[i], 'x', 'x')
	}
	u := func(n uint64) *uint64 { return &n }
	tests := []struct {
		name string
		op   func(tx udb.Transaction) error
		msg  string // "" means allowed
	}{
		{"get 129 keys", func(tx udb.Transaction) error { _, err := Get(bg, tx, GetInput{Keys: many}); return err }, "a maximum of 128 keys is allowed"},
		{"get 128 keys", func(tx udb.Transaction) error { _, err := Get(bg, tx, GetInput{Keys: many[:128]}); return err }, ""},
		{"get long key", func(tx udb.Transaction) error { _, err := Get(bg, tx, GetInput{Keys: bs(long)}); return err }, "key is too long (max 2048 bytes)"},
		{"get 2046-byte key", func(tx udb.Transaction) error { _, err := Get(bg, tx, GetInput{Keys: bs(maxKey)}); return err }, ""},
		{"list long start", func(tx udb.Transaction) error {
			_, err := List(bg, tx, ListInput{Query: ListRange{Start: b(long), End: b("z")}})
			return err
		}, "start key is too long (max 2048 bytes)"},
		{"list long end", func(tx udb.Transaction) error {
			_, err := List(bg, tx, ListInput{Query: ListRange{Start: b("a"), End: b(long)}, Limit: u(1)})
			return err
		}, "end key is too long (max 2048 bytes)"},
		{"list long prefix", func(tx udb.Transaction) error {
			_, err := List(bg, tx, ListInput{Query: ListPrefix{Prefix: b(long)}})
			return err
		}, "prefix key is too long (max 2048 bytes)"},
		{"put mismatched lists", func(tx udb.Transaction) error {
			return Put(bg, tx, PutInput{Keys: bs("a", "b"), Values: bs("1")})
		}, "Keys list length != values list length"},
		{"put 129 entries", func(tx udb.Transaction) error { return Put(bg, tx, PutInput{Keys: many, Values: vals(len(many), 1)}) }, "A maximum of 128 key-value entries is allowed"},
		{"put long key", func(tx udb.Transaction) error { return Put(bg, tx, PutInput{Keys: bs(long), Values: bs("v")}) }, "key is too long (max 2048 bytes)"},
		{"put 2046-byte key", func(tx udb.Transaction) error { return Put(bg, tx, PutInput{Keys: bs(maxKey), Values: bs("v")}) }, ""},
		{"put value over 128 KiB", func(tx udb.Transaction) error {
			return Put(bg, tx, PutInput{Keys: bs("a"), Values: vals(1, MaxValueSize+1)})
		}, "value is too large (max 128 KiB)"},
		{"put value of 128 KiB", func(tx udb.Transaction) error {
			return Put(bg, tx, PutInput{Keys: bs("a"), Values: vals(1, MaxValueSize)})
		}, ""},
		{"put payload just under 976 KiB", func(tx udb.Transaction) error { return Put(bg, tx, PutInput{Keys: fitKeys, Values: vals(8, 122_000)}) }, ""},
		{"put payload over 976 KiB", func(tx udb.Transaction) error { return Put(bg, tx, PutInput{Keys: fitKeys, Values: vals(8, 125_000)}) }, "total payload is too large (max 976 KiB)"},
		{"delete 129 keys", func(tx udb.Transaction) error { return Delete(bg, tx, DeleteInput{Keys: many}) }, "a maximum of 128 keys is allowed"},
		{"delete long key", func(tx udb.Transaction) error { return Delete(bg, tx, DeleteInput{Keys: bs(long)}) }, "key is too long (max 2048 bytes)"},
		{"delete range long start", func(tx udb.Transaction) error {
			return DeleteRange(bg, tx, DeleteRangeInput{Start: b(long), End: b("z")})
		}, "start key is too long (max 2048 bytes)"},
		{"delete range long end", func(tx udb.Transaction) error {
			return DeleteRange(bg, tx, DeleteRangeInput{Start: b("a"), End: b(long)})
		}, "end key is too long (max 2048 bytes)"},
	}
	for _, tt := range tests {
		db := opstest.Open(t)
		err := write(t, db, tt.op)
		if tt.msg == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		e, ok := rerr.As(err)
		if !ok || !rerr.Is(e, rerr.CodeValidationInvalidInput) || e.Message != tt.msg {
			t.Errorf("%s: %v, want validation.invalid_input %q", tt.name, err, tt.msg)
			continue
		}
		rows := opstest.Read(t, db, func(r udb.ReadTransaction) ([]udb.KeyValue, error) {
			return r.GetRange(udb.FirstGreaterOrEqual([]byte{}), udb.FirstGreaterOrEqual([]byte{0xff}), udb.RangeOptions{}).All(bg)
		})
		if len(rows) != 0 {
			t.Errorf("%s: %d rows written", tt.name, len(rows))
		}
	}
}

func TestStorageQuota(t *testing.T) {
	db := opstest.Open(t)
	aid := id.New(1)
	mustPut(t, db, aid, "old", strings.Repeat("o", 100))
	// Pretend the store is nearly full: 10 bytes left.
	used := size(t, db, aid)
	if err := write(t, db, func(tx udb.Transaction) error {
		keys.Add(tx, keys.ActorKVSizeKey{ActorID: aid}, MaxStorageSize-10-used)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	err := put(db, aid, 1, "new", "1234567890") // 3+2+10 = 15 > 10
	e, ok := rerr.As(err)
	if !ok || !rerr.Is(e, rerr.CodeActorKVStorageQuotaExceeded) || e.Metadata["remaining"] != int64(10) || e.Metadata["payload_size"] != int64(15) {
		t.Fatalf("over quota: %v (%+v)", err, e)
	}
	if es := get(t, db, aid, "new"); len(es) != 0 {
		t.Fatal("over-quota put wrote its key")
	}
	// Exactly filling the quota is allowed, and so is replacing a value with a smaller one
	// when the store is full.
	if err := put(db, aid, 1, "new", "12345"); err != nil {
		t.Fatalf("put filling the quota: %v", err)
	}
	if got := size(t, db, aid); got != MaxStorageSize {
		t.Fatalf("size %d, want %d", got, MaxStorageSize)
	}
	if err := put(db, aid, 1, "new", "1234"); err != nil {
		t.Fatalf("shrinking a value in a full store: %v", err)
	}
	if err := put(db, aid, 1, "new", "123456"); !rerr.Is(err, rerr.CodeActorKVStorageQuotaExceeded) {
		t.Fatalf("growing a value past the quota: %v", err)
	}
	if err := put(db, aid, 1, "new", "12345"); err != nil {
		t.Fatalf("growing a value up to the quota: %v", err)
	}
	// Deleting frees space.
	if err := write(t, db, func(tx udb.Transaction) error {
		return Delete(bg, tx, DeleteInput{ActorID: aid, Keys: bs("new")})
	}); err != nil {
		t.Fatal(err)
	}
	if err := put(db, aid, 1, "x", "1234567"); err != nil {
		t.Fatalf("after delete: %v", err)
	}
}

// TestSizeCounterModel runs random puts, deletes, delete-ranges and drops against a map and
// requires the store, a full list and the size counter to agree with it after each.
func TestSizeCounterModel(t *testing.T) {
	db := opstest.Open(t)
	aid := id.New(1)
	rng := rand.New(rand.NewPCG(5, 7))
	model := map[string]string{}
	key := func() string { return string([]byte{byte('a' + rng.IntN(6)), byte(rng.IntN(3))})[:1+rng.IntN(2)] }
	for step := range 300 {
		var err error
		switch op := rng.IntN(20); {
		case op < 10:
			n := 1 + rng.IntN(4)
			var ks, vs [][]byte
			for range n {
				k, v := key(), strings.Repeat("v", rng.IntN(25_000))
				ks, vs = append(ks, b(k)), append(vs, b(v))
				model[k] = v
			}
			err = putKV(db, aid, int64(step), ks, vs)
		case op < 15:
			var ks []string
			for range 1 + rng.IntN(3) {
				k := key()
				ks = append(ks, k)
				delete(model, k)
			}
			err = write(t, db, func(tx udb.Transaction) error { return Delete(bg, tx, DeleteInput{ActorID: aid, Keys: bs(ks...)}) })
		case op < 19:
			s, e := key(), key()
			for k := range model {
				if k >= s && k < e {
					delete(model, k)
				}
			}
			err = write(t, db, func(tx udb.Transaction) error {
				return DeleteRange(bg, tx, DeleteRangeInput{ActorID: aid, Start: b(s), End: b(e)})
			})
		default:
			clear(model)
			err = write(t, db, func(tx udb.Transaction) error { DropAll(tx, aid); return nil })
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		all := list(t, db, ListInput{ActorID: aid})
		want := slices.Sorted(maps.Keys(model))
		if got := keysOf(all); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("step %d: keys %q, want %q", step, got, want)
		}
		var wantSize int64
		for i, e := range all {
			if string(e.Value) != model[want[i]] {
				t.Fatalf("step %d: %q has %d bytes, want %d", step, e.Key, len(e.Value), len(model[want[i]]))
			}
			wantSize += e.size()
		}
		if got := size(t, db, aid); got != wantSize {
			t.Fatalf("step %d: size counter %d, want %d", step, got, wantSize)
		}
	}
}

// TestConcurrentPutsOfOneKey: two puts of one key that read the same old size cannot both
// commit; the retried one sees the first's value, and the counter stays exact.
func TestConcurrentPutsOfOneKey(t *testing.T) {
	db := opstest.Open(t)
	aid := id.New(1)
	mustPut(t, db, aid, "k", strings.Repeat("x", 100))
	f := func(v string) func(tx udb.Transaction) error {
		return func(tx udb.Transaction) error {
			return Put(bg, tx, PutInput{ActorID: aid, Keys: bs("k"), Values: bs(v), Version: version, NowMs: 1})
		}
	}
	a, c := opstest.Begin(t, db), opstest.Begin(t, db)
	if err := f("short")(a.Tx()); err != nil {
		t.Fatal(err)
	}
	if err := f(strings.Repeat("y", 50))(c.Tx()); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	err := c.Commit()
	if !opstest.IsConflict(err) {
		t.Fatalf("second put committed (%v); the counter would subtract the old size twice", err)
	}
	if err := c.Retry(err, f(strings.Repeat("y", 50))); err != nil {
		t.Fatal(err)
	}
	checkSize(t, db, aid)
	// Puts of different keys of one actor do not conflict (the counter is added to, never
	// read serializably).
	a, c = opstest.Begin(t, db), opstest.Begin(t, db)
	pa := func(tx udb.Transaction) error {
		return Put(bg, tx, PutInput{ActorID: aid, Keys: bs("p"), Values: bs("1"), Version: version})
	}
	pc := func(tx udb.Transaction) error {
		return Put(bg, tx, PutInput{ActorID: aid, Keys: bs("q"), Values: bs("22"), Version: version})
	}
	if err := pa(a.Tx()); err != nil {
		t.Fatal(err)
	}
	if err := pc(c.Tx()); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(); err != nil {
		t.Fatalf("put of another key conflicted: %v", err)
	}
	checkSize(t, db, aid)
}

// TestCorruptRows: a value chunk without metadata, or a gap in the chunks, is store.corrupt,
// never a wrong value.
func TestCorruptRows(t *testing.T) {
	for name, rows := range map[string][]packedRow{
		"chunk without metadata": {{keys.ActorKVChunkKey{Key: b("a")}, b("x")}},
		"chunk gap": {
			{keys.ActorKVChunkKey{Key: b("a")}, b("x")},
			{keys.ActorKVChunkKey{Key: b("a"), Chunk: 2}, b("z")},
			{keys.ActorKVMetadataKey{Key: b("a")}, keys.ActorKVMetadataKey{}.Encode(keys.ActorKVMetadata{})},
		},
		"bad metadata": {{keys.ActorKVMetadataKey{Key: b("a")}, b("\x05ab")}},
	} {
		db := opstest.Open(t)
		aid := id.New(1)
		if err := write(t, db, func(tx udb.Transaction) error {
			for _, r := range rows {
				tx.Set(r.withActor(aid), r.value)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		_, err := opstest.Transact(db, func(tx udb.Transaction) ([]Entry, error) {
			return Get(bg, tx, GetInput{ActorID: aid, Keys: bs("a")})
		})
		_, lerr := opstest.Transact(db, func(tx udb.Transaction) ([]Entry, error) {
			return List(bg, tx, ListInput{ActorID: aid, Reverse: true})
		})
		for _, err := range []error{err, lerr} {
			if !rerr.Is(err, rerr.CodeStoreCorrupt) {
				t.Errorf("%s: %v, want store.corrupt", name, err)
			}
		}
	}
}

type packedRow struct {
	key   any // ActorKVChunkKey or ActorKVMetadataKey without the actor
	value []byte
}

func (r packedRow) withActor(aid id.ID) []byte {
	switch k := r.key.(type) {
	case keys.ActorKVChunkKey:
		k.ActorID = aid
		return k.Pack()
	case keys.ActorKVMetadataKey:
		k.ActorID = aid
		return k.Pack()
	}
	panic("bad row")
}

// The whole KV comes with the start command while it fits in MaxPreloadSize; above, nothing.
func TestPreload(t *testing.T) {
	db := opstest.Open(t)
	aid := id.New(1)
	preload := func() ([]Entry, bool) {
		type out struct {
			e []Entry
			c bool
		}
		o := opstest.Read(t, db, func(r udb.ReadTransaction) (out, error) {
			e, c, err := Preload(bg, r, aid)
			return out{e, c}, err
		})
		return o.e, o.c
	}
	if e, c := preload(); len(e) != 0 || !c {
		t.Fatalf("empty KV: %v %v, want complete and empty", e, c)
	}
	mustPut(t, db, aid, "a", "1", "b", "22")
	e, c := preload()
	if !c || len(e) != 2 || string(e[0].Key) != "a" || string(e[1].Value) != "22" || string(e[1].Metadata.Version) != string(version) {
		t.Fatalf("small KV: %+v %v", e, c)
	}
	// Fill to just under the limit, then past it.
	big := strings.Repeat("x", 100<<10)
	for i := 0; i < 9; i++ {
		mustPut(t, db, aid, fmt.Sprintf("big%d", i), big)
	}
	if e, c := preload(); !c || len(e) != 11 {
		t.Fatalf("under the limit: %d entries, complete %v", len(e), c)
	}
	mustPut(t, db, aid, "big9", big, "big10", big)
	if e, c := preload(); c || e != nil {
		t.Fatalf("over the limit: %d entries, complete %v", len(e), c)
	}
}
