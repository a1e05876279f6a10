//go:build fdb

package fdb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	fdbgo "github.com/apple/foundationdb/bindings/go/src/fdb"
	"github.com/berthhq/berth/pkg/udb"
)

// database is a udb.Database over a binding database.
type database struct {
	clusterFile string
	db          fdbgo.Database
	private     bool // opened for this handle alone (not shared)
	closeOnce   sync.Once
}

var _ udb.Database = (*database)(nil)

func (d *database) CreateTransaction() (udb.Transaction, error) {
	tr, err := d.db.CreateTransaction()
	if err != nil {
		return nil, mapErr(err)
	}
	t := &transaction{tr: tr}
	t.reader = reader{rt: tr, tx: t}
	return t, nil
}

func (d *database) Transact(ctx context.Context, f func(udb.Transaction) (any, error)) (any, error) {
	return udb.RunTransact(ctx, d, f)
}

func (d *database) ReadTransact(ctx context.Context, f func(udb.ReadTransaction) (any, error)) (any, error) {
	return udb.RunReadTransact(ctx, d, f)
}

// Close releases the handle; the connection closes with its last user. The
// network thread keeps running: the binding cannot start it again.
func (d *database) Close() error {
	d.closeOnce.Do(func() {
		if d.private {
			d.db.Close()
		} else {
			release(d.clusterFile)
		}
	})
	return nil
}

// mapErr turns the binding's errors into udb.Error with the same code;
// other errors pass unchanged. Codes udb has no name for keep FoundationDB's
// own description in the message.
func mapErr(err error) error {
	var fe fdbgo.Error
	if err == nil || !errors.As(err, &fe) {
		return err
	}
	ue := udb.Error{Code: fe.Code}
	if ue.Name() == "unknown_error" {
		return fmt.Errorf("%s: %w", fe.Error(), ue)
	}
	return ue
}

// await waits for f through get. If ctx ends first, f is cancelled (which
// makes it ready at once) and ctx's error is returned.
func await[T any](ctx context.Context, f fdbgo.Future, get func() (T, error)) (T, error) {
	stop := context.AfterFunc(ctx, f.Cancel)
	v, err := get()
	if !stop() {
		var zero T
		return zero, ctx.Err()
	}
	return v, mapErr(err)
}

func awaitNil(ctx context.Context, f fdbgo.FutureNil) error {
	_, err := await(ctx, f, func() (struct{}, error) { return struct{}{}, f.Get() })
	return err
}

// transaction is a udb.Transaction over a binding transaction, which is
// itself safe for concurrent use.
type transaction struct {
	reader
	tr fdbgo.Transaction

	mu sync.Mutex
	// deferred is an invalid-argument error of a write call that the
	// binding cannot express (an unknown mutation type); like FoundationDB's
	// own, it fails the next read or the commit.
	deferred error
}

var _ udb.Transaction = (*transaction)(nil)

func (t *transaction) deferredErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.deferred
}

func (t *transaction) setDeferred(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deferred == nil {
		t.deferred = err
	}
}

func (t *transaction) clearDeferred() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.deferred = nil
}

func (t *transaction) Set(key, value []byte) { t.tr.Set(fdbgo.Key(key), value) }
func (t *transaction) Clear(key []byte)      { t.tr.Clear(fdbgo.Key(key)) }
func (t *transaction) ClearRange(begin, end []byte) {
	t.tr.ClearRange(fdbgo.KeyRange{Begin: fdbgo.Key(begin), End: fdbgo.Key(end)})
}

func (t *transaction) Atomic(op udb.MutationType, key, param []byte) {
	k := fdbgo.Key(key)
	switch op {
	case udb.MutationAdd:
		t.tr.Add(k, param)
	case udb.MutationBitAnd:
		t.tr.BitAnd(k, param)
	case udb.MutationBitOr:
		t.tr.BitOr(k, param)
	case udb.MutationBitXor:
		t.tr.BitXor(k, param)
	case udb.MutationAppendIfFits:
		t.tr.AppendIfFits(k, param)
	case udb.MutationMax:
		t.tr.Max(k, param)
	case udb.MutationMin:
		t.tr.Min(k, param)
	case udb.MutationSetVersionstampedKey:
		t.tr.SetVersionstampedKey(k, param)
	case udb.MutationSetVersionstampedValue:
		t.tr.SetVersionstampedValue(k, param)
	case udb.MutationByteMin:
		t.tr.ByteMin(k, param)
	case udb.MutationByteMax:
		t.tr.ByteMax(k, param)
	case udb.MutationCompareAndClear:
		t.tr.CompareAndClear(k, param)
	default:
		t.setDeferred(udb.Error{Code: udb.CodeInvalidMutationType})
	}
}

func (t *transaction) AddReadConflictRange(begin, end []byte) error {
	return mapErr(t.tr.AddReadConflictRange(fdbgo.KeyRange{Begin: fdbgo.Key(begin), End: fdbgo.Key(end)}))
}

func (t *transaction) AddWriteConflictRange(begin, end []byte) error {
	return mapErr(t.tr.AddWriteConflictRange(fdbgo.KeyRange{Begin: fdbgo.Key(begin), End: fdbgo.Key(end)}))
}

func (t *transaction) SetReadVersion(v int64) { t.tr.SetReadVersion(v) }

func (t *transaction) Watch(key []byte) udb.Watch {
	return &watch{f: t.tr.Watch(fdbgo.Key(key))}
}

func (t *transaction) GetVersionstamp() udb.VersionstampFuture {
	return versionstamp{f: t.tr.GetVersionstamp()}
}

// Commit commits. If ctx ends first, the commit is cancelled but may still
// take effect: the error says so and wraps ctx's error.
func (t *transaction) Commit(ctx context.Context) error {
	if err := t.deferredErr(); err != nil {
		return err
	}
	f := t.tr.Commit()
	err := awaitNil(ctx, f)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("fdb: the context ended during the commit, which may or may not have taken effect: %w", err)
	}
	return err
}

func (t *transaction) GetCommittedVersion() (int64, error) {
	v, err := t.tr.GetCommittedVersion()
	return v, mapErr(err)
}

// OnError hands a udb error's code to FoundationDB's on_error, which resets
// the transaction and waits out the backoff when the code is retryable.
// Other errors are returned unchanged, and the transaction is cancelled.
func (t *transaction) OnError(ctx context.Context, err error) error {
	var ue udb.Error
	if !errors.As(err, &ue) {
		t.tr.Cancel()
		return err
	}
	if oerr := awaitNil(ctx, t.tr.OnError(fdbgo.Error{Code: ue.Code})); oerr != nil {
		var oe udb.Error
		if errors.As(oerr, &oe) && oe.Code == ue.Code {
			return err // not retryable: the caller's error, as it was
		}
		return oerr
	}
	t.clearDeferred()
	return nil
}

func (t *transaction) Options() udb.TransactionOptions { return options{o: t.tr.Options()} }

func (t *transaction) Reset() {
	t.tr.Reset()
	t.clearDeferred()
}

func (t *transaction) Cancel() { t.tr.Cancel() }

// reader is the read half, over the transaction or its snapshot view.
type reader struct {
	rt fdbgo.ReadTransaction
	tx *transaction
}

func (r reader) Get(ctx context.Context, key []byte) ([]byte, error) {
	if err := r.tx.deferredErr(); err != nil {
		return nil, err
	}
	f := r.rt.Get(fdbgo.Key(key))
	return await(ctx, f, f.Get)
}

func (r reader) GetKey(ctx context.Context, sel udb.KeySelector) ([]byte, error) {
	if err := r.tx.deferredErr(); err != nil {
		return nil, err
	}
	f := r.rt.GetKey(selector(sel))
	k, err := await(ctx, f, f.Get)
	return []byte(k), err
}

func (r reader) GetRange(begin, end udb.KeySelector, opt udb.RangeOptions) udb.RangeIterator {
	if err := r.tx.deferredErr(); err != nil {
		return &rangeIter{err: err}
	}
	mode, ok := streamingModes[opt.Mode]
	if !ok {
		return &rangeIter{err: fmt.Errorf("fdb: unknown streaming mode %d: %w", opt.Mode, udb.Error{Code: udb.CodeInvalidOptionValue})}
	}
	rr := r.rt.GetRange(fdbgo.SelectorRange{Begin: selector(begin), End: selector(end)},
		fdbgo.RangeOptions{Limit: opt.Limit, Mode: mode, Reverse: opt.Reverse})
	return &rangeIter{tx: r.tx, ri: rr.Iterator()}
}

func (r reader) GetReadVersion(ctx context.Context) (int64, error) {
	f := r.rt.GetReadVersion()
	return await(ctx, f, f.Get)
}

func (r reader) GetEstimatedRangeSizeBytes(ctx context.Context, begin, end []byte) (int64, error) {
	f := r.rt.GetEstimatedRangeSizeBytes(fdbgo.KeyRange{Begin: fdbgo.Key(begin), End: fdbgo.Key(end)})
	return await(ctx, f, f.Get)
}

// Snapshot returns the snapshot view; a snapshot's snapshot is itself.
func (r reader) Snapshot() udb.ReadTransaction {
	return reader{rt: r.tx.tr.Snapshot(), tx: r.tx}
}

// prefetchRows is how many rows of a range Prefetch reads.
const prefetchRows = 64

// Prefetch runs snapshot reads of every key and range at once and waits for them: the
// client's read-your-writes cache keeps what they read for the transaction's later reads,
// which then need no round trip. Errors are left for those reads.
func (r reader) Prefetch(ctx context.Context, keys [][]byte, ranges []udb.KeyRange) {
	if r.tx.deferredErr() != nil {
		return
	}
	snap := r.tx.tr.Snapshot()
	var wg sync.WaitGroup
	for _, k := range keys {
		f := snap.Get(fdbgo.Key(k)) // a future: the read starts here
		wg.Go(func() { _, _ = await(ctx, f, f.Get) })
	}
	for _, rg := range ranges { // a range result starts reading when read
		rr := snap.GetRange(fdbgo.KeyRange{Begin: fdbgo.Key(rg.Begin), End: fdbgo.Key(rg.End)},
			fdbgo.RangeOptions{Limit: prefetchRows, Mode: fdbgo.StreamingModeWantAll})
		wg.Go(func() { _, _ = rr.GetSliceWithError() })
	}
	wg.Wait()
}

func selector(s udb.KeySelector) fdbgo.KeySelector {
	return fdbgo.KeySelector{Key: fdbgo.Key(s.Key), OrEqual: s.OrEqual, Offset: s.Offset}
}

// streamingModes maps udb's modes to the binding's (which numbers them
// differently from both udb and the C API).
var streamingModes = map[udb.StreamingMode]fdbgo.StreamingMode{
	udb.StreamingModeIterator: fdbgo.StreamingModeIterator,
	udb.StreamingModeWantAll:  fdbgo.StreamingModeWantAll,
	udb.StreamingModeExact:    fdbgo.StreamingModeExact,
	udb.StreamingModeSmall:    fdbgo.StreamingModeSmall,
	udb.StreamingModeMedium:   fdbgo.StreamingModeMedium,
	udb.StreamingModeLarge:    fdbgo.StreamingModeLarge,
	udb.StreamingModeSerial:   fdbgo.StreamingModeSerial,
}

// rangeIter walks the binding's iterator, which fetches batches lazily.
type rangeIter struct {
	tx   *transaction
	ri   *fdbgo.RangeIterator
	kv   udb.KeyValue
	err  error
	done bool
}

// Next advances. The binding does not expose a batch's future, so a ctx
// that ends while a batch is being fetched cancels the transaction.
func (it *rangeIter) Next(ctx context.Context) bool {
	if it.done || it.err != nil {
		return false
	}
	if err := ctx.Err(); err != nil {
		it.err = err
		return false
	}
	stop := context.AfterFunc(ctx, it.tx.tr.Cancel)
	ok := it.ri.Advance()
	var kv fdbgo.KeyValue
	var err error
	if ok {
		kv, err = it.ri.Get()
	}
	if !stop() {
		it.err = ctx.Err()
		return false
	}
	switch {
	case err != nil:
		it.err = mapErr(err)
		return false
	case !ok:
		it.done = true
		return false
	}
	it.kv = udb.KeyValue{Key: []byte(kv.Key), Value: kv.Value}
	return true
}

func (it *rangeIter) KeyValue() udb.KeyValue { return it.kv }
func (it *rangeIter) Err() error             { return it.err }

func (it *rangeIter) All(ctx context.Context) ([]udb.KeyValue, error) {
	var out []udb.KeyValue
	for it.Next(ctx) {
		out = append(out, it.kv)
	}
	return out, it.err
}

// watch is a udb.Watch over the binding's watch future. Wait with a
// cancellable context waits in a goroutine that ends when the watch fires
// or is cancelled: cancel a watch you stop waiting for, as FoundationDB asks.
type watch struct {
	f fdbgo.FutureNil

	once sync.Once
	done chan struct{}
	err  error
}

func (w *watch) Wait(ctx context.Context) error {
	if ctx.Done() == nil {
		return mapErr(w.f.Get())
	}
	w.once.Do(func() {
		w.done = make(chan struct{})
		go func() {
			defer close(w.done)
			w.err = mapErr(w.f.Get())
		}()
	})
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Cancel cancels the watch: Wait returns operation_cancelled (1101).
func (w *watch) Cancel() { w.f.Cancel() }

type versionstamp struct{ f fdbgo.FutureKey }

func (v versionstamp) Get(ctx context.Context) ([10]byte, error) {
	var out [10]byte
	k, err := await(ctx, v.f, v.f.Get)
	if err != nil {
		return out, err
	}
	if len(k) != len(out) {
		return out, fmt.Errorf("fdb: the versionstamp has %d bytes, want %d", len(k), len(out))
	}
	copy(out[:], k)
	return out, nil
}

// options sets transaction options. Durations are whole milliseconds,
// rounded up so that a short positive duration does not mean "none".
type options struct{ o fdbgo.TransactionOptions }

func millis(d time.Duration) int64 {
	if d <= 0 {
		return int64(d / time.Millisecond)
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

func (o options) SetTimeout(d time.Duration) error { return mapErr(o.o.SetTimeout(millis(d))) }
func (o options) SetRetryLimit(n int) error        { return mapErr(o.o.SetRetryLimit(int64(n))) }
func (o options) SetMaxRetryDelay(d time.Duration) error {
	return mapErr(o.o.SetMaxRetryDelay(millis(d)))
}
func (o options) SetNextWriteNoWriteConflictRange() error {
	return mapErr(o.o.SetNextWriteNoWriteConflictRange())
}
func (o options) SetSnapshotRYWDisable() error { return mapErr(o.o.SetSnapshotRywDisable()) }
func (o options) SetReadSystemKeys() error     { return mapErr(o.o.SetReadSystemKeys()) }
func (o options) SetAccessSystemKeys() error   { return mapErr(o.o.SetAccessSystemKeys()) }
func (o options) SetSizeLimit(n int) error     { return mapErr(o.o.SetSizeLimit(int64(n))) }
