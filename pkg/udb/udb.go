package udb

import (
	"context"
	"time"
)

// FoundationDB's size limits, enforced by every driver.
const (
	MaxKeySize        = 10_000     // key_too_large past this (2102)
	MaxSystemKeySize  = 30_000     // for keys under \xff with system key access
	MaxValueSize      = 100_000    // value_too_large past this (2103)
	MaxTxnSize        = 10_000_000 // transaction_too_large past this (2101)
	DefaultMaxWatches = 10_000     // too_many_watches past this (1032)
	// MVCCWindowVersions is how far a read version may lag the newest version
	// before reads and commits fail with transaction_too_old (about 5 s).
	MVCCWindowVersions = 5_000_000
	// VersionsPerSecond is the rate at which versions advance with time.
	VersionsPerSecond = 1_000_000
)

// KeyValue is one row of a range read.
type KeyValue struct {
	Key, Value []byte
}

// StreamingMode hints how a range read is batched. It never changes results.
// The zero value is the iterator mode, FoundationDB's default; the fdb driver
// maps these to FoundationDB's numbers.
type StreamingMode int

// Streaming modes.
const (
	StreamingModeIterator StreamingMode = iota
	StreamingModeWantAll
	StreamingModeExact // needs a Limit: exact_mode_without_limits (2210) otherwise
	StreamingModeSmall
	StreamingModeMedium
	StreamingModeLarge
	StreamingModeSerial
)

// RangeOptions shape a range read. The zero value reads every key in order.
type RangeOptions struct {
	Limit   int // 0 is unlimited
	Reverse bool
	Mode    StreamingMode
}

// MutationType is an atomic operation, numbered as in FoundationDB.
type MutationType int

// Atomic operations. Integer operands are little-endian.
const (
	MutationAdd                    MutationType = 2
	MutationBitAnd                 MutationType = 6
	MutationBitOr                  MutationType = 7
	MutationBitXor                 MutationType = 8
	MutationAppendIfFits           MutationType = 9
	MutationMax                    MutationType = 12
	MutationMin                    MutationType = 13
	MutationSetVersionstampedKey   MutationType = 14
	MutationSetVersionstampedValue MutationType = 15
	MutationByteMin                MutationType = 16
	MutationByteMax                MutationType = 17
	MutationCompareAndClear        MutationType = 20
)

// ReadTransaction reads a consistent snapshot of the database at its read
// version, overlaid with the transaction's own writes.
type ReadTransaction interface {
	// Get returns the value of key: nil when absent, a non-nil empty slice when
	// present and empty.
	Get(ctx context.Context, key []byte) ([]byte, error)
	// GetKey resolves a key selector.
	GetKey(ctx context.Context, sel KeySelector) ([]byte, error)
	// GetRange reads [begin, end) lazily; see RangeOptions.
	GetRange(begin, end KeySelector, opt RangeOptions) RangeIterator
	// GetReadVersion returns the read version, taking it if not yet taken.
	GetReadVersion(ctx context.Context) (int64, error)
	// GetEstimatedRangeSizeBytes estimates the stored size of [begin, end).
	GetEstimatedRangeSizeBytes(ctx context.Context, begin, end []byte) (int64, error)
	// Snapshot returns a view whose reads add no read-conflict ranges.
	Snapshot() ReadTransaction
	// Prefetch fetches keys and ranges the caller is about to read, together: where each
	// read is a round trip to a server, one round trip for all of them, after which the
	// transaction's reads of them are answered from what it fetched. It changes nothing
	// the reads return and adds no conflict ranges; an error is left for the reads to meet.
	// A range is fetched up to a driver's page of rows. Drivers whose reads are local do
	// nothing.
	Prefetch(ctx context.Context, keys [][]byte, ranges []KeyRange)
}

// KeyRange is the keys from Begin up to, not including, End.
type KeyRange struct{ Begin, End []byte }

// RangeIterator walks the rows of a range read.
type RangeIterator interface {
	// Next advances to the next row; false at the end or on error.
	Next(ctx context.Context) bool
	// KeyValue is the current row; valid until the next call to Next.
	KeyValue() KeyValue
	// Err is the error that ended iteration, if any.
	Err() error
	// All reads the remaining rows.
	All(ctx context.Context) ([]KeyValue, error)
}

// Transaction is a read-write transaction with optimistic concurrency: it
// commits only if nothing it read serializably was changed by a transaction
// that committed after its read version.
type Transaction interface {
	ReadTransaction

	// Set, Clear, ClearRange and Atomic record writes. Invalid arguments do
	// not fail the call; the error is reported by the next read or by Commit.
	Set(key, value []byte)
	Clear(key []byte)
	ClearRange(begin, end []byte)
	Atomic(op MutationType, key, param []byte)

	AddReadConflictRange(begin, end []byte) error
	AddWriteConflictRange(begin, end []byte) error

	// SetReadVersion fixes the read version instead of taking the newest.
	SetReadVersion(v int64)
	// Watch returns a watch on key that is armed when the transaction commits
	// and fires when key's value differs from what the transaction saw. Like
	// a Get, it adds a read conflict on key.
	Watch(key []byte) Watch
	// GetVersionstamp must be called before Commit; it resolves afterwards.
	GetVersionstamp() VersionstampFuture
	Commit(ctx context.Context) error
	// GetCommittedVersion is the commit version after a successful commit,
	// -1 for a read-only transaction.
	GetCommittedVersion() (int64, error)
	// OnError resets the transaction and waits out a backoff when err is
	// retryable (and the retry limit allows); otherwise it returns err and
	// the transaction is cancelled. After Commit, every operation fails with
	// used_during_commit (2017) until OnError or Reset.
	OnError(ctx context.Context, err error) error
	Options() TransactionOptions
	// Reset returns the transaction to its initial state, options included.
	// (OnError's own reset keeps the timeout, retry limit and max retry delay.)
	Reset()
	// Cancel fails outstanding and future operations with transaction_cancelled.
	Cancel()
}

// TransactionOptions sets FoundationDB transaction options.
type TransactionOptions interface {
	// SetTimeout bounds the transaction's life including retries: operations
	// after it fail with transaction_timed_out (1031). 0 disables it.
	SetTimeout(d time.Duration) error
	// SetRetryLimit bounds how often OnError retries; -1 is unlimited.
	SetRetryLimit(n int) error
	// SetMaxRetryDelay caps OnError's backoff.
	SetMaxRetryDelay(d time.Duration) error
	// SetNextWriteNoWriteConflictRange makes the next write add no write
	// conflict range.
	SetNextWriteNoWriteConflictRange() error
	// SetSnapshotRYWDisable makes snapshot reads ignore the transaction's writes.
	SetSnapshotRYWDisable() error
	// SetReadSystemKeys allows reading keys under \xff.
	SetReadSystemKeys() error
	// SetAccessSystemKeys allows reading and writing keys under \xff.
	SetAccessSystemKeys() error
	// SetSizeLimit lowers the transaction size limit (default 10,000,000 bytes).
	SetSizeLimit(n int) error
}

// Watch reports a change to one key.
type Watch interface {
	// Wait blocks until the value changes, the watch fails, or ctx ends.
	Wait(ctx context.Context) error
	// Cancel releases the watch; Wait then returns operation_cancelled (1101).
	Cancel()
}

// VersionstampFuture resolves to the 10-byte versionstamp of a commit.
type VersionstampFuture interface {
	Get(ctx context.Context) ([10]byte, error)
}

// Database opens transactions. It is safe for concurrent use.
type Database interface {
	CreateTransaction() (Transaction, error)
	// Transact runs f in a transaction and commits it, retrying retryable
	// errors through OnError. Errors that are not udb errors end it at once,
	// without a commit.
	Transact(ctx context.Context, f func(Transaction) (any, error)) (any, error)
	// ReadTransact runs f in a transaction that is never committed, retrying
	// retryable errors.
	ReadTransact(ctx context.Context, f func(ReadTransaction) (any, error)) (any, error)
	Close() error
}

// Clock is implemented by drivers whose version clock tests may move forward,
// so transaction_too_old can be tested without waiting.
type Clock interface {
	AdvanceVersions(n int64)
}

// FaultInjector is implemented by drivers that can fail the next commit with
// code, after applying it (applied) or not, for commit_unknown_result tests.
type FaultInjector interface {
	InjectCommitError(code int, applied bool)
}

// AddReadConflictKey adds a read conflict on exactly key.
func AddReadConflictKey(tx Transaction, key []byte) error {
	return tx.AddReadConflictRange(key, KeyAfter(key))
}

// AddWriteConflictKey adds a write conflict on exactly key.
func AddWriteConflictKey(tx Transaction, key []byte) error {
	return tx.AddWriteConflictRange(key, KeyAfter(key))
}
