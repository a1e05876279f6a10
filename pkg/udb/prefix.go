package udb

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/url"
	"sync"
	"time"
)

// PrefixParam is the query parameter of a database URL that puts the whole
// key space under a fixed prefix, given in hex: file://DIR?prefix=0a1b opens
// the store at DIR and shows only the keys that start with 0x0a 0x1b, without
// the prefix. Open removes it before the driver sees the URL, so every driver
// understands it.
const PrefixParam = "prefix"

var (
	normalKeysEnd = []byte{0xff}
	systemKeysEnd = []byte{0xff, 0xff}
)

// WithPrefix returns a view of db in which every key is stored under prefix
// and returned without it, so several users of one store each see a key space
// of their own. The view behaves like a whole database: selectors that
// resolve before the first key of the space give "" and past the last give
// "\xff" ("\xff\xff" with system keys), keys at or past "\xff" need the
// system-key options, and versionstamped keys land in the space. Closing the
// view closes db. The driver's optional Clock and FaultInjector stay visible.
//
// Keys of the view may be len(prefix) bytes shorter than MaxKeySize (and its
// "system keys" no longer than that either): the driver checks sizes on the
// stored key. An empty prefix returns db itself; a prefix that starts with
// 0xff is refused, as it would put the space among the driver's system keys.
func WithPrefix(db Database, prefix []byte) (Database, error) {
	if len(prefix) == 0 {
		return db, nil
	}
	if prefix[0] == 0xff {
		return nil, fmt.Errorf("udb: key prefix %x starts with 0xff (the system key space)", prefix)
	}
	if len(prefix) >= MaxKeySize/2 {
		return nil, fmt.Errorf("udb: key prefix of %d bytes is too long", len(prefix))
	}
	p := &prefixDB{inner: db, prefix: bytes.Clone(prefix)}
	clock, hasClock := db.(Clock)
	fault, hasFault := db.(FaultInjector)
	switch {
	case hasClock && hasFault:
		return struct {
			*prefixDB
			Clock
			FaultInjector
		}{p, clock, fault}, nil
	case hasClock:
		return struct {
			*prefixDB
			Clock
		}{p, clock}, nil
	case hasFault:
		return struct {
			*prefixDB
			FaultInjector
		}{p, fault}, nil
	}
	return p, nil
}

// splitPrefixParam removes PrefixParam from u's query and decodes it.
func splitPrefixParam(u *url.URL) ([]byte, error) {
	q := u.Query()
	if !q.Has(PrefixParam) {
		return nil, nil
	}
	s := q.Get(PrefixParam)
	prefix, err := hex.DecodeString(s)
	if err != nil || len(prefix) == 0 {
		return nil, fmt.Errorf("udb: %s=%q in database URL: want a non-empty hex string", PrefixParam, s)
	}
	q.Del(PrefixParam)
	u.RawQuery = q.Encode()
	return prefix, nil
}

type prefixDB struct {
	inner  Database
	prefix []byte
}

func (d *prefixDB) CreateTransaction() (Transaction, error) {
	tx, err := d.inner.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &prefixTx{inner: tx, prefix: d.prefix}, nil
}

func (d *prefixDB) Transact(ctx context.Context, f func(Transaction) (any, error)) (any, error) {
	return RunTransact(ctx, d, f)
}

func (d *prefixDB) ReadTransact(ctx context.Context, f func(ReadTransaction) (any, error)) (any, error) {
	return RunReadTransact(ctx, d, f)
}

func (d *prefixDB) Close() error { return d.inner.Close() }

// prefixTx keeps, besides the driver's transaction, what the driver cannot
// see through the prefix: which system-key options are set (the driver
// reads prefix+"\xff..." as ordinary keys) and the deferred error of a write
// outside the view's legal range.
type prefixTx struct {
	inner  Transaction
	prefix []byte

	mu sync.Mutex
	// Reset by Reset and by OnError when it resets the transaction.
	readSystem, accessSystem bool
	deferred                 error // first write outside the legal range
	// While the transaction is cancelled or committing, the driver's own
	// error (transaction_cancelled, used_during_commit) comes first.
	cancelled, committing bool
}

func (t *prefixTx) key(k []byte) []byte {
	out := make([]byte, 0, len(t.prefix)+len(k))
	return append(append(out, t.prefix...), k...)
}

// strip returns a key the driver returned, clamped to [begin, end) of the view.
func (t *prefixTx) strip(k, end []byte) []byte {
	if bytes.Compare(k, t.prefix) < 0 {
		return []byte{}
	}
	if !bytes.HasPrefix(k, t.prefix) || bytes.Compare(k[len(t.prefix):], end) >= 0 {
		return bytes.Clone(end)
	}
	return k[len(t.prefix):]
}

// readEnd is the end of the readable key space.
func (t *prefixTx) readEnd() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.readSystem || t.accessSystem {
		return systemKeysEnd
	}
	return normalKeysEnd
}

// checkWrite checks a key (or an exclusive end) against the writable key space.
func (t *prefixTx) checkWrite(k []byte, isEnd bool) error {
	t.mu.Lock()
	end := normalKeysEnd
	if t.accessSystem {
		end = systemKeysEnd
	}
	t.mu.Unlock()
	c := bytes.Compare(k, end)
	if c > 0 || (c == 0 && !isEnd) {
		return Error{Code: CodeKeyOutsideLegalRange}
	}
	return nil
}

// pending is the error a read or Commit must report before reaching the
// driver: the deferred error of an earlier write, unless the driver's state
// takes precedence.
func (t *prefixTx) pending() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cancelled || t.committing {
		return nil
	}
	return t.deferred
}

// passThrough reports whether the driver's own error takes precedence.
func (t *prefixTx) passThrough() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cancelled || t.committing
}

func (t *prefixTx) deferErr(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deferred == nil && !t.cancelled && !t.committing {
		t.deferred = err
	}
}

func (t *prefixTx) resetState() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.readSystem, t.accessSystem = false, false
	t.deferred = nil
	t.cancelled, t.committing = false, false
}

func (t *prefixTx) Get(ctx context.Context, key []byte) ([]byte, error) {
	return prefixReader{t, t.inner}.Get(ctx, key)
}

func (t *prefixTx) GetKey(ctx context.Context, sel KeySelector) ([]byte, error) {
	return prefixReader{t, t.inner}.GetKey(ctx, sel)
}

func (t *prefixTx) GetRange(begin, end KeySelector, opt RangeOptions) RangeIterator {
	return prefixReader{t, t.inner}.GetRange(begin, end, opt)
}

func (t *prefixTx) GetReadVersion(ctx context.Context) (int64, error) {
	return t.inner.GetReadVersion(ctx)
}

func (t *prefixTx) GetEstimatedRangeSizeBytes(ctx context.Context, begin, end []byte) (int64, error) {
	return prefixReader{t, t.inner}.GetEstimatedRangeSizeBytes(ctx, begin, end)
}

func (t *prefixTx) Snapshot() ReadTransaction { return prefixReader{t, t.inner.Snapshot()} }

func (t *prefixTx) Prefetch(ctx context.Context, keys [][]byte, ranges []KeyRange) {
	prefixReader{t, t.inner}.Prefetch(ctx, keys, ranges)
}

func (t *prefixTx) Set(key, value []byte) {
	if !t.passThrough() {
		if err := t.checkWrite(key, false); err != nil {
			t.deferErr(err)
			return
		}
	}
	t.inner.Set(t.key(key), value)
}

func (t *prefixTx) Clear(key []byte) {
	if !t.passThrough() {
		if len(key)+len(t.prefix) > MaxKeySize {
			return // no key that long can be stored: FoundationDB ignores the clear
		}
		if err := t.checkWrite(key, false); err != nil {
			t.deferErr(err)
			return
		}
	}
	t.inner.Clear(t.key(key))
}

func (t *prefixTx) ClearRange(begin, end []byte) {
	if !t.passThrough() && bytes.Compare(begin, end) <= 0 {
		err := t.checkWrite(begin, false)
		if err == nil {
			err = t.checkWrite(end, true)
		}
		if err != nil {
			t.deferErr(err)
			return
		}
	}
	t.inner.ClearRange(t.key(begin), t.key(end))
}

func (t *prefixTx) Atomic(op MutationType, key, param []byte) {
	check := key
	switch op {
	case MutationSetVersionstampedKey:
		// The operand ends in the little-endian offset of the 10-byte
		// placeholder; in the stored key it moves by the prefix.
		if len(key) < 4 {
			t.deferErr(Error{Code: CodeClientInvalidOperation})
			return
		}
		body := key[:len(key)-4]
		pos := binary.LittleEndian.Uint32(key[len(key)-4:])
		if uint64(pos)+10 > uint64(len(body)) {
			t.deferErr(Error{Code: CodeClientInvalidOperation})
			return
		}
		if !t.passThrough() {
			if err := t.checkWrite(body, false); err != nil {
				t.deferErr(err)
				return
			}
		}
		stored := binary.LittleEndian.AppendUint32(t.key(body), pos+uint32(len(t.prefix)))
		t.inner.Atomic(op, stored, param)
		return
	case MutationSetVersionstampedValue:
	default:
		if !IsAtomicOp(op) {
			t.inner.Atomic(op, t.key(key), param) // the driver reports invalid_mutation_type
			return
		}
	}
	if !t.passThrough() {
		if err := t.checkWrite(check, false); err != nil {
			t.deferErr(err)
			return
		}
	}
	t.inner.Atomic(op, t.key(key), param)
}

func (t *prefixTx) addConflictRange(begin, end []byte, add func(b, e []byte) error) error {
	if !t.passThrough() && bytes.Compare(begin, end) <= 0 {
		if err := t.checkWrite(end, true); err != nil {
			return err
		}
	}
	return add(t.key(begin), t.key(end))
}

func (t *prefixTx) AddReadConflictRange(begin, end []byte) error {
	return t.addConflictRange(begin, end, t.inner.AddReadConflictRange)
}

func (t *prefixTx) AddWriteConflictRange(begin, end []byte) error {
	return t.addConflictRange(begin, end, t.inner.AddWriteConflictRange)
}

func (t *prefixTx) SetReadVersion(v int64) { t.inner.SetReadVersion(v) }

func (t *prefixTx) Watch(key []byte) Watch {
	if !t.passThrough() && bytes.Compare(key, t.readEnd()) >= 0 {
		return failedWatch{Error{Code: CodeKeyOutsideLegalRange}}
	}
	return t.inner.Watch(t.key(key))
}

func (t *prefixTx) GetVersionstamp() VersionstampFuture { return t.inner.GetVersionstamp() }

func (t *prefixTx) Commit(ctx context.Context) error {
	if err := t.pending(); err != nil {
		return err
	}
	t.mu.Lock()
	t.committing = true
	t.mu.Unlock()
	return t.inner.Commit(ctx)
}

func (t *prefixTx) GetCommittedVersion() (int64, error) { return t.inner.GetCommittedVersion() }

func (t *prefixTx) OnError(ctx context.Context, err error) error {
	if err := t.inner.OnError(ctx, err); err != nil {
		return err
	}
	t.resetState()
	return nil
}

func (t *prefixTx) Options() TransactionOptions { return prefixOptions{t} }

func (t *prefixTx) Reset() {
	t.inner.Reset()
	t.resetState()
}

func (t *prefixTx) Cancel() {
	t.mu.Lock()
	t.cancelled = true
	t.mu.Unlock()
	t.inner.Cancel()
}

// prefixReader is the reading half of a prefixTx: the transaction itself or
// its snapshot view (r is then the driver's snapshot view).
type prefixReader struct {
	t *prefixTx
	r ReadTransaction
}

func (v prefixReader) Get(ctx context.Context, key []byte) ([]byte, error) {
	if err := v.t.pending(); err != nil {
		return nil, err
	}
	if !v.t.passThrough() && bytes.Compare(key, v.t.readEnd()) >= 0 {
		return nil, Error{Code: CodeKeyOutsideLegalRange}
	}
	return v.r.Get(ctx, v.t.key(key))
}

func (v prefixReader) GetKey(ctx context.Context, sel KeySelector) ([]byte, error) {
	if err := v.t.pending(); err != nil {
		return nil, err
	}
	return v.resolve(ctx, sel)
}

// resolve resolves a selector inside the view by reading at most |Offset|
// (or 1-Offset) keys of the view from the reference point, so it never
// counts, conflicts on or returns keys outside the prefix.
func (v prefixReader) resolve(ctx context.Context, sel KeySelector) ([]byte, error) {
	end := v.t.readEnd()
	ref := sel.Key
	if bytes.Compare(ref, end) > 0 {
		ref = end
	}
	if sel.OrEqual {
		ref = KeyAfter(ref)
	}
	if sel.Offset > 0 {
		if bytes.Compare(ref, end) >= 0 {
			return bytes.Clone(end), nil
		}
		rows, err := v.r.GetRange(FirstGreaterOrEqual(v.t.key(ref)), FirstGreaterOrEqual(v.t.key(end)),
			RangeOptions{Limit: sel.Offset}).All(ctx)
		if err != nil {
			return nil, err
		}
		if len(rows) < sel.Offset {
			return bytes.Clone(end), nil
		}
		return v.t.strip(rows[len(rows)-1].Key, end), nil
	}
	rows, err := v.r.GetRange(FirstGreaterOrEqual(v.t.prefix), FirstGreaterOrEqual(v.t.key(ref)),
		RangeOptions{Limit: 1 - sel.Offset, Reverse: true}).All(ctx)
	if err != nil {
		return nil, err
	}
	if len(rows) < 1-sel.Offset {
		return []byte{}, nil
	}
	return v.t.strip(rows[len(rows)-1].Key, end), nil
}

func (v prefixReader) GetRange(begin, end KeySelector, opt RangeOptions) RangeIterator {
	return &prefixIter{v: v, beginSel: begin, endSel: end, opt: opt}
}

func (v prefixReader) GetReadVersion(ctx context.Context) (int64, error) {
	return v.r.GetReadVersion(ctx)
}

func (v prefixReader) GetEstimatedRangeSizeBytes(ctx context.Context, begin, end []byte) (int64, error) {
	return v.r.GetEstimatedRangeSizeBytes(ctx, v.t.key(begin), v.t.key(end))
}

func (v prefixReader) Snapshot() ReadTransaction {
	return prefixReader{v.t, v.r.Snapshot()}
}

func (v prefixReader) Prefetch(ctx context.Context, keys [][]byte, ranges []KeyRange) {
	stored := make([][]byte, len(keys))
	for i, k := range keys {
		stored[i] = v.t.key(k)
	}
	storedRanges := make([]KeyRange, len(ranges))
	for i, r := range ranges {
		storedRanges[i] = KeyRange{v.t.key(r.Begin), v.t.key(r.End)}
	}
	v.r.Prefetch(ctx, stored, storedRanges)
}

// prefixIter resolves its endpoints on the first Next, then walks the
// driver's range read of the stored keys, stripping the prefix.
type prefixIter struct {
	v                prefixReader
	beginSel, endSel KeySelector
	opt              RangeOptions

	started bool
	inner   RangeIterator // nil when the range is empty
	end     []byte        // the view's readable end
	cur     KeyValue
	err     error
}

func (it *prefixIter) start(ctx context.Context) error {
	it.started = true
	t := it.v.t
	if err := t.pending(); err != nil {
		return err
	}
	if t.passThrough() {
		it.inner = it.v.r.GetRange(FirstGreaterOrEqual(t.prefix), FirstGreaterOrEqual(t.key(normalKeysEnd)), it.opt)
		return nil
	}
	if it.opt.Limit < 0 {
		return Error{Code: CodeInvalidOptionValue}
	}
	if it.opt.Mode == StreamingModeExact && it.opt.Limit == 0 {
		return Error{Code: CodeExactModeWithoutLimits}
	}
	it.end = t.readEnd()
	if bytes.Compare(it.beginSel.Key, it.end) > 0 || bytes.Compare(it.endSel.Key, it.end) > 0 {
		return Error{Code: CodeKeyOutsideLegalRange}
	}
	b, err := it.bound(ctx, it.beginSel)
	if err != nil {
		return err
	}
	e, err := it.bound(ctx, it.endSel)
	if err != nil {
		return err
	}
	if bytes.Compare(e, it.end) > 0 {
		e = it.end
	}
	if bytes.Compare(b, e) >= 0 {
		return nil
	}
	it.inner = it.v.r.GetRange(FirstGreaterOrEqual(t.key(b)), FirstGreaterOrEqual(t.key(e)), it.opt)
	return nil
}

// bound turns an endpoint selector into a key of the view. The two
// first-greater forms need no read.
func (it *prefixIter) bound(ctx context.Context, sel KeySelector) ([]byte, error) {
	if sel.Offset == 1 {
		if sel.OrEqual {
			return KeyAfter(sel.Key), nil
		}
		return sel.Key, nil
	}
	return it.v.resolve(ctx, sel)
}

func (it *prefixIter) Next(ctx context.Context) bool {
	if it.err != nil {
		return false
	}
	if !it.started {
		if it.err = it.start(ctx); it.err != nil {
			return false
		}
	}
	if it.inner == nil || !it.inner.Next(ctx) {
		if it.inner != nil {
			it.err = it.inner.Err()
		}
		return false
	}
	kv := it.inner.KeyValue()
	it.cur = KeyValue{Key: kv.Key[len(it.v.t.prefix):], Value: kv.Value}
	return true
}

func (it *prefixIter) KeyValue() KeyValue { return it.cur }

func (it *prefixIter) Err() error { return it.err }

// All lets the driver read the rest in its own batches.
func (it *prefixIter) All(ctx context.Context) ([]KeyValue, error) {
	if it.err != nil {
		return nil, it.err
	}
	if !it.started {
		if it.err = it.start(ctx); it.err != nil {
			return nil, it.err
		}
	}
	if it.inner == nil {
		return nil, nil
	}
	rows, err := it.inner.All(ctx)
	if err != nil {
		it.err = err
		return nil, err
	}
	for i := range rows {
		rows[i].Key = rows[i].Key[len(it.v.t.prefix):]
	}
	return rows, nil
}

type prefixOptions struct{ t *prefixTx }

func (o prefixOptions) SetTimeout(d time.Duration) error { return o.t.inner.Options().SetTimeout(d) }
func (o prefixOptions) SetRetryLimit(n int) error        { return o.t.inner.Options().SetRetryLimit(n) }
func (o prefixOptions) SetMaxRetryDelay(d time.Duration) error {
	return o.t.inner.Options().SetMaxRetryDelay(d)
}
func (o prefixOptions) SetNextWriteNoWriteConflictRange() error {
	return o.t.inner.Options().SetNextWriteNoWriteConflictRange()
}
func (o prefixOptions) SetSnapshotRYWDisable() error {
	return o.t.inner.Options().SetSnapshotRYWDisable()
}
func (o prefixOptions) SetSizeLimit(n int) error { return o.t.inner.Options().SetSizeLimit(n) }

func (o prefixOptions) SetReadSystemKeys() error {
	if err := o.t.inner.Options().SetReadSystemKeys(); err != nil {
		return err
	}
	o.t.mu.Lock()
	o.t.readSystem = true
	o.t.mu.Unlock()
	return nil
}

func (o prefixOptions) SetAccessSystemKeys() error {
	if err := o.t.inner.Options().SetAccessSystemKeys(); err != nil {
		return err
	}
	o.t.mu.Lock()
	o.t.accessSystem = true
	o.t.mu.Unlock()
	return nil
}

// failedWatch is a watch that failed when it was set.
type failedWatch struct{ err error }

func (w failedWatch) Wait(context.Context) error { return w.err }
func (failedWatch) Cancel()                      {}
