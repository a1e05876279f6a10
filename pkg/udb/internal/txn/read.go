package txn

import (
	"bytes"
	"context"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/tidwall/btree"
)

// Get implements udb.ReadTransaction.
func (t *Tx) Get(ctx context.Context, key []byte) ([]byte, error) { return t.get(ctx, key, false) }

// GetKey implements udb.ReadTransaction.
func (t *Tx) GetKey(ctx context.Context, sel udb.KeySelector) ([]byte, error) {
	return t.getKey(ctx, sel, false)
}

// GetRange implements udb.ReadTransaction.
func (t *Tx) GetRange(begin, end udb.KeySelector, opt udb.RangeOptions) udb.RangeIterator {
	return &rangeIter{t: t, beginSel: begin, endSel: end, opt: opt}
}

// GetEstimatedRangeSizeBytes implements udb.ReadTransaction.
func (t *Tx) GetEstimatedRangeSizeBytes(ctx context.Context, begin, end []byte) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.readableLocked(); err != nil {
		return 0, err
	}
	if bytes.Compare(begin, end) > 0 {
		return 0, errCode(udb.CodeInvertedRange)
	}
	s, err := t.ensureSnapshotLocked(ctx)
	if err != nil {
		return 0, err
	}
	return s.EstimateSize(begin, end)
}

// Snapshot implements udb.ReadTransaction.
func (t *Tx) Snapshot() udb.ReadTransaction { return snapshotView{t} }

// Prefetch implements udb.ReadTransaction: it passes keys and ranges to a snapshot that is
// a Prefetcher, where the reads that follow will find them, and does nothing on others.
func (t *Tx) Prefetch(ctx context.Context, keys [][]byte, ranges []udb.KeyRange) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.readableLocked() != nil {
		return
	}
	s, err := t.ensureSnapshotLocked(ctx)
	if err != nil {
		return
	}
	if p, ok := s.(Prefetcher); ok {
		p.Prefetch(keys, ranges)
	}
}

// snapshotView reads through the transaction without adding read conflicts.
type snapshotView struct{ t *Tx }

func (v snapshotView) Get(ctx context.Context, key []byte) ([]byte, error) {
	return v.t.get(ctx, key, true)
}

func (v snapshotView) GetKey(ctx context.Context, sel udb.KeySelector) ([]byte, error) {
	return v.t.getKey(ctx, sel, true)
}

func (v snapshotView) GetRange(begin, end udb.KeySelector, opt udb.RangeOptions) udb.RangeIterator {
	return &rangeIter{t: v.t, beginSel: begin, endSel: end, opt: opt, snapshot: true}
}

func (v snapshotView) GetReadVersion(ctx context.Context) (int64, error) {
	return v.t.GetReadVersion(ctx)
}

func (v snapshotView) GetEstimatedRangeSizeBytes(ctx context.Context, begin, end []byte) (int64, error) {
	return v.t.GetEstimatedRangeSizeBytes(ctx, begin, end)
}

func (v snapshotView) Snapshot() udb.ReadTransaction { return v }

func (v snapshotView) Prefetch(ctx context.Context, keys [][]byte, ranges []udb.KeyRange) {
	v.t.Prefetch(ctx, keys, ranges)
}

func (t *Tx) get(ctx context.Context, key []byte, snapshot bool) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.readableLocked(); err != nil {
		return nil, err
	}
	if bytes.Compare(key, t.readEndLocked()) >= 0 {
		return nil, errCode(udb.CodeKeyOutsideLegalRange)
	}
	ryw := !snapshot || !t.st.snapshotRYWDisable
	var e *entry
	if ryw {
		e = t.st.writes.get(key)
		switch {
		case e != nil && e.kind == known:
			return cloneValue(e.value, e.present), nil
		case e != nil && e.kind == unreadable:
			return nil, errCode(udb.CodeAccessedUnreadable)
		case e == nil && t.st.writes.inCleared(key):
			return nil, nil
		case e == nil && t.st.writes.touchesUnreadable(key, udb.KeyAfter(key)):
			return nil, errCode(udb.CodeAccessedUnreadable)
		}
	}
	s, err := t.ensureSnapshotLocked(ctx)
	if err != nil {
		return nil, err
	}
	v, err := s.Get(key)
	if err != nil {
		return nil, err
	}
	if !snapshot {
		t.st.readConflicts = append(t.st.readConflicts, KeyRange{clone(key), udb.KeyAfter(key)})
		t.st.size += 2*len(key) + 1
	}
	if e != nil { // atomic operations over the database value
		v, p := e.resolve(v, v != nil)
		return cloneValue(v, p), nil
	}
	return v, nil
}

func cloneValue(v []byte, present bool) []byte {
	if !present {
		return nil
	}
	return clone(v)
}

// getKey resolves a selector: from the reference point, the Offset-th key
// forward (Offset > 0) or the (1-Offset)-th key backward. The scan adds the
// read conflict between the reference point and the result.
func (t *Tx) getKey(ctx context.Context, sel udb.KeySelector, snapshot bool) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.readableLocked(); err != nil {
		return nil, err
	}
	return t.resolveSelectorLocked(ctx, sel, snapshot)
}

func (t *Tx) resolveSelectorLocked(ctx context.Context, sel udb.KeySelector, snapshot bool) ([]byte, error) {
	limit := t.readEndLocked()
	ref := sel.Key
	if bytes.Compare(ref, limit) > 0 {
		ref = limit
	}
	if sel.OrEqual {
		ref = udb.KeyAfter(ref)
	}
	if sel.Offset > 0 {
		if bytes.Compare(ref, limit) >= 0 {
			return clone(limit), nil
		}
		rows, _, err := t.scanLocked(ctx, ref, limit, false, sel.Offset, snapshot)
		if err != nil {
			return nil, err
		}
		if len(rows) < sel.Offset {
			return clone(limit), nil
		}
		return rows[len(rows)-1].Key, nil
	}
	rows, _, err := t.scanLocked(ctx, nil, ref, true, 1-sel.Offset, snapshot)
	if err != nil {
		return nil, err
	}
	if len(rows) < 1-sel.Offset {
		return []byte{}, nil
	}
	return rows[len(rows)-1].Key, nil
}

// scanLocked reads up to n rows of [begin, end) merging the snapshot with the
// transaction's writes, and adds the read conflict for exactly the span it
// covered. more reports that it stopped at n rows.
func (t *Tx) scanLocked(ctx context.Context, begin, end []byte, reverse bool, n int, snapshot bool) (rows []udb.KeyValue, more bool, err error) {
	if bytes.Compare(begin, end) >= 0 || n <= 0 {
		return nil, false, nil
	}
	ryw := !snapshot || !t.st.snapshotRYWDisable
	if ryw && t.st.writes.touchesUnreadable(begin, end) {
		return nil, false, errCode(udb.CodeAccessedUnreadable)
	}
	s, err := t.ensureSnapshotLocked(ctx)
	if err != nil {
		return nil, false, err
	}
	it, err := s.NewIter(begin, end, reverse, n)
	if err != nil {
		return nil, false, err
	}
	defer it.Close()
	var ws *writeSet
	if ryw && !t.st.writes.empty() {
		ws = t.st.writes
	}
	m := merger{it: it, ws: ws, reverse: reverse, begin: begin, end: end}
	rows, more, err = m.read(n)
	if err != nil {
		return nil, false, err
	}
	if !snapshot {
		span := KeyRange{begin, end}
		if more {
			last := rows[len(rows)-1].Key
			if reverse {
				span.Begin = last
			} else {
				span.End = udb.KeyAfter(last)
			}
		}
		t.addReadSpanLocked(span, ryw)
	}
	return rows, more, nil
}

// addReadSpanLocked records a serializable read of r, leaving out the parts
// whose values the transaction wrote itself.
func (t *Tx) addReadSpanLocked(r KeyRange, ryw bool) {
	spans := []KeyRange{r}
	if ryw {
		spans = t.st.writes.independentGaps(r.Begin, r.End)
	}
	for _, s := range spans {
		s = KeyRange{clone(s.Begin), clone(s.End)}
		t.st.readConflicts = append(t.st.readConflicts, s)
		t.st.size += len(s.Begin) + len(s.End)
	}
}

// merger walks a snapshot iterator and a write set together in key order.
type merger struct {
	it         Iter
	ws         *writeSet // nil: snapshot only
	reverse    bool
	begin, end []byte
}

func (m *merger) read(n int) ([]udb.KeyValue, bool, error) {
	rows := make([]udb.KeyValue, 0, min(n, 16))
	dbOK := m.it.First()
	var wi btree.IterG[*entry]
	wOK := false
	if m.ws != nil {
		wi = m.ws.entries.Iter()
		defer wi.Release()
		wOK = m.firstEntry(&wi)
	}
	for len(rows) < n {
		if dbOK && m.ws != nil {
			// Database keys inside ranges the transaction cleared are gone;
			// skip the whole cleared range at once.
			k := m.it.Key()
			if !m.reverse {
				if r, ok := m.ws.clearedAt(k); ok && bytes.Compare(k, r.End) < 0 {
					dbOK = m.it.Seek(r.End)
					continue
				}
			} else if r, ok := m.ws.clearedAt(k); ok && bytes.Compare(k, r.End) < 0 {
				dbOK = m.it.Seek(r.Begin)
				continue
			}
		}
		if !dbOK && !wOK {
			return rows, false, m.it.Err()
		}
		c := 0
		switch {
		case !wOK:
			c = -1
		case !dbOK:
			c = 1
		default:
			c = bytes.Compare(m.it.Key(), wi.Item().key)
			if m.reverse {
				c = -c
			}
		}
		switch {
		case c < 0: // database only
			rows = append(rows, row(m.it.Key(), m.it.Value()))
			dbOK = m.it.Next()
		case c > 0: // write set only
			e := wi.Item()
			if v, p := e.resolve(nil, false); p {
				rows = append(rows, row(e.key, v))
			}
			wOK = m.nextEntry(&wi)
		default:
			e := wi.Item()
			if v, p := e.resolve(m.it.Value(), true); p {
				rows = append(rows, row(e.key, v))
			}
			dbOK = m.it.Next()
			wOK = m.nextEntry(&wi)
		}
	}
	if err := m.it.Err(); err != nil {
		return nil, false, err
	}
	return rows, true, nil
}

// row copies a key and its value into one allocation.
func row(k, v []byte) udb.KeyValue {
	buf := make([]byte, len(k)+len(v))
	copy(buf, k)
	copy(buf[len(k):], v)
	return udb.KeyValue{Key: buf[:len(k):len(k)], Value: buf[len(k):]}
}

func (m *merger) inRange(k []byte) bool {
	return bytes.Compare(k, m.begin) >= 0 && bytes.Compare(k, m.end) < 0
}

func (m *merger) firstEntry(wi *btree.IterG[*entry]) bool {
	if !m.reverse {
		return wi.Seek(&entry{key: m.begin}) && m.inRange(wi.Item().key)
	}
	ok := wi.Seek(&entry{key: m.end})
	if ok {
		ok = wi.Prev()
	} else {
		ok = wi.Last()
	}
	return ok && m.inRange(wi.Item().key)
}

func (m *merger) nextEntry(wi *btree.IterG[*entry]) bool {
	var ok bool
	if m.reverse {
		ok = wi.Prev()
	} else {
		ok = wi.Next()
	}
	return ok && m.inRange(wi.Item().key)
}

// rangeIter is a lazy range read that fetches rows in growing batches and
// adds read conflicts only for the batches it fetched.
type rangeIter struct {
	t                *Tx
	beginSel, endSel udb.KeySelector
	opt              udb.RangeOptions
	snapshot         bool

	started    bool
	begin, end []byte
	left       int // rows still allowed by the limit; -1 unlimited
	batch      int
	buf        []udb.KeyValue
	pos        int
	done       bool
	err        error
	cur        udb.KeyValue
}

func (r *rangeIter) Next(ctx context.Context) bool {
	for {
		if r.pos < len(r.buf) {
			r.cur = r.buf[r.pos]
			r.pos++
			return true
		}
		if r.done || r.err != nil {
			return false
		}
		r.fetch(ctx)
	}
}

func (r *rangeIter) KeyValue() udb.KeyValue { return r.cur }
func (r *rangeIter) Err() error             { return r.err }

func (r *rangeIter) All(ctx context.Context) ([]udb.KeyValue, error) {
	var out []udb.KeyValue
	for r.Next(ctx) {
		out = append(out, r.cur)
	}
	return out, r.err
}

// Batch sizes per streaming mode; they change round trips, never results.
func (r *rangeIter) nextBatch() int {
	switch r.opt.Mode {
	case udb.StreamingModeWantAll, udb.StreamingModeExact:
		return 1 << 30
	case udb.StreamingModeSmall:
		return 256
	case udb.StreamingModeMedium:
		return 1024
	case udb.StreamingModeLarge:
		return 4096
	case udb.StreamingModeSerial:
		return 1 << 20
	}
	if r.batch == 0 {
		r.batch = 128
	} else if r.batch < 8192 {
		r.batch *= 2
	}
	return r.batch
}

func (r *rangeIter) fetch(ctx context.Context) {
	t := r.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.readableLocked(); err != nil {
		r.err = err
		return
	}
	if !r.started {
		if err := r.startLocked(ctx); err != nil {
			r.err = err
			return
		}
		if r.done {
			return
		}
	}
	n := r.nextBatch()
	if r.left >= 0 && n > r.left {
		n = r.left
	}
	rows, more, err := t.scanLocked(ctx, r.begin, r.end, r.opt.Reverse, n, r.snapshot)
	if err != nil {
		r.err = err
		return
	}
	r.buf, r.pos = rows, 0
	if r.left >= 0 {
		r.left -= len(rows)
	}
	if !more || r.left == 0 {
		r.done = true
		return
	}
	last := rows[len(rows)-1].Key
	if r.opt.Reverse {
		r.end = last
	} else {
		r.begin = udb.KeyAfter(last)
	}
}

func (r *rangeIter) startLocked(ctx context.Context) error {
	r.started = true
	if r.opt.Limit < 0 {
		return errCode(udb.CodeInvalidOptionValue)
	}
	if r.opt.Mode == udb.StreamingModeExact && r.opt.Limit == 0 {
		return errCode(udb.CodeExactModeWithoutLimits)
	}
	limit := r.t.readEndLocked()
	if bytes.Compare(r.beginSel.Key, limit) > 0 || bytes.Compare(r.endSel.Key, limit) > 0 {
		return errCode(udb.CodeKeyOutsideLegalRange)
	}
	var err error
	if r.begin, err = r.boundLocked(ctx, r.beginSel); err != nil {
		return err
	}
	if r.end, err = r.boundLocked(ctx, r.endSel); err != nil {
		return err
	}
	if bytes.Compare(r.end, limit) > 0 {
		r.end = limit
	}
	r.left = -1
	if r.opt.Limit > 0 {
		r.left = r.opt.Limit
	}
	if bytes.Compare(r.begin, r.end) >= 0 {
		r.done = true
	}
	return nil
}

// boundLocked turns a range endpoint selector into a key. The two
// first-greater forms need no lookup: the range read's own conflict covers
// them.
func (r *rangeIter) boundLocked(ctx context.Context, sel udb.KeySelector) ([]byte, error) {
	if sel.Offset == 1 {
		if sel.OrEqual {
			return udb.KeyAfter(sel.Key), nil
		}
		return sel.Key, nil
	}
	return r.t.resolveSelectorLocked(ctx, sel, r.snapshot)
}
