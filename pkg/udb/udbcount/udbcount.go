// Package udbcount counts what a program asks of its store: transactions, commits, reads,
// writes, conflict ranges and bytes, at the udb Database and Transaction interfaces, over any
// driver. bench/storecost uses it to measure the store's cost of each user operation
// (docs/scaling.md).
package udbcount

import (
	"context"
	"sync"

	"github.com/berthhq/berth/pkg/udb"
)

// Counts is what the counted transactions did. A retried transaction counts each attempt.
type Counts struct {
	// Transactions are the transactions created; Retries the attempts OnError started again.
	Transactions, Retries int64
	// Commits are the commits of attempts that wrote (a mutation or a write conflict range):
	// those that reach FoundationDB's commit proxies. Conflicts are those refused with
	// not_committed (1020).
	Commits, Conflicts int64
	// Gets are point reads (Get, GetKey), RangeReads range reads started; KeysRead the keys
	// they returned (found values and rows).
	Gets, RangeReads, KeysRead int64
	// Sets, Clears (Clear and ClearRange) and Atomics are the mutations.
	Sets, Clears, Atomics int64
	// ReadConflictRanges and WriteConflictRanges are the conflict ranges of the counted
	// commits: one per serializable read, watch and write (unless the write was told to add
	// none), plus those added explicitly.
	ReadConflictRanges, WriteConflictRanges int64
	// BytesRead are the keys and values returned; BytesWritten the keys, values and operands
	// of the mutations (both ends of a cleared range).
	BytesRead, BytesWritten int64
}

// Writes is the number of mutations.
func (c Counts) Writes() int64 { return c.Sets + c.Clears + c.Atomics }

// Reads is the number of reads: point reads and range reads.
func (c Counts) Reads() int64 { return c.Gets + c.RangeReads }

// Sub returns c minus o: what happened between two readings.
func (c Counts) Sub(o Counts) Counts {
	return Counts{
		Transactions: c.Transactions - o.Transactions, Retries: c.Retries - o.Retries,
		Commits: c.Commits - o.Commits, Conflicts: c.Conflicts - o.Conflicts,
		Gets: c.Gets - o.Gets, RangeReads: c.RangeReads - o.RangeReads, KeysRead: c.KeysRead - o.KeysRead,
		Sets: c.Sets - o.Sets, Clears: c.Clears - o.Clears, Atomics: c.Atomics - o.Atomics,
		ReadConflictRanges: c.ReadConflictRanges - o.ReadConflictRanges, WriteConflictRanges: c.WriteConflictRanges - o.WriteConflictRanges,
		BytesRead: c.BytesRead - o.BytesRead, BytesWritten: c.BytesWritten - o.BytesWritten,
	}
}

// IsZero reports whether nothing was counted.
func (c Counts) IsZero() bool { return c == Counts{} }

// Options configures a DB.
type Options struct {
	// Skip, when set, is asked at each CreateTransaction whether to leave that transaction
	// uncounted (for example a benchmark's background loops, told apart by their stack).
	Skip func() bool
}

// DB is a udb.Database whose transactions are counted.
type DB struct {
	udb.Database
	o Options

	mu sync.Mutex
	c  Counts
}

// Wrap returns db with its transactions counted. Closing the DB closes db.
func Wrap(db udb.Database, o Options) *DB { return &DB{Database: db, o: o} }

// Counts returns the counts so far.
func (d *DB) Counts() Counts {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.c
}

func (d *DB) add(f func(c *Counts)) {
	d.mu.Lock()
	f(&d.c)
	d.mu.Unlock()
}

func (d *DB) CreateTransaction() (udb.Transaction, error) {
	tx, err := d.Database.CreateTransaction()
	if err != nil || (d.o.Skip != nil && d.o.Skip()) {
		return tx, err
	}
	d.add(func(c *Counts) { c.Transactions++ })
	return &countedTx{Transaction: tx, d: d}, nil
}

func (d *DB) Transact(ctx context.Context, f func(udb.Transaction) (any, error)) (any, error) {
	return udb.RunTransact(ctx, d, f)
}

func (d *DB) ReadTransact(ctx context.Context, f func(udb.ReadTransaction) (any, error)) (any, error) {
	return udb.RunReadTransact(ctx, d, f)
}

// countedTx counts one transaction. Reads and mutations go to the DB's counts at once;
// conflict ranges wait for the commit, where they are sent.
type countedTx struct {
	udb.Transaction
	d *DB

	mu                   sync.Mutex
	wrote                bool // a mutation or write conflict range in this attempt
	readRanges           int64
	writeRanges          int64
	nextNoWriteConflicts bool
}

// reset starts a new attempt.
func (t *countedTx) reset() {
	t.mu.Lock()
	t.wrote, t.readRanges, t.writeRanges, t.nextNoWriteConflicts = false, 0, 0, false
	t.mu.Unlock()
}

func (t *countedTx) readConflict() {
	t.mu.Lock()
	t.readRanges++
	t.mu.Unlock()
}

// mutation counts a write of n bytes.
func (t *countedTx) mutation(n int, f func(c *Counts)) {
	t.mu.Lock()
	t.wrote = true
	if t.nextNoWriteConflicts {
		t.nextNoWriteConflicts = false
	} else {
		t.writeRanges++
	}
	t.mu.Unlock()
	t.d.add(func(c *Counts) {
		f(c)
		c.BytesWritten += int64(n)
	})
}

func (t *countedTx) Get(ctx context.Context, key []byte) ([]byte, error) {
	t.readConflict()
	return reader{t.d, t.Transaction}.Get(ctx, key)
}

func (t *countedTx) GetKey(ctx context.Context, sel udb.KeySelector) ([]byte, error) {
	t.readConflict()
	return reader{t.d, t.Transaction}.GetKey(ctx, sel)
}

func (t *countedTx) GetRange(begin, end udb.KeySelector, opt udb.RangeOptions) udb.RangeIterator {
	t.readConflict()
	return reader{t.d, t.Transaction}.GetRange(begin, end, opt)
}

func (t *countedTx) Snapshot() udb.ReadTransaction {
	return reader{t.d, t.Transaction.Snapshot()}
}

func (t *countedTx) Set(key, value []byte) {
	t.mutation(len(key)+len(value), func(c *Counts) { c.Sets++ })
	t.Transaction.Set(key, value)
}

func (t *countedTx) Clear(key []byte) {
	t.mutation(len(key), func(c *Counts) { c.Clears++ })
	t.Transaction.Clear(key)
}

func (t *countedTx) ClearRange(begin, end []byte) {
	t.mutation(len(begin)+len(end), func(c *Counts) { c.Clears++ })
	t.Transaction.ClearRange(begin, end)
}

func (t *countedTx) Atomic(op udb.MutationType, key, param []byte) {
	t.mutation(len(key)+len(param), func(c *Counts) { c.Atomics++ })
	t.Transaction.Atomic(op, key, param)
}

func (t *countedTx) AddReadConflictRange(begin, end []byte) error {
	t.readConflict()
	return t.Transaction.AddReadConflictRange(begin, end)
}

func (t *countedTx) AddWriteConflictRange(begin, end []byte) error {
	t.mu.Lock()
	t.wrote = true
	t.writeRanges++
	t.mu.Unlock()
	return t.Transaction.AddWriteConflictRange(begin, end)
}

func (t *countedTx) Watch(key []byte) udb.Watch {
	t.readConflict()
	return t.Transaction.Watch(key)
}

func (t *countedTx) Commit(ctx context.Context) error {
	err := t.Transaction.Commit(ctx)
	t.mu.Lock()
	wrote, rr, wr := t.wrote, t.readRanges, t.writeRanges
	t.mu.Unlock()
	if wrote {
		t.d.add(func(c *Counts) {
			c.Commits++
			c.ReadConflictRanges += rr
			c.WriteConflictRanges += wr
			if udb.HasCode(err, udb.CodeNotCommitted) {
				c.Conflicts++
			}
		})
	}
	return err
}

func (t *countedTx) OnError(ctx context.Context, err error) error {
	if err := t.Transaction.OnError(ctx, err); err != nil {
		return err
	}
	t.reset()
	t.d.add(func(c *Counts) { c.Retries++ })
	return nil
}

func (t *countedTx) Reset() {
	t.Transaction.Reset()
	t.reset()
}

func (t *countedTx) Options() udb.TransactionOptions { return options{t.Transaction.Options(), t} }

// options notes SetNextWriteNoWriteConflictRange, so that the next write counts no range.
type options struct {
	udb.TransactionOptions
	t *countedTx
}

func (o options) SetNextWriteNoWriteConflictRange() error {
	err := o.TransactionOptions.SetNextWriteNoWriteConflictRange()
	if err == nil {
		o.t.mu.Lock()
		o.t.nextNoWriteConflicts = true
		o.t.mu.Unlock()
	}
	return err
}

// reader counts the reads of a transaction or of its snapshot view (which add no conflict
// ranges: the transaction counts those).
type reader struct {
	d *DB
	r udb.ReadTransaction
}

func (v reader) Get(ctx context.Context, key []byte) ([]byte, error) {
	val, err := v.r.Get(ctx, key)
	v.d.add(func(c *Counts) {
		c.Gets++
		if val != nil {
			c.KeysRead++
			c.BytesRead += int64(len(key) + len(val))
		}
	})
	return val, err
}

func (v reader) GetKey(ctx context.Context, sel udb.KeySelector) ([]byte, error) {
	k, err := v.r.GetKey(ctx, sel)
	v.d.add(func(c *Counts) {
		c.Gets++
		c.BytesRead += int64(len(k))
	})
	return k, err
}

func (v reader) GetRange(begin, end udb.KeySelector, opt udb.RangeOptions) udb.RangeIterator {
	v.d.add(func(c *Counts) { c.RangeReads++ })
	return &rangeIter{RangeIterator: v.r.GetRange(begin, end, opt), d: v.d}
}

func (v reader) GetReadVersion(ctx context.Context) (int64, error) { return v.r.GetReadVersion(ctx) }

func (v reader) GetEstimatedRangeSizeBytes(ctx context.Context, begin, end []byte) (int64, error) {
	return v.r.GetEstimatedRangeSizeBytes(ctx, begin, end)
}

func (v reader) Snapshot() udb.ReadTransaction { return reader{v.d, v.r.Snapshot()} }

// Prefetch is not counted: the reads it serves are.
func (v reader) Prefetch(ctx context.Context, keys [][]byte, ranges []udb.KeyRange) {
	v.r.Prefetch(ctx, keys, ranges)
}

// rangeIter counts the rows a range read returns.
type rangeIter struct {
	udb.RangeIterator
	d *DB
}

func (it *rangeIter) Next(ctx context.Context) bool {
	if !it.RangeIterator.Next(ctx) {
		return false
	}
	kv := it.RangeIterator.KeyValue()
	it.d.add(func(c *Counts) {
		c.KeysRead++
		c.BytesRead += int64(len(kv.Key) + len(kv.Value))
	})
	return true
}

func (it *rangeIter) All(ctx context.Context) ([]udb.KeyValue, error) {
	rows, err := it.RangeIterator.All(ctx)
	var n int64
	for _, kv := range rows {
		n += int64(len(kv.Key) + len(kv.Value))
	}
	it.d.add(func(c *Counts) {
		c.KeysRead += int64(len(rows))
		c.BytesRead += n
	})
	return rows, err
}

var _ udb.Database = (*DB)(nil)
