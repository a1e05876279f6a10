package udbtest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
)

// Section G: key ordering. Keys sort bytewise (unsigned, shorter prefix
// first), which is what makes tuple-encoded keys sort by value.
func orderingCases() []testCase {
	return []testCase{
		{"54_BytewiseKeyOrder", testKeyOrder},
	}
}

// orderingSuffixes are raw key suffixes chosen for tricky orderings: embedded
// zero bytes, 0xff bytes, keys that are prefixes of each other, the empty
// suffix (the subspace prefix itself), and tuple-like encodings of values
// whose byte order must match their value order.
func orderingSuffixes() [][]byte {
	raw := []string{
		"", "\x00", "\x00\x00", "\x00\xff", "\x01", "\x01\x00", "\x7f", "\x80", "\xfe", "\xfe\xff",
		"\xff", "\xff\x00", "\xff\xff", "\xff\xff\xff",
		"a", "a\x00", "a\x00\x00", "a\x00\x01", "a\x01", "a\xff", "a\xff\xff", "aa", "ab", "b",
		// Tuple-like elements: ints -257, -1, 0, 1, 255, 256 (codes 0x12..0x16),
		// strings with escaped zero bytes, nested tuples with nil, false/true.
		"\x12\xfe\xfe", "\x13\xfe", "\x14", "\x15\x01", "\x15\xff", "\x16\x01\x00",
		"\x01foo\x00", "\x01foo\x00\xffbar\x00", "\x01foo\x00\xff\x00", "\x01foo\x01\x00", "\x01fop\x00",
		"\x05\x00", "\x05\x00\xff\x00", "\x05\x14\x00", "\x26", "\x27",
	}
	out := make([][]byte, len(raw))
	for i, s := range raw {
		out[i] = []byte(s)
	}
	return out
}

// 54. Keys written in random order come back in bytewise order, forward and
// reverse, through range reads and selectors.
func testKeyOrder(t *testing.T, h Harness) {
	e := newEnv(t, h)
	suffixes := orderingSuffixes()
	shuffled := slices.Clone(suffixes)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })

	// Write half in one transaction and the rest one per transaction, so both
	// the write map and the store order them.
	tx := e.tx()
	for i, s := range shuffled {
		if i%2 == 0 {
			tx.Set(e.kb(s), []byte(fmt.Sprint(i)))
		}
	}
	e.commit(tx)
	for i, s := range shuffled {
		if i%2 == 1 {
			e.setRaw(e.kb(s), []byte(fmt.Sprint(i)))
		}
	}

	want := make([][]byte, len(suffixes))
	for i, s := range suffixes {
		want[i] = e.kb(s)
	}
	slices.SortFunc(want, bytes.Compare)

	check := func(what string, got []udb.KeyValue, want [][]byte) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: got %d keys, want %d", what, len(got), len(want))
			return
		}
		for i := range want {
			if !bytes.Equal(got[i].Key, want[i]) {
				t.Errorf("%s: key %d is %s, want %s", what, i, e.strip(got[i].Key), e.strip(want[i]))
				return
			}
		}
	}
	r := e.tx()
	b, end := e.rangeAll()
	check("forward", e.rngKeys(r, b, end, udb.RangeOptions{}), want)
	rev := slices.Clone(want)
	slices.Reverse(rev)
	check("reverse", e.rngKeys(r, b, end, udb.RangeOptions{Reverse: true}), rev)
	check("reverse limit 5", e.rngKeys(r, b, end, udb.RangeOptions{Reverse: true, Limit: 5}), rev[:5])

	// Walk the keys with selectors: each key's successor is the next one.
	for i := 0; i+1 < len(want); i++ {
		e.expectKey(fmt.Sprintf("FirstGreaterThan(key %d)", i), e.getKey(r, udb.FirstGreaterThan(want[i])), want[i+1])
		e.expectKey(fmt.Sprintf("LastLessThan(key %d)", i+1), e.getKey(r, udb.LastLessThan(want[i+1])), want[i])
	}

	// The same order holds for uncommitted keys merged with committed ones.
	tx2 := e.tx()
	extra := [][]byte{e.kb([]byte("\x00\x00\x00")), e.kb([]byte("a\x00\x00\x00")), e.kb([]byte("\xff\xff\xff\xff"))}
	for _, k := range extra {
		tx2.Set(k, []byte("new"))
	}
	merged := append(slices.Clone(want), extra...)
	slices.SortFunc(merged, bytes.Compare)
	check("forward with uncommitted keys", e.rngKeys(tx2, b, end, udb.RangeOptions{}), merged)
	revMerged := slices.Clone(merged)
	slices.Reverse(revMerged)
	check("reverse with uncommitted keys", e.rngKeys(tx2, b, end, udb.RangeOptions{Reverse: true}), revMerged)
}
