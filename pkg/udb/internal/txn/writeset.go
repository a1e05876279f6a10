package txn

import (
	"bytes"
	"sort"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/tidwall/btree"
)

// entryKind says how much a transaction knows about one key it wrote.
type entryKind uint8

const (
	// known: the value (or absence) is fixed by the transaction's own writes,
	// independently of the database.
	known entryKind = iota
	// chained: atomic operations on a database value not read yet.
	chained
	// unreadable: a versionstamped value, unknown until commit.
	unreadable
)

type atomicOp struct {
	op    udb.MutationType
	param []byte
}

// entry is the read-your-writes state of one key.
type entry struct {
	key     []byte
	kind    entryKind
	value   []byte // known: the value
	present bool   // known: whether the key exists
	ops     []atomicOp
}

// resolve returns the entry's value over the database value db.
func (e *entry) resolve(db []byte, dbPresent bool) ([]byte, bool) {
	switch e.kind {
	case known:
		return e.value, e.present
	case chained:
		v, p := db, dbPresent
		for _, o := range e.ops {
			v, p = udb.ApplyAtomic(o.op, v, p, o.param)
		}
		return v, p
	}
	return nil, false
}

// writeSet holds a transaction's writes for read-your-writes: per-key entries
// and the ranges it cleared, which hide database keys with no entry.
type writeSet struct {
	entries    *btree.BTreeG[*entry]
	cleared    *btree.BTreeG[KeyRange] // disjoint, by Begin
	unreadable []KeyRange              // ranges of versionstamped keys
}

func newWriteSet() *writeSet {
	return &writeSet{
		entries: btree.NewBTreeGOptions(func(a, b *entry) bool { return bytes.Compare(a.key, b.key) < 0 }, btree.Options{NoLocks: true}),
		cleared: btree.NewBTreeGOptions(func(a, b KeyRange) bool { return bytes.Compare(a.Begin, b.Begin) < 0 }, btree.Options{NoLocks: true}),
	}
}

// empty reports whether the transaction has written nothing readable.
func (w *writeSet) empty() bool { return w.entries.Len() == 0 && w.cleared.Len() == 0 }

func (w *writeSet) get(key []byte) *entry {
	e, _ := w.entries.Get(&entry{key: key})
	return e
}

func (w *writeSet) set(key, value []byte) {
	w.entries.Set(&entry{key: key, kind: known, value: value, present: true})
}

func (w *writeSet) clear(key []byte) {
	w.entries.Set(&entry{key: key, kind: known})
}

// inCleared reports whether key lies in a range the transaction cleared.
func (w *writeSet) inCleared(key []byte) bool {
	r, ok := w.clearedAt(key)
	return ok && bytes.Compare(key, r.End) < 0
}

// clearedAt returns the cleared range starting at or before key.
func (w *writeSet) clearedAt(key []byte) (KeyRange, bool) {
	var found KeyRange
	ok := false
	w.cleared.Descend(KeyRange{Begin: key}, func(r KeyRange) bool {
		found, ok = r, true
		return false
	})
	return found, ok
}

func (w *writeSet) clearRange(begin, end []byte) {
	var drop []*entry
	w.entries.Ascend(&entry{key: begin}, func(e *entry) bool {
		if bytes.Compare(e.key, end) >= 0 {
			return false
		}
		drop = append(drop, e)
		return true
	})
	for _, e := range drop {
		w.entries.Delete(e)
	}
	// Merge with every cleared range that overlaps or touches [begin, end).
	if r, ok := w.clearedAt(begin); ok && bytes.Compare(r.End, begin) >= 0 {
		begin = r.Begin
		if bytes.Compare(r.End, end) > 0 {
			end = r.End
		}
	}
	var merged []KeyRange
	w.cleared.Ascend(KeyRange{Begin: begin}, func(r KeyRange) bool {
		if bytes.Compare(r.Begin, end) > 0 {
			return false
		}
		merged = append(merged, r)
		if bytes.Compare(r.End, end) > 0 {
			end = r.End
		}
		return true
	})
	for _, r := range merged {
		w.cleared.Delete(r)
	}
	w.cleared.Set(KeyRange{Begin: begin, End: end})
}

// atomic records op on key, folding it into what is known of the key.
func (w *writeSet) atomic(op udb.MutationType, key, param []byte) {
	e := w.get(key)
	switch {
	case e == nil && w.inCleared(key):
		v, p := udb.ApplyAtomic(op, nil, false, param)
		w.entries.Set(&entry{key: key, kind: known, value: v, present: p})
	case e == nil:
		w.entries.Set(&entry{key: key, kind: chained, ops: []atomicOp{{op, param}}})
	case e.kind == known:
		e.value, e.present = udb.ApplyAtomic(op, e.value, e.present, param)
	case e.kind == chained:
		e.ops = append(e.ops, atomicOp{op, param})
	}
}

func (w *writeSet) markUnreadable(key []byte) {
	w.entries.Set(&entry{key: key, kind: unreadable})
}

// touchesUnreadable reports whether [begin, end) holds a key whose value or
// name depends on a versionstamp not assigned yet.
func (w *writeSet) touchesUnreadable(begin, end []byte) bool {
	for _, r := range w.unreadable {
		if bytes.Compare(r.Begin, end) < 0 && bytes.Compare(begin, r.End) < 0 {
			return true
		}
	}
	hit := false
	w.entries.Ascend(&entry{key: begin}, func(e *entry) bool {
		if bytes.Compare(e.key, end) >= 0 {
			return false
		}
		if e.kind == unreadable {
			hit = true
			return false
		}
		return true
	})
	return hit
}

// independentGaps returns the parts of [begin, end) whose values do not
// follow from the transaction's own writes: the ranges a serializable read
// of [begin, end) must add as read conflicts.
func (w *writeSet) independentGaps(begin, end []byte) []KeyRange {
	var gaps []KeyRange
	cur := begin
	emit := func(upTo []byte) {
		if bytes.Compare(cur, upTo) < 0 {
			gaps = append(gaps, KeyRange{cur, upTo})
		}
	}
	// Walk cleared ranges and known entries in key order.
	if r, ok := w.clearedAt(begin); ok && bytes.Compare(begin, r.End) < 0 {
		cur = r.End
	}
	if w.entries.Len() == 0 && w.cleared.Len() == 0 {
		return []KeyRange{{begin, end}}
	}
	type span struct{ b, e []byte }
	var spans []span
	w.cleared.Ascend(KeyRange{Begin: cur}, func(r KeyRange) bool {
		if bytes.Compare(r.Begin, end) >= 0 {
			return false
		}
		spans = append(spans, span{r.Begin, r.End})
		return true
	})
	w.entries.Ascend(&entry{key: cur}, func(e *entry) bool {
		if bytes.Compare(e.key, end) >= 0 {
			return false
		}
		if e.kind == known {
			spans = append(spans, span{e.key, udb.KeyAfter(e.key)})
		}
		return true
	})
	sort.Slice(spans, func(i, j int) bool { return bytes.Compare(spans[i].b, spans[j].b) < 0 })
	for _, s := range spans {
		if bytes.Compare(s.e, cur) <= 0 {
			continue
		}
		emit(minKey(s.b, end))
		if bytes.Compare(s.e, cur) > 0 {
			cur = s.e
		}
		if bytes.Compare(cur, end) >= 0 {
			return gaps
		}
	}
	emit(end)
	return gaps
}

func minKey(a, b []byte) []byte {
	if bytes.Compare(a, b) < 0 {
		return a
	}
	return b
}
