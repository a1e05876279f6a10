package txn

import (
	"bytes"
	"context"
	"encoding/binary"
	"runtime"
	"sync"
	"time"

	"github.com/berthhq/berth/pkg/udb"
)

var (
	normalKeysEnd = []byte{0xff}
	systemKeysEnd = []byte{0xff, 0xff}
)

func errCode(code int) error { return udb.Error{Code: code} }

// Tx implements udb.Transaction over a Backend. It is safe for concurrent use.
type Tx struct {
	b   Backend
	ref *snapRef // outlives Tx only until a cleanup releases it

	mu sync.Mutex
	// Kept across OnError, reset by Reset.
	timeout time.Duration
	started time.Time
	policy  udb.RetryPolicy
	// st is the state of the current attempt.
	st attempt
}

// attempt is what OnError and Reset throw away.
type attempt struct {
	readVersion    int64
	readVersionSet bool
	writes         *writeSet
	mutations      []Mutation
	readConflicts  []KeyRange
	writeConflicts []KeyRange // explicit ones only; mutations add theirs at commit
	size           int
	deferred       error
	watches        []*Watch
	stamp          *versionstampFuture

	accessSystemKeys    bool
	readSystemKeys      bool
	snapshotRYWDisable  bool
	nextWriteNoConflict bool
	sizeLimit           int

	commitStarted    bool
	committedVersion int64
	committed        bool
	cancelled        bool
}

// snapRef holds the attempt's snapshot. A cleanup on Tx releases it when a
// transaction is dropped without Cancel or Commit.
type snapRef struct {
	mu sync.Mutex
	s  Snapshot
}

func (r *snapRef) release() {
	r.mu.Lock()
	s := r.s
	r.s = nil
	r.mu.Unlock()
	if s != nil {
		s.Release()
	}
}

// New returns a transaction on b.
func New(b Backend) *Tx {
	t := &Tx{b: b, ref: &snapRef{}, policy: udb.NewRetryPolicy(), started: time.Now()}
	t.st = newAttempt()
	runtime.AddCleanup(t, func(r *snapRef) { r.release() }, t.ref)
	return t
}

func newAttempt() attempt {
	return attempt{writes: newWriteSet(), sizeLimit: udb.MaxTxnSize}
}

// endAttemptLocked releases the attempt's resources; pending futures fail
// with err.
func (t *Tx) endAttemptLocked(err error) {
	t.ref.release()
	for _, w := range t.st.watches {
		if !t.st.committed {
			w.Fire(err)
		}
	}
	if t.st.stamp != nil {
		t.st.stamp.resolve([10]byte{}, err)
	}
}

// usableLocked reports why the transaction cannot take an operation now.
func (t *Tx) usableLocked() error {
	switch {
	case t.st.cancelled:
		return errCode(udb.CodeTransactionCancelled)
	case t.st.commitStarted:
		return errCode(udb.CodeUsedDuringCommit)
	case t.timedOutLocked():
		return errCode(udb.CodeTransactionTimedOut)
	}
	return nil
}

// readableLocked is usableLocked plus the deferred error of an earlier write.
func (t *Tx) readableLocked() error {
	if err := t.usableLocked(); err != nil {
		return err
	}
	return t.st.deferred
}

func (t *Tx) deferLocked(err error) {
	if t.st.deferred == nil {
		t.st.deferred = err
	}
}

func (t *Tx) readEndLocked() []byte {
	if t.st.readSystemKeys || t.st.accessSystemKeys {
		return systemKeysEnd
	}
	return normalKeysEnd
}

// checkWriteKeyLocked validates a key for writing.
func (t *Tx) checkWriteKeyLocked(key []byte) error {
	limit := udb.MaxKeySize
	if len(key) > 0 && key[0] == 0xff {
		limit = udb.MaxSystemKeySize
	}
	if len(key) > limit {
		return errCode(udb.CodeKeyTooLarge)
	}
	return t.checkWriteBoundLocked(key, false)
}

// checkWriteBoundLocked checks a key (or an exclusive range end) against the
// writable key space.
func (t *Tx) checkWriteBoundLocked(key []byte, isEnd bool) error {
	end := normalKeysEnd
	if t.st.accessSystemKeys {
		end = systemKeysEnd
	}
	c := bytes.Compare(key, end)
	if c > 0 || (c == 0 && !isEnd) {
		return errCode(udb.CodeKeyOutsideLegalRange)
	}
	return nil
}

func (t *Tx) ensureSnapshotLocked(ctx context.Context) (Snapshot, error) {
	t.ref.mu.Lock()
	s := t.ref.s
	t.ref.mu.Unlock()
	if s != nil {
		return s, nil
	}
	var err error
	if t.st.readVersionSet {
		s, err = t.b.SnapshotAt(ctx, t.st.readVersion)
	} else {
		s, err = t.b.ReadVersion(ctx)
	}
	if err != nil {
		return nil, err
	}
	t.ref.mu.Lock()
	t.ref.s = s
	t.ref.mu.Unlock()
	t.st.readVersion, t.st.readVersionSet = s.Version(), true
	return s, nil
}

// mutate runs a write under the lock. Its error is not returned: as in
// FoundationDB it is deferred to the next read or to Commit.
func (t *Tx) mutate(f func() error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	err := t.usableLocked()
	if err == nil {
		err = f()
	}
	if err != nil {
		t.deferLocked(err)
	}
}

// checkSetLocked validates the key and value of a write.
func (t *Tx) checkSetLocked(key []byte, valueLen int) error {
	if err := t.checkWriteKeyLocked(key); err != nil {
		return err
	}
	if valueLen > udb.MaxValueSize {
		return errCode(udb.CodeValueTooLarge)
	}
	return nil
}

// Set implements udb.Transaction.
func (t *Tx) Set(key, value []byte) {
	t.mutate(func() error {
		if err := t.checkSetLocked(key, len(value)); err != nil {
			return err
		}
		k, v := clone(key), clone(value)
		t.st.writes.set(k, v)
		t.addMutationLocked(Mutation{Op: OpSet, Key: k, Value: v})
		return nil
	})
}

// Clear implements udb.Transaction.
func (t *Tx) Clear(key []byte) {
	t.mutate(func() error {
		if err := t.checkWriteKeyLocked(key); err != nil {
			if udb.HasCode(err, udb.CodeKeyTooLarge) {
				return nil // no key that long can exist: FoundationDB ignores the clear
			}
			return err
		}
		k := clone(key)
		t.st.writes.clear(k)
		t.addMutationLocked(Mutation{Op: OpClear, Key: k})
		return nil
	})
}

// ClearRange implements udb.Transaction.
func (t *Tx) ClearRange(begin, end []byte) {
	t.mutate(func() error {
		if bytes.Compare(begin, end) > 0 {
			return errCode(udb.CodeInvertedRange)
		}
		if err := t.checkWriteBoundLocked(begin, false); err != nil {
			return err
		}
		if err := t.checkWriteBoundLocked(end, true); err != nil {
			return err
		}
		if bytes.Equal(begin, end) {
			return nil
		}
		b, e := clone(begin), clone(end)
		t.st.writes.clearRange(b, e)
		t.addMutationLocked(Mutation{Op: OpClearRange, Key: b, Value: e})
		return nil
	})
}

// Atomic implements udb.Transaction.
func (t *Tx) Atomic(op udb.MutationType, key, param []byte) {
	t.mutate(func() error {
		k, p := clone(key), clone(param)
		switch {
		case op == udb.MutationSetVersionstampedKey:
			pos, body, ok := stampOffset(k)
			if !ok || pos+10 > len(body) {
				return errCode(udb.CodeClientInvalidOperation)
			}
			if err := t.checkSetLocked(body, len(p)); err != nil {
				return err
			}
			// Every key the stamp could produce is unreadable until commit.
			lo := append(clone(body[:pos]), make([]byte, 10)...)
			hi := append(append(clone(body[:pos]), bytes.Repeat([]byte{0xff}, 10)...), body[pos+10:]...)
			t.st.writes.unreadable = append(t.st.writes.unreadable, KeyRange{lo, udb.KeyAfter(hi)})
		case op == udb.MutationSetVersionstampedValue:
			pos, body, ok := stampOffset(p)
			if !ok || pos+10 > len(body) {
				return errCode(udb.CodeClientInvalidOperation)
			}
			if err := t.checkSetLocked(k, len(body)); err != nil {
				return err
			}
			t.st.writes.markUnreadable(k)
		case udb.IsAtomicOp(op):
			if err := t.checkSetLocked(k, len(p)); err != nil {
				return err
			}
			t.st.writes.atomic(op, k, p)
		default:
			return errCode(udb.CodeInvalidMutationType)
		}
		t.addMutationLocked(Mutation{Op: OpAtomic, Atomic: op, Key: k, Value: p})
		return nil
	})
}

// stampOffset splits a versionstamp operand into its body and the 4-byte
// little-endian placeholder offset that ends it.
func stampOffset(b []byte) (pos int, body []byte, ok bool) {
	if len(b) < 4 {
		return 0, nil, false
	}
	body = b[:len(b)-4]
	return int(binary.LittleEndian.Uint32(b[len(b)-4:])), body, true
}

func (t *Tx) addMutationLocked(m Mutation) {
	m.NoWriteConflict = t.st.nextWriteNoConflict
	t.st.nextWriteNoConflict = false
	t.st.mutations = append(t.st.mutations, m)
	t.st.size += len(m.Key) + len(m.Value)
	if !m.NoWriteConflict && m.Op != OpClearRange {
		t.st.size += len(m.Key) + 1 // its write-conflict range
	}
}

// AddReadConflictRange implements udb.Transaction.
func (t *Tx) AddReadConflictRange(begin, end []byte) error {
	return t.addConflictRange(begin, end, false)
}

// AddWriteConflictRange implements udb.Transaction.
func (t *Tx) AddWriteConflictRange(begin, end []byte) error {
	return t.addConflictRange(begin, end, true)
}

func (t *Tx) addConflictRange(begin, end []byte, write bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usableLocked(); err != nil {
		return err
	}
	if bytes.Compare(begin, end) > 0 {
		return errCode(udb.CodeInvertedRange)
	}
	if err := t.checkWriteBoundLocked(end, true); err != nil {
		return err
	}
	if bytes.Equal(begin, end) {
		return nil
	}
	r := KeyRange{clone(begin), clone(end)}
	if !write {
		// As for reads, the parts the transaction's own writes determine
		// cannot conflict (FoundationDB's updateConflictMap).
		t.addReadSpanLocked(r, true)
		return nil
	}
	t.st.size += len(r.Begin) + len(r.End)
	t.st.writeConflicts = append(t.st.writeConflicts, r)
	return nil
}

// SetReadVersion implements udb.Transaction.
func (t *Tx) SetReadVersion(v int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usableLocked(); err != nil {
		t.deferLocked(err)
		return
	}
	t.ref.release()
	t.st.readVersion, t.st.readVersionSet = v, true
}

// GetReadVersion implements udb.ReadTransaction.
func (t *Tx) GetReadVersion(ctx context.Context) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.readableLocked(); err != nil {
		return 0, err
	}
	s, err := t.ensureSnapshotLocked(ctx)
	if err != nil {
		return 0, err
	}
	return s.Version(), nil
}

// Watch implements udb.Transaction.
func (t *Tx) Watch(key []byte) udb.Watch {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := newWatch(key, t.b)
	if err := t.usableLocked(); err != nil {
		w.Fire(err)
		return w
	}
	if bytes.Compare(key, t.readEndLocked()) >= 0 {
		w.Fire(errCode(udb.CodeKeyOutsideLegalRange))
		return w
	}
	if len(key) > udb.MaxKeySize {
		w.Fire(errCode(udb.CodeKeyTooLarge))
		return w
	}
	// A watch reads the key: a concurrent change fails the commit, and with
	// it the watch, unless the transaction wrote the key itself.
	if e := t.st.writes.get(key); e == nil || e.kind != known {
		t.addReadSpanLocked(KeyRange{w.Key, udb.KeyAfter(w.Key)}, false)
	}
	t.st.watches = append(t.st.watches, w)
	return w
}

// GetVersionstamp implements udb.Transaction.
func (t *Tx) GetVersionstamp() udb.VersionstampFuture {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.st.stamp == nil {
		t.st.stamp = newVersionstampFuture()
		if err := t.usableLocked(); err != nil {
			t.st.stamp.resolve([10]byte{}, err)
		}
	}
	return t.st.stamp
}

// Commit implements udb.Transaction.
func (t *Tx) Commit(ctx context.Context) error {
	t.mu.Lock()
	if err := t.readableLocked(); err != nil {
		t.mu.Unlock()
		return err
	}
	t.st.commitStarted = true
	fail := func(err error) error {
		t.endAttemptLocked(err)
		t.mu.Unlock()
		return err
	}
	if t.st.size > t.st.sizeLimit {
		return fail(errCode(udb.CodeTransactionTooLarge))
	}
	s, err := t.ensureSnapshotLocked(ctx)
	if err != nil {
		return fail(err)
	}
	for _, w := range t.st.watches {
		if w.Value, w.Present, err = t.watchValueLocked(s, w.Key); err != nil {
			return fail(err)
		}
	}
	if len(t.st.mutations) == 0 && len(t.st.writeConflicts) == 0 {
		t.st.committed, t.st.committedVersion = true, -1
		t.b.ArmWatches(t.st.watches)
		t.endAttemptLocked(errCode(udb.CodeNoCommitVersion)) // fails only the versionstamp
		t.mu.Unlock()
		return nil
	}
	req := &CommitRequest{
		ReadVersion:    s.Version(),
		ReadConflicts:  t.st.readConflicts,
		WriteConflicts: t.writeConflictsLocked(),
		Mutations:      t.st.mutations,
		Watches:        t.st.watches,
	}
	t.ref.release()
	t.mu.Unlock()

	res, err := t.b.Commit(ctx, req)

	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.endAttemptLocked(err)
		return err
	}
	t.st.committed, t.st.committedVersion = true, res.Version
	if t.st.stamp != nil {
		t.st.stamp.resolve(res.Versionstamp, nil)
	}
	return nil
}

// watchValueLocked is the value a watch compares against: the transaction's
// own write, or the value at its read version.
func (t *Tx) watchValueLocked(s Snapshot, key []byte) ([]byte, bool, error) {
	e := t.st.writes.get(key)
	if e != nil && e.kind == known {
		return e.value, e.present, nil
	}
	if e == nil && t.st.writes.inCleared(key) {
		return nil, false, nil
	}
	v, err := s.Get(key)
	if err != nil {
		return nil, false, err
	}
	if e != nil {
		v, p := e.resolve(v, v != nil)
		return v, p, nil
	}
	return v, v != nil, nil
}

func (t *Tx) writeConflictsLocked() []KeyRange {
	out := append([]KeyRange(nil), t.st.writeConflicts...)
	for _, m := range t.st.mutations {
		if m.NoWriteConflict || (m.Op == OpAtomic && m.Atomic == udb.MutationSetVersionstampedKey) {
			continue // a stamped key's range is added by the backend, which knows the stamp
		}
		if m.Op == OpClearRange {
			out = append(out, KeyRange{m.Key, m.Value})
		} else {
			out = append(out, KeyRange{m.Key, udb.KeyAfter(m.Key)})
		}
	}
	return out
}

// GetCommittedVersion implements udb.Transaction.
func (t *Tx) GetCommittedVersion() (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.st.committed {
		return 0, errCode(udb.CodeClientInvalidOperation)
	}
	return t.st.committedVersion, nil
}

// OnError implements udb.Transaction.
func (t *Tx) OnError(ctx context.Context, err error) error {
	t.mu.Lock()
	if t.timedOutLocked() {
		return t.failLocked(errCode(udb.CodeTransactionTimedOut))
	}
	policy := t.policy
	t.mu.Unlock()
	werr := policy.Wait(ctx, err)
	t.mu.Lock()
	if werr == nil && t.timedOutLocked() {
		werr = errCode(udb.CodeTransactionTimedOut)
	}
	if werr != nil {
		return t.failLocked(werr)
	}
	defer t.mu.Unlock()
	t.policy = policy
	t.resetAttemptLocked()
	return nil
}

func (t *Tx) timedOutLocked() bool {
	return t.timeout > 0 && time.Since(t.started) > t.timeout
}

// failLocked ends OnError without a retry: as in FoundationDB the
// transaction is cancelled, so later operations fail with 1025. It unlocks.
func (t *Tx) failLocked(err error) error {
	if !t.st.cancelled {
		t.endAttemptLocked(errCode(udb.CodeTransactionCancelled))
		t.st.cancelled = true
	}
	t.mu.Unlock()
	return err
}

func (t *Tx) resetAttemptLocked() {
	t.endAttemptLocked(errCode(udb.CodeTransactionCancelled))
	t.st = newAttempt()
}

// Reset implements udb.Transaction.
func (t *Tx) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.resetAttemptLocked()
	t.policy = udb.NewRetryPolicy()
	t.timeout, t.started = 0, time.Now()
}

// Cancel implements udb.Transaction.
func (t *Tx) Cancel() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.st.cancelled {
		return
	}
	t.endAttemptLocked(errCode(udb.CodeTransactionCancelled))
	t.st.cancelled = true
}

// Options implements udb.Transaction.
func (t *Tx) Options() udb.TransactionOptions { return options{t} }

type options struct{ t *Tx }

func (o options) with(f func(t *Tx) error) error {
	o.t.mu.Lock()
	defer o.t.mu.Unlock()
	return f(o.t)
}

func (o options) SetTimeout(d time.Duration) error {
	return o.with(func(t *Tx) error {
		if d < 0 {
			return errCode(udb.CodeInvalidOptionValue)
		}
		t.timeout = d
		return nil
	})
}

func (o options) SetRetryLimit(n int) error {
	return o.with(func(t *Tx) error {
		if n < udb.UnlimitedRetries {
			return errCode(udb.CodeInvalidOptionValue)
		}
		t.policy.Limit = n
		return nil
	})
}

func (o options) SetMaxRetryDelay(d time.Duration) error {
	return o.with(func(t *Tx) error {
		if d < 0 {
			return errCode(udb.CodeInvalidOptionValue)
		}
		t.policy.MaxDelay = d
		return nil
	})
}

func (o options) SetNextWriteNoWriteConflictRange() error {
	return o.with(func(t *Tx) error { t.st.nextWriteNoConflict = true; return nil })
}

func (o options) SetSnapshotRYWDisable() error {
	return o.with(func(t *Tx) error { t.st.snapshotRYWDisable = true; return nil })
}

func (o options) SetReadSystemKeys() error {
	return o.with(func(t *Tx) error { t.st.readSystemKeys = true; return nil })
}

func (o options) SetAccessSystemKeys() error {
	return o.with(func(t *Tx) error { t.st.accessSystemKeys = true; return nil })
}

func (o options) SetSizeLimit(n int) error {
	return o.with(func(t *Tx) error {
		if n < 32 || n > udb.MaxTxnSize {
			return errCode(udb.CodeInvalidOptionValue)
		}
		t.st.sizeLimit = n
		return nil
	})
}

// clone copies b; the copy is never nil, so present-empty values stay present.
func clone(b []byte) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	return out
}
