package embedded

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/pkg/udb/internal/txn"
	"github.com/cockroachdb/pebble/v2"
)

// sharedSnap is one pebble snapshot, the state after the commit at version
// from, shared by every transaction that reads at a version in [from, to).
// The DB holds one reference while the snapshot is the newest or recent.
type sharedSnap struct {
	db        *DB
	ps        *pebble.Snapshot
	from      int64
	to        atomic.Int64 // the next commit's version; MaxInt64 while newest
	refs      atomic.Int32
	closeOnce sync.Once
}

// newSharedSnap registers ps with the DB, which closes it on Close if a
// transaction still holds it then.
func (db *DB) newSharedSnap(ps *pebble.Snapshot, from int64) *sharedSnap {
	s := &sharedSnap{db: db, ps: ps, from: from}
	s.to.Store(math.MaxInt64)
	s.refs.Store(1)
	db.live.Lock()
	db.live.snaps[s] = struct{}{}
	db.live.Unlock()
	return s
}

// acquire takes a reference unless the snapshot is already released.
func (s *sharedSnap) acquire() bool {
	for {
		n := s.refs.Load()
		if n <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (s *sharedSnap) release() {
	if s.refs.Add(-1) == 0 {
		s.close()
	}
}

func (s *sharedSnap) close() {
	s.closeOnce.Do(func() {
		_ = s.ps.Close()
		s.db.live.Lock()
		delete(s.db.live.snaps, s)
		s.db.live.Unlock()
	})
}

// snapHandle is one transaction's view: a shared snapshot at its version.
type snapHandle struct {
	db       *DB
	shared   *sharedSnap
	version  int64
	released atomic.Bool
}

var _ txn.Snapshot = (*snapHandle)(nil)

func (h *snapHandle) Version() int64 { return h.version }

// live fails reads once the version has left the MVCC window.
func (h *snapHandle) live() error {
	if h.db.clock.now()-h.version > udb.MVCCWindowVersions {
		return udb.Error{Code: udb.CodeTransactionTooOld}
	}
	if h.released.Load() {
		return udb.Error{Code: udb.CodeTransactionCancelled}
	}
	return nil
}

// enter admits a read: the store must be open (see DB.open) and the
// version inside the window. On success the caller must call leave.
func (h *snapHandle) enter() error {
	h.db.open.RLock()
	err := errClosed
	if !h.db.open.closed {
		err = h.live()
	}
	if err != nil {
		h.db.open.RUnlock()
	}
	return err
}

func (h *snapHandle) leave() { h.db.open.RUnlock() }

func (h *snapHandle) Get(key []byte) ([]byte, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.leave()
	v, closer, err := h.shared.ps.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(v))
	copy(out, v)
	_ = closer.Close()
	return out, nil
}

// NewIter holds the store open until the iterator is closed; the caller
// must not start another read before that.
func (h *snapHandle) NewIter(begin, end []byte, reverse bool, _ int) (txn.Iter, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	if len(begin) == 0 {
		begin = nil // pebble's invariant checks reject an empty, non-nil bound
	}
	it, err := h.shared.ps.NewIter(&pebble.IterOptions{LowerBound: begin, UpperBound: end})
	if err != nil {
		h.leave()
		return nil, err
	}
	return &iter{it: it, reverse: reverse, h: h}, nil
}

func (h *snapHandle) EstimateSize(begin, end []byte) (int64, error) {
	if err := h.enter(); err != nil {
		return 0, err
	}
	defer h.leave()
	n, err := h.db.pdb.EstimateDiskUsage(begin, end)
	return int64(n), err
}

func (h *snapHandle) Release() {
	if h.released.CompareAndSwap(false, true) {
		h.shared.release()
	}
}

// iter adapts a pebble iterator to either direction.
type iter struct {
	it      *pebble.Iterator
	reverse bool
	h       *snapHandle
}

func (i *iter) First() bool {
	if i.reverse {
		return i.it.Last()
	}
	return i.it.First()
}

// Next moves forward with NextPrefix rather than pebble's Next: the default
// comparer's prefix is the whole key, and NextPrefix seeks past the older
// versions of the current key once it meets one, where Next steps over each.
// A key rewritten by every transaction (a runner's free-slot count) has
// thousands of versions in the memtable until it is flushed; stepping over
// them made each range read across it cost O(writes since the flush).
func (i *iter) Next() bool {
	if i.reverse {
		return i.it.Prev()
	}
	return i.it.NextPrefix()
}

func (i *iter) Seek(key []byte) bool {
	if i.reverse {
		return i.it.SeekLT(key)
	}
	return i.it.SeekGE(key)
}

func (i *iter) Key() []byte   { return i.it.Key() }
func (i *iter) Value() []byte { return i.it.Value() }
func (i *iter) Err() error    { return i.it.Error() }
func (i *iter) Close() error {
	err := i.it.Close()
	i.h.leave()
	return err
}
