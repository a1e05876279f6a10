package udbtest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
)

// Section B: range reads, key selectors, streaming modes, iteration and
// read-your-writes merging.
func rangeCases() []testCase {
	return []testCase{
		{"09_OrderAndLimit", testOrderAndLimit},
		{"10_LimitZeroUnlimited", testLimitZero},
		{"11_EmptyAndInvertedRange", testEmptyRange},
		{"12_KeySelectors", testKeySelectors},
		{"13_SelectorEndpoints", testSelectorEndpoints},
		{"14_StreamingModes", testStreamingModes},
		{"15_Iterate20000Rows", testIterateManyRows},
		{"16_RYWRangeMerge", testRYWRangeMerge},
	}
}

// letters seeds keys "a".."j" with values "1".."10".
func (e *env) seedLetters() []pair {
	var ps []pair
	for i, c := range "abcdefghij" {
		ps = append(ps, pair{string(c), fmt.Sprint(i + 1)})
	}
	e.set(ps...)
	return ps
}

// reversed returns ps in reverse order.
func reversed(ps []pair) []pair {
	out := make([]pair, len(ps))
	for i, p := range ps {
		out[len(ps)-1-i] = p
	}
	return out
}

// 9. Forward and reverse order; a limit returns the first N rows, and reverse
// with a limit returns the last N rows in descending order.
func testOrderAndLimit(t *testing.T, h Harness) {
	e := newEnv(t, h)
	all := e.seedLetters()
	tx := e.tx()
	b, end := e.k(), e.k("\xff")
	e.expectRows("forward", e.rngKeys(tx, b, end, udb.RangeOptions{}), all...)
	e.expectRows("reverse", e.rngKeys(tx, b, end, udb.RangeOptions{Reverse: true}), reversed(all)...)
	e.expectRows("forward limit 3", e.rngKeys(tx, b, end, udb.RangeOptions{Limit: 3}), all[:3]...)
	e.expectRows("reverse limit 3", e.rngKeys(tx, b, end, udb.RangeOptions{Limit: 3, Reverse: true}),
		reversed(all)[:3]...)
	e.expectRows("forward [c, f)", e.rngKeys(tx, e.k("c"), e.k("f"), udb.RangeOptions{}), all[2:5]...)
	e.expectRows("reverse [c, f) limit 2", e.rngKeys(tx, e.k("c"), e.k("f"), udb.RangeOptions{Limit: 2, Reverse: true}),
		pair{"e", "5"}, pair{"d", "4"})
	e.expectRows("forward limit past the end", e.rngKeys(tx, b, end, udb.RangeOptions{Limit: 100}), all...)
	e.expectRows("reverse limit 1 over [a, b)", e.rngKeys(tx, e.k("a"), e.k("b"), udb.RangeOptions{Limit: 1, Reverse: true}),
		pair{"a", "1"})
	e.expectRows("snapshot reverse limit 4", e.rngKeys(tx.Snapshot(), b, end, udb.RangeOptions{Limit: 4, Reverse: true}),
		reversed(all)[:4]...)
}

// 10. Limit 0 is unlimited.
func testLimitZero(t *testing.T, h Harness) {
	e := newEnv(t, h)
	all := e.seedLetters()
	tx := e.tx()
	e.expectRows("limit 0 forward", e.rngKeys(tx, e.k(), e.k("\xff"), udb.RangeOptions{Limit: 0}), all...)
	e.expectRows("limit 0 reverse", e.rngKeys(tx, e.k(), e.k("\xff"), udb.RangeOptions{Limit: 0, Reverse: true}),
		reversed(all)...)
}

// 11. A range whose begin is at or after its end is empty, without error.
func testEmptyRange(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.seedLetters()
	tx := e.tx()
	for _, c := range []struct {
		name       string
		begin, end udb.KeySelector
		opt        udb.RangeOptions
	}{
		{"begin == end", udb.FirstGreaterOrEqual(e.k("c")), udb.FirstGreaterOrEqual(e.k("c")), udb.RangeOptions{}},
		{"begin > end", udb.FirstGreaterOrEqual(e.k("f")), udb.FirstGreaterOrEqual(e.k("c")), udb.RangeOptions{}},
		{"begin > end reverse", udb.FirstGreaterOrEqual(e.k("f")), udb.FirstGreaterOrEqual(e.k("c")), udb.RangeOptions{Reverse: true}},
		{"begin > end limit 1", udb.FirstGreaterOrEqual(e.k("f")), udb.FirstGreaterOrEqual(e.k("c")), udb.RangeOptions{Limit: 1}},
		{"selectors resolving inverted", udb.FirstGreaterThan(e.k("d")), udb.LastLessOrEqual(e.k("d")), udb.RangeOptions{}},
		{"selectors resolving equal", udb.FirstGreaterOrEqual(e.k("cc")), udb.FirstGreaterOrEqual(e.k("cd")), udb.RangeOptions{}},
		{"empty gap", udb.FirstGreaterOrEqual(e.k("c\x00")), udb.FirstGreaterOrEqual(e.k("d")), udb.RangeOptions{}},
	} {
		kvs, err := tx.GetRange(c.begin, c.end, c.opt).All(e.ctx)
		if expectOK(t, c.name, err) && len(kvs) != 0 {
			t.Errorf("%s: got %s, want no rows", c.name, e.rows(kvs))
		}
	}
	it := tx.GetRange(udb.FirstGreaterOrEqual(e.k("f")), udb.FirstGreaterOrEqual(e.k("c")), udb.RangeOptions{})
	if it.Next(e.ctx) {
		t.Errorf("Next over an inverted range: got row %s, want none", e.strip(it.KeyValue().Key))
	}
	expectOK(t, "Err after Next over an inverted range", it.Err())
}

// 12. The four selector forms, with offsets, resolve as FoundationDB does;
// resolving before the first key gives "" and past the last gives "\xff".
func testKeySelectors(t *testing.T, h Harness) {
	e := newEnv(t, h)
	// Keys b, d, f, h, j; the probes between them exercise every form.
	e.set(pair{"b", "1"}, pair{"d", "2"}, pair{"f", "3"}, pair{"h", "4"}, pair{"j", "5"})
	tx := e.tx()
	for _, c := range []struct {
		sel  udb.KeySelector
		want string
	}{
		{udb.FirstGreaterOrEqual(e.k("d")), "d"},
		{udb.FirstGreaterOrEqual(e.k("c")), "d"},
		{udb.FirstGreaterThan(e.k("d")), "f"},
		{udb.FirstGreaterThan(e.k("c")), "d"},
		{udb.LastLessThan(e.k("d")), "b"},
		{udb.LastLessThan(e.k("e")), "d"},
		{udb.LastLessOrEqual(e.k("d")), "d"},
		{udb.LastLessOrEqual(e.k("e")), "d"},
		{udb.FirstGreaterOrEqual(e.k("b")).Add(2), "f"},
		{udb.FirstGreaterOrEqual(e.k("c")).Add(3), "j"},
		{udb.FirstGreaterThan(e.k("b")).Add(1), "f"},
		{udb.FirstGreaterThan(e.k("f")).Add(-1), "f"},
		{udb.FirstGreaterOrEqual(e.k("f")).Add(-2), "b"},
		{udb.LastLessThan(e.k("j")).Add(-2), "d"},
		{udb.LastLessThan(e.k("i")).Add(1), "j"},
		{udb.LastLessOrEqual(e.k("h")).Add(-3), "b"},
		{udb.LastLessOrEqual(e.k("c")).Add(2), "f"},
		{udb.KeySelector{Key: e.k("e"), OrEqual: false, Offset: 3}, "j"},
		{udb.KeySelector{Key: e.k("e"), OrEqual: true, Offset: -1}, "b"},
		{udb.KeySelector{Key: e.k("f"), OrEqual: true, Offset: 0}, "f"},
		{udb.KeySelector{Key: e.k("f"), OrEqual: false, Offset: 0}, "d"},
	} {
		e.expectKey("GetKey("+e.sel(c.sel)+")", e.getKey(tx, c.sel), e.k(c.want))
		e.expectKey("snapshot GetKey("+e.sel(c.sel)+")", e.getKey(tx.Snapshot(), c.sel), e.k(c.want))
	}

	t.Run("WholeKeyspace", func(t *testing.T) {
		// These hold on any database: nothing sorts before "", and keys
		// past the normal key space are hidden without system-key access.
		db := h.Open(t)
		e2 := newEnvDB(t, db)
		e2.set(pair{"x", "1"}) // the database has at least one key
		tx := e2.tx()
		for _, c := range []struct {
			sel  udb.KeySelector
			want string
		}{
			{udb.LastLessThan(nil), ""},
			{udb.LastLessThan([]byte{}), ""},
			{udb.LastLessOrEqual([]byte{}).Add(-5), ""},
			{udb.LastLessThan(e2.k("x")).Add(-1 << 20), ""},
			{udb.FirstGreaterOrEqual([]byte("\xff")), "\xff"},
			{udb.FirstGreaterOrEqual(e2.k("x")).Add(1 << 20), "\xff"},
			{udb.LastLessThan([]byte("\xff")).Add(3), "\xff"},
		} {
			k, err := tx.GetKey(e2.ctx, c.sel)
			if expectOK(t, "GetKey("+e2.sel(c.sel)+")", err) && !bytes.Equal(k, []byte(c.want)) {
				t.Errorf("GetKey(%s): got %q, want %q", e2.sel(c.sel), k, c.want)
			}
		}
		// With system keys readable, the end of the key space is "\xff\xff".
		tx2 := e2.tx()
		expectOK(t, "SetReadSystemKeys", tx2.Options().SetReadSystemKeys())
		k, err := tx2.GetKey(e2.ctx, udb.FirstGreaterOrEqual([]byte("\xff\xff")))
		if expectOK(t, `GetKey(FirstGreaterOrEqual("\xff\xff")) with system keys`, err) && string(k) != "\xff\xff" {
			t.Errorf(`GetKey(FirstGreaterOrEqual("\xff\xff")) with system keys: got %q, want "\xff\xff"`, k)
		}
	})
}

// 13. Range endpoints may be selectors: FirstGreaterThan makes the end
// inclusive, FirstGreaterThan as begin excludes the key, offsets shift both.
func testSelectorEndpoints(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"a", "1"}, pair{"b", "2"}, pair{"c", "3"}, pair{"d", "4"}, pair{"e", "5"})
	tx := e.tx()
	for _, c := range []struct {
		name       string
		begin, end udb.KeySelector
		want       string
	}{
		{"[b, d] via FirstGreaterThan end", udb.FirstGreaterOrEqual(e.k("b")), udb.FirstGreaterThan(e.k("d")), "bcd"},
		{"(a, d) via FirstGreaterThan begin", udb.FirstGreaterThan(e.k("a")), udb.FirstGreaterOrEqual(e.k("d")), "bc"},
		{"LastLessOrEqual(b) .. LastLessThan(e)", udb.LastLessOrEqual(e.k("b")), udb.LastLessThan(e.k("e")), "bc"},
		{"offsets +1 / -1", udb.FirstGreaterOrEqual(e.k("a")).Add(1), udb.FirstGreaterOrEqual(e.k("e")).Add(-1), "bc"},
		{"between keys", udb.FirstGreaterOrEqual(e.k("bb")), udb.FirstGreaterOrEqual(e.k("dd")), "cd"},
		{"LastLessThan begin", udb.LastLessThan(e.k("c")), udb.FirstGreaterThan(e.k("c")), "bc"},
		{"whole subspace", udb.FirstGreaterOrEqual(e.k()), udb.FirstGreaterOrEqual(e.k("\xff")), "abcde"},
	} {
		want := make([]pair, 0, len(c.want))
		for _, r := range c.want {
			want = append(want, pair{string(r), fmt.Sprint(int(r-'a') + 1)})
		}
		e.expectRows(c.name+" forward", e.rng(tx, c.begin, c.end, udb.RangeOptions{}), want...)
		e.expectRows(c.name+" reverse", e.rng(tx, c.begin, c.end, udb.RangeOptions{Reverse: true}), reversed(want)...)
	}
}

// allModes is every streaming mode udb defines.
var allModes = []struct {
	name string
	mode udb.StreamingMode
}{
	{"Iterator", udb.StreamingModeIterator},
	{"WantAll", udb.StreamingModeWantAll},
	{"Exact", udb.StreamingModeExact},
	{"Small", udb.StreamingModeSmall},
	{"Medium", udb.StreamingModeMedium},
	{"Large", udb.StreamingModeLarge},
	{"Serial", udb.StreamingModeSerial},
}

// 14. Every streaming mode gives the same rows; Exact without a limit fails
// with exact_mode_without_limits (2210).
func testStreamingModes(t *testing.T, h Harness) {
	e := newEnv(t, h)
	const n = 1500
	var want []pair
	tx := e.tx()
	for i := range n {
		p := pair{fmt.Sprintf("row/%05d", i), fmt.Sprintf("%0100d", i)}
		tx.Set(e.k(p.k), []byte(p.v))
		want = append(want, p)
	}
	e.commit(tx)

	r := e.tx()
	b, end := e.k("row/"), e.k("row0")
	for _, m := range allModes {
		for _, reverse := range []bool{false, true} {
			for _, limit := range []int{0, 1, 7, 600, n, n + 5} {
				opt := udb.RangeOptions{Limit: limit, Reverse: reverse, Mode: m.mode}
				what := fmt.Sprintf("mode %s reverse=%v limit=%d", m.name, reverse, limit)
				if m.mode == udb.StreamingModeExact && limit == 0 {
					_, err := r.GetRange(udb.FirstGreaterOrEqual(b), udb.FirstGreaterOrEqual(end), opt).All(e.ctx)
					expectCode(t, what+" (All)", err, udb.CodeExactModeWithoutLimits)
					it := r.GetRange(udb.FirstGreaterOrEqual(b), udb.FirstGreaterOrEqual(end), opt)
					if it.Next(e.ctx) {
						t.Errorf("%s: Next returned a row, want exact_mode_without_limits", what)
					}
					expectCode(t, what+" (Next/Err)", it.Err(), udb.CodeExactModeWithoutLimits)
					continue
				}
				exp := want
				if reverse {
					exp = reversed(want)
				}
				if limit > 0 && limit < len(exp) {
					exp = exp[:limit]
				}
				e.expectRows(what, e.rngKeys(r, b, end, opt), exp...)
				// Also walk it row by row.
				got := iterate(t, e, r.GetRange(udb.FirstGreaterOrEqual(b), udb.FirstGreaterOrEqual(end), opt))
				e.expectRows(what+" via Next", got, exp...)
			}
		}
	}
}

// iterate drains it with Next, copying each row.
func iterate(t *testing.T, e *env, it udb.RangeIterator) []udb.KeyValue {
	t.Helper()
	var out []udb.KeyValue
	for it.Next(e.ctx) {
		kv := it.KeyValue()
		out = append(out, udb.KeyValue{Key: bytes.Clone(kv.Key), Value: bytes.Clone(kv.Value)})
	}
	expectOK(t, "iterator Err", it.Err())
	return out
}

// 15. Iterating 20,000 rows with Next returns all of them in order, forward
// and reverse.
func testIterateManyRows(t *testing.T, h Harness) {
	e := newEnv(t, h)
	const n, perTxn = 20_000, 5_000
	val := func(i int) []byte { return []byte(fmt.Sprintf("value-%d-%s", i, bytes.Repeat([]byte{'.'}, 64))) }
	key := func(i int) []byte { return e.k(fmt.Sprintf("row/%06d", i)) }
	for start := 0; start < n; start += perTxn {
		tx := e.tx()
		for i := start; i < start+perTxn; i++ {
			tx.Set(key(i), val(i))
		}
		e.commit(tx)
	}

	tx := e.tx()
	b, end := e.k("row/"), e.k("row0")
	for _, reverse := range []bool{false, true} {
		it := tx.GetRange(udb.FirstGreaterOrEqual(b), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Reverse: reverse})
		count := 0
		for it.Next(e.ctx) {
			i := count
			if reverse {
				i = n - 1 - count
			}
			kv := it.KeyValue()
			if !bytes.Equal(kv.Key, key(i)) || !bytes.Equal(kv.Value, val(i)) {
				t.Fatalf("reverse=%v row %d: got %s=%q, want %s=%q", reverse, count, e.strip(kv.Key), kv.Value, e.strip(key(i)), val(i))
			}
			count++
		}
		expectOK(t, "iterator Err", it.Err())
		if count != n {
			t.Errorf("reverse=%v: iterated %d rows, want %d", reverse, count, n)
		}
	}
	size, err := tx.GetEstimatedRangeSizeBytes(e.ctx, b, end)
	if expectOK(t, "GetEstimatedRangeSizeBytes", err) && size < 0 {
		t.Errorf("GetEstimatedRangeSizeBytes: got %d, want >= 0", size)
	}
}

// 16. Range reads merge the transaction's sets, clears, clear ranges and
// atomic ops with the committed rows, in both directions and with limits.
func testRYWRangeMerge(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"a", "1"}, pair{"b", "2"}, pair{"c", "3"}, pair{"d", "4"}, pair{"e", "5"},
		pair{"f", "6"}, pair{"g", string(le64(7))}, pair{"h", "8"})

	tx := e.tx()
	tx.Set(e.k("b"), []byte("B"))                                 // overwrite
	tx.Clear(e.k("c"))                                            // clear a committed key
	tx.ClearRange(e.k("d"), e.k("f"))                             // clears d and e
	tx.Set(e.k("e"), []byte("E"))                                 // reappears after the clear range
	tx.Atomic(udb.MutationAdd, e.k("g"), le64(1))                 // 7 + 1
	tx.Atomic(udb.MutationAdd, e.k("i"), le64(5))                 // absent: 5
	tx.Set(e.k("bb"), []byte("BB"))                               // new key between committed ones
	tx.Atomic(udb.MutationByteMax, e.k("h"), []byte("9"))         // "8" vs "9"
	tx.Set(e.k("j"), []byte("J"))                                 // set then cleared
	tx.Clear(e.k("j"))                                            //
	tx.Atomic(udb.MutationCompareAndClear, e.k("a"), nil)         // "1" != "": unchanged
	tx.Atomic(udb.MutationCompareAndClear, e.k("f"), []byte("6")) // equal: cleared

	want := []pair{{"a", "1"}, {"b", "B"}, {"bb", "BB"}, {"e", "E"}, {"g", string(le64(8))}, {"h", "9"}, {"i", string(le64(5))}}
	b, end := e.k(), e.k("\xff")
	check := func(what string, r udb.ReadTransaction) {
		t.Helper()
		e.expectRows(what+" forward", e.rngKeys(r, b, end, udb.RangeOptions{}), want...)
		e.expectRows(what+" reverse", e.rngKeys(r, b, end, udb.RangeOptions{Reverse: true}), reversed(want)...)
		e.expectRows(what+" forward limit 3", e.rngKeys(r, b, end, udb.RangeOptions{Limit: 3}), want[:3]...)
		e.expectRows(what+" reverse limit 3", e.rngKeys(r, b, end, udb.RangeOptions{Limit: 3, Reverse: true}),
			reversed(want)[:3]...)
		e.expectRows(what+" [c, \\xff) limit 3", e.rngKeys(r, e.k("c"), end, udb.RangeOptions{Limit: 3}), want[3:6]...)
		e.expectRows(what+" [a, f) reverse limit 2", e.rngKeys(r, e.k("a"), e.k("f"), udb.RangeOptions{Limit: 2, Reverse: true}),
			pair{"e", "E"}, pair{"bb", "BB"})
		e.expectRows(what+" via Next", iterate(t, e, r.GetRange(udb.FirstGreaterOrEqual(b), udb.FirstGreaterOrEqual(end),
			udb.RangeOptions{Reverse: true, Mode: udb.StreamingModeSmall})), reversed(want)...)
		// Selectors here neither land on nor step over f: FoundationDB's RYW
		// selector walk counts a key that a CompareAndClear in the
		// transaction deleted as present (ReadYourWrites.cpp,
		// resolveKeySelectorFromCache), which no driver should copy.
		for _, c := range []struct {
			sel  udb.KeySelector
			want string
		}{
			{udb.FirstGreaterOrEqual(e.k("c")), "e"},
			{udb.LastLessThan(e.k("e")), "bb"},
			{udb.FirstGreaterThan(e.k("bb")), "e"},
			{udb.LastLessOrEqual(e.k("e")), "e"},
			{udb.FirstGreaterOrEqual(e.k("a")).Add(3), "e"},
			{udb.LastLessThan(e.k("j")).Add(-2), "g"},
		} {
			e.expectKey(what+" GetKey("+e.sel(c.sel)+")", e.getKey(r, c.sel), e.k(c.want))
		}
	}
	check("in-txn", tx)
	check("in-txn snapshot", tx.Snapshot())
	e.commit(tx)
	check("after commit", e.tx())

	t.Run("SnapshotRYWDisable", func(t *testing.T) {
		e := e.sub(t)
		tx := e.tx()
		expectOK(t, "SetSnapshotRYWDisable", tx.Options().SetSnapshotRYWDisable())
		tx.Set(e.k("a"), []byte("mine"))
		tx.Set(e.k("z"), []byte("new"))
		e.expectValue("snapshot Get with snapshot RYW disabled", e.get(tx.Snapshot(), e.k("a")), []byte("1"))
		e.expectValue("serializable Get with snapshot RYW disabled", e.get(tx, e.k("a")), []byte("mine"))
		got := e.rngKeys(tx.Snapshot(), e.k("y"), end, udb.RangeOptions{})
		if len(got) != 0 {
			t.Errorf("snapshot range with snapshot RYW disabled: got %s, want no rows (the write is not committed)", e.rows(got))
		}
	})
}
