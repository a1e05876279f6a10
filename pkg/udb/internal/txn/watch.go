package txn

import (
	"bytes"
	"context"
	"sync"

	"github.com/berthhq/berth/pkg/udb"
)

// Watch is a udb.Watch. The transaction creates it; the backend arms it and
// calls Fire when the key's value no longer equals Value.
type Watch struct {
	Key     []byte
	Value   []byte // the value the transaction saw or wrote
	Present bool

	backend  Backend
	done     chan struct{}
	once     sync.Once
	err      error // set before done closes
	armedMu  sync.Mutex
	armed    bool
	disarmed bool
}

func newWatch(key []byte, b Backend) *Watch {
	return &Watch{Key: append([]byte(nil), key...), backend: b, done: make(chan struct{})}
}

// Differs reports whether a stored value differs from the watched one.
func (w *Watch) Differs(value []byte, present bool) bool {
	return present != w.Present || !bytes.Equal(value, w.Value)
}

// Fire completes the watch with err (nil: the value changed). Later calls
// are ignored.
func (w *Watch) Fire(err error) {
	w.once.Do(func() {
		w.err = err
		close(w.done)
	})
}

// Done reports whether the watch has completed.
func (w *Watch) Done() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// Wait implements udb.Watch.
func (w *Watch) Wait(ctx context.Context) error {
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Cancel implements udb.Watch.
func (w *Watch) Cancel() {
	w.Fire(udb.Error{Code: udb.CodeOperationCancelled})
	w.armedMu.Lock()
	armed := w.armed
	w.disarmed = true
	w.armedMu.Unlock()
	if armed {
		w.backend.DisarmWatch(w)
	}
}

// MarkArmed is called by the backend when it registers the watch; it reports
// false if the watch was cancelled first, in which case it must not be kept.
func (w *Watch) MarkArmed() bool {
	w.armedMu.Lock()
	defer w.armedMu.Unlock()
	if w.disarmed || w.Done() {
		return false
	}
	w.armed = true
	return true
}

// versionstampFuture resolves when the transaction's commit ends.
type versionstampFuture struct {
	done  chan struct{}
	once  sync.Once
	stamp [10]byte
	err   error
}

func newVersionstampFuture() *versionstampFuture {
	return &versionstampFuture{done: make(chan struct{})}
}

func (f *versionstampFuture) resolve(stamp [10]byte, err error) {
	f.once.Do(func() {
		f.stamp, f.err = stamp, err
		close(f.done)
	})
}

func (f *versionstampFuture) Get(ctx context.Context) ([10]byte, error) {
	select {
	case <-f.done:
		return f.stamp, f.err
	case <-ctx.Done():
		return [10]byte{}, ctx.Err()
	}
}
