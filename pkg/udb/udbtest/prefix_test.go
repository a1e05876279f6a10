package udbtest_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/pkg/udb/udbtest"
)

// The suite again, on key-prefixed views of the embedded driver (udb.WithPrefix
// and the prefix= URL parameter), with keys of the whole store around the
// view so that selectors and ranges that leave the view are exercised.

var testPrefix = []byte{0x70, 0x01}

// neighbours are stored keys outside testPrefix's space, on both sides of it.
var neighbours = [][]byte{{0x00}, {0x70}, {0x70, 0x00, 0xff}, {0x70, 0x01 - 1, 0xff, 0xff}, {0x70, 0x02}, {0x70, 0x02, 0x00}, {0xfe}}

func seedNeighbours(t testing.TB, db udb.Database) {
	t.Helper()
	_, err := db.Transact(context.Background(), func(tx udb.Transaction) (any, error) {
		for _, k := range neighbours {
			tx.Set(k, []byte("outside"))
		}
		return nil, nil
	})
	if err != nil {
		t.Fatalf("seeding keys outside the prefix: %v", err)
	}
}

func TestPrefixedEmbeddedMem(t *testing.T) {
	var o opener
	raw := o.open(t, "mem://")
	seedNeighbours(t, raw)
	view, err := udb.WithPrefix(raw, testPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := view.(udb.Clock); !ok {
		t.Error("the prefixed view hides the driver's udb.Clock")
	}
	if _, ok := view.(udb.FaultInjector); !ok {
		t.Error("the prefixed view hides the driver's udb.FaultInjector")
	}
	udbtest.Run(t, udbtest.Harness{
		Open: func(testing.TB) udb.Database { return view },
		OpenWithMaxWatches: func(t testing.TB, n int) udb.Database {
			return o.open(t, fmt.Sprintf("mem://?max_watches=%d&prefix=%x", n, testPrefix))
		},
		KeyOverhead: len(testPrefix),
	})
	// Every key the suite wrote is under the prefix, and the neighbours are intact.
	rows, err := readAll(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range rows {
		if !bytes.HasPrefix(kv.Key, testPrefix) && !isNeighbour(kv.Key) {
			t.Errorf("key %q outside the prefix after the suite", kv.Key)
		}
	}
	for _, k := range neighbours {
		if !hasKey(rows, k) {
			t.Errorf("key %q outside the prefix was removed by the suite", k)
		}
	}
}

func TestPrefixedEmbeddedFile(t *testing.T) {
	dir := t.TempDir()
	var o opener
	raw := o.open(t, "file://"+dir)
	seedNeighbours(t, raw)
	if err := o.close(raw); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("file://%s?prefix=%x", dir, testPrefix)
	shared := o.open(t, url)
	udbtest.Run(t, udbtest.Harness{
		Open: func(testing.TB) udb.Database { return shared },
		OpenWithMaxWatches: func(t testing.TB, n int) udb.Database {
			return o.open(t, fmt.Sprintf("file://%s?prefix=%x&max_watches=%d", t.TempDir(), testPrefix, n))
		},
		Reopen: func(t testing.TB, db udb.Database) udb.Database {
			if err := o.close(db); err != nil {
				t.Fatalf("closing for reopen: %v", err)
			}
			shared = o.open(t, url)
			return shared
		},
		KeyOverhead: len(testPrefix),
	})
}

func isNeighbour(k []byte) bool {
	for _, n := range neighbours {
		if bytes.Equal(n, k) {
			return true
		}
	}
	return false
}

func hasKey(rows []udb.KeyValue, k []byte) bool {
	for _, kv := range rows {
		if bytes.Equal(kv.Key, k) {
			return true
		}
	}
	return false
}

func readAll(db udb.Database) ([]udb.KeyValue, error) {
	v, err := db.ReadTransact(context.Background(), func(tx udb.ReadTransaction) (any, error) {
		return tx.GetRange(udb.FirstGreaterOrEqual(nil), udb.FirstGreaterOrEqual([]byte{0xff}), udb.RangeOptions{}).All(context.Background())
	})
	if err != nil {
		return nil, err
	}
	return v.([]udb.KeyValue), nil
}

func keysOf(rows []udb.KeyValue) string {
	var b bytes.Buffer
	for i, kv := range rows {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%q", kv.Key)
	}
	return b.String()
}

// TestPrefixIsolation: two views of one store never see, clear or conflict
// with each other's keys, at the edges of their spaces included.
func TestPrefixIsolation(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var o opener
	raw := o.open(t, "mem://")
	seedNeighbours(t, raw)
	view := func(p []byte) udb.Database {
		db, err := udb.WithPrefix(raw, p)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	a, b := view([]byte{0x70, 0x01}), view([]byte{0x70, 0x02})
	set := func(db udb.Database, kv ...string) {
		t.Helper()
		_, err := db.Transact(ctx, func(tx udb.Transaction) (any, error) {
			for i := 0; i < len(kv); i += 2 {
				tx.Set([]byte(kv[i]), []byte(kv[i+1]))
			}
			return nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	rng := func(db udb.Database, begin, end udb.KeySelector, opt udb.RangeOptions) string {
		t.Helper()
		v, err := db.ReadTransact(ctx, func(tx udb.ReadTransaction) (any, error) {
			return tx.GetRange(begin, end, opt).All(ctx)
		})
		if err != nil {
			t.Fatalf("GetRange: %v", err)
		}
		return keysOf(v.([]udb.KeyValue))
	}
	getKey := func(db udb.Database, sel udb.KeySelector) string {
		t.Helper()
		v, err := db.ReadTransact(ctx, func(tx udb.ReadTransaction) (any, error) { return tx.GetKey(ctx, sel) })
		if err != nil {
			t.Fatalf("GetKey: %v", err)
		}
		return fmt.Sprintf("%q", v)
	}
	// b's space holds two of the neighbours already: "" and "\x00".
	set(a, "", "a0", "m", "a1", "\xfe\xff", "a2")
	set(b, "", "b0", "n", "b1", "\xfe", "b2")

	all := func(db udb.Database, opt udb.RangeOptions) string {
		return rng(db, udb.FirstGreaterOrEqual(nil), udb.FirstGreaterOrEqual([]byte{0xff}), opt)
	}
	for _, c := range []struct{ name, got, want string }{
		{"a forward", all(a, udb.RangeOptions{}), `"" "m" "\xfe\xff"`},
		{"b forward", all(b, udb.RangeOptions{}), `"" "\x00" "n" "\xfe"`},
		{"a reverse", all(a, udb.RangeOptions{Reverse: true}), `"\xfe\xff" "m" ""`},
		{"b reverse limit 2", all(b, udb.RangeOptions{Reverse: true, Limit: 2}), `"\xfe" "n"`},
		{"a want-all limit 1", all(a, udb.RangeOptions{Limit: 1, Mode: udb.StreamingModeWantAll}), `""`},
		{"a exact limit 2", all(a, udb.RangeOptions{Limit: 2, Mode: udb.StreamingModeExact}), `"" "m"`},
		{"a serial", all(a, udb.RangeOptions{Mode: udb.StreamingModeSerial}), `"" "m" "\xfe\xff"`},
		{"a from LastLessThan(m)-5", rng(a, udb.LastLessThan([]byte("m")).Add(-5), udb.FirstGreaterThan([]byte("m")), udb.RangeOptions{}), `"" "m"`},
		{"b to FirstGreaterThan(n)+9", rng(b, udb.FirstGreaterOrEqual([]byte("n")), udb.FirstGreaterThan([]byte("n")).Add(9), udb.RangeOptions{}), `"n" "\xfe"`},
		{"a LastLessThan(\"\")", getKey(a, udb.LastLessThan(nil)), `""`},
		{"b LastLessOrEqual(\"\")", getKey(b, udb.LastLessOrEqual(nil)), `""`},
		{"b LastLessThan(\"\\x00\")", getKey(b, udb.LastLessThan([]byte{0})), `""`},
		{"a LastLessThan(m)", getKey(a, udb.LastLessThan([]byte("m"))), `""`},
		{"a LastLessThan(m)-1", getKey(a, udb.LastLessThan([]byte("m")).Add(-1)), `""`},
		{"b FirstGreaterThan(\\xfe)", getKey(b, udb.FirstGreaterThan([]byte("\xfe"))), `"\xff"`},
		{"a FirstGreaterThan(\\xfe\\xff)", getKey(a, udb.FirstGreaterThan([]byte("\xfe\xff"))), `"\xff"`},
		{"a FirstGreaterOrEqual(m)+1", getKey(a, udb.FirstGreaterOrEqual([]byte("m")).Add(1)), `"\xfe\xff"`},
		{"a FirstGreaterOrEqual(m)+2", getKey(a, udb.FirstGreaterOrEqual([]byte("m")).Add(2)), `"\xff"`},
		{"a LastLessThan(\\xff)", getKey(a, udb.LastLessThan([]byte{0xff})), `"\xfe\xff"`},
		{"b LastLessOrEqual(\\xff)+1", getKey(b, udb.LastLessOrEqual([]byte{0xff}).Add(1)), `"\xff"`},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, c.got, c.want)
		}
	}

	// A range clear of a's whole space leaves b and the store's other keys.
	_, err := a.Transact(ctx, func(tx udb.Transaction) (any, error) {
		tx.ClearRange(nil, []byte{0xff})
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := all(a, udb.RangeOptions{}); got != "" {
		t.Errorf("a after ClearRange(\"\", \\xff): got %s, want nothing", got)
	}
	if got, want := all(b, udb.RangeOptions{}), `"" "\x00" "n" "\xfe"`; got != want {
		t.Errorf("b after a's ClearRange: got %s, want %s", got, want)
	}

	// Versionstamped keys and values land in the writer's space, at the
	// placeholder the caller named.
	var stamp udb.VersionstampFuture
	_, err = a.Transact(ctx, func(tx udb.Transaction) (any, error) {
		key := append([]byte("vs/"), make([]byte, 10)...)
		key = append(key, '/')
		key = binary.LittleEndian.AppendUint32(key, 3)
		tx.Atomic(udb.MutationSetVersionstampedKey, key, []byte("k"))
		val := binary.LittleEndian.AppendUint32(append([]byte("v:"), make([]byte, 10)...), 2)
		tx.Atomic(udb.MutationSetVersionstampedValue, []byte("vv"), val)
		stamp = tx.GetVersionstamp()
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := stamp.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantKey := fmt.Sprintf("%q", append(append([]byte("vs/"), vs[:]...), '/'))
	if got, want := all(a, udb.RangeOptions{}), wantKey+` "vv"`; got != want {
		t.Errorf("a after versionstamped writes: got %s, want %s", got, want)
	}
	v, err := a.ReadTransact(ctx, func(tx udb.ReadTransaction) (any, error) { return tx.Get(ctx, []byte("vv")) })
	if err != nil || !bytes.Equal(v.([]byte), append([]byte("v:"), vs[:]...)) {
		t.Errorf("versionstamped value: got %q, %v, want %q", v, err, append([]byte("v:"), vs[:]...))
	}
	if got, want := all(b, udb.RangeOptions{}), `"" "\x00" "n" "\xfe"`; got != want {
		t.Errorf("b after a's versionstamped writes: got %s, want %s", got, want)
	}

	// System keys of a view are its own.
	_, err = a.Transact(ctx, func(tx udb.Transaction) (any, error) {
		if err := tx.Options().SetAccessSystemKeys(); err != nil {
			return nil, err
		}
		tx.Set([]byte("\xff/sys"), []byte("a"))
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err = b.ReadTransact(ctx, func(tx udb.ReadTransaction) (any, error) {
		return tx.GetKey(ctx, udb.FirstGreaterThan([]byte("\xfe")))
	})
	if err != nil || string(v.([]byte)) != "\xff" {
		t.Errorf("b's FirstGreaterThan(\\xfe) after a wrote a system key: got %q, %v, want \"\\xff\"", v, err)
	}
	if got, want := all(a, udb.RangeOptions{}), wantKey+` "vv"`; got != want {
		t.Errorf("a's normal keys after writing a system key: got %s, want %s", got, want)
	}

	// Conflicts: a read in a conflicts with a write of the same key in a,
	// never with one in b.
	conflict := func(writer udb.Database) error {
		t.Helper()
		tx, err := a.CreateTransaction()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Cancel()
		if _, err := tx.Get(ctx, []byte("k")); err != nil {
			t.Fatal(err)
		}
		set(writer, "k", "x")
		tx.Set([]byte("other"), []byte("y"))
		return tx.Commit(ctx)
	}
	if err := conflict(b); err != nil {
		t.Errorf("a's read of k after b wrote its own k: commit got %v, want success", err)
	}
	if err := conflict(a); !udb.HasCode(err, udb.CodeNotCommitted) {
		t.Errorf("a's read of k after a's k was written: commit got %v, want not_committed", err)
	}

	// Stored layout: every key of a view is the prefix and the view's key.
	rows, err := readAll(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"\x70\x01vv", "\x70\x01\xff/sys", "\x70\x02n", "\x70\x02"} {
		if !hasKey(rows, []byte(k)) {
			t.Errorf("stored keys lack %q: %s", k, keysOf(rows))
		}
	}
	for _, k := range neighbours {
		if !hasKey(rows, k) {
			t.Errorf("key %q outside both views was removed", k)
		}
	}
}

// TestPrefixWatch: a view's watch fires on a change of the view's key.
func TestPrefixWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var o opener
	a := o.open(t, "mem://?prefix=7001")
	tx, err := a.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	w := tx.Watch([]byte("w"))
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Transact(ctx, func(tx udb.Transaction) (any, error) { tx.Set([]byte("w"), []byte("1")); return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(ctx); err != nil {
		t.Errorf("watch on w after w changed: %v", err)
	}
	tx2, err := a.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	defer tx2.Cancel()
	if err := tx2.Watch([]byte{0xff}).Wait(ctx); !udb.HasCode(err, udb.CodeKeyOutsideLegalRange) {
		t.Errorf(`watch on "\xff": got %v, want key_outside_legal_range`, err)
	}
}

func TestPrefixURL(t *testing.T) {
	for _, url := range []string{"mem://?prefix=zz", "mem://?prefix=", "mem://?prefix=ff01"} {
		if db, err := udb.Open(context.Background(), url); err == nil {
			db.Close()
			t.Errorf("udb.Open(%q): no error", url)
		}
	}
}
