package txn

import (
	"context"

	"github.com/berthhq/berth/pkg/udb"
)

// Backend is what a driver provides under Tx.
type Backend interface {
	// ReadVersion takes the newest read version: every commit acknowledged
	// before the call is visible in the returned snapshot.
	ReadVersion(ctx context.Context) (Snapshot, error)
	// SnapshotAt opens the snapshot at a version given by SetReadVersion:
	// future_version for versions not reached yet, transaction_too_old for
	// versions no longer kept.
	SnapshotAt(ctx context.Context, version int64) (Snapshot, error)
	// Commit resolves conflicts and applies req atomically and durably.
	Commit(ctx context.Context, req *CommitRequest) (CommitResult, error)
	// ArmWatches registers watches of a committed (or read-only) transaction,
	// firing at once those whose value already differs.
	ArmWatches(ws []*Watch)
	// DisarmWatch forgets a cancelled watch.
	DisarmWatch(w *Watch)
}

// Snapshot is a consistent view of the database at one version. Reads fail
// with transaction_too_old once the version falls out of the MVCC window.
type Snapshot interface {
	Version() int64
	// Get returns the value, nil when absent. The slice is the caller's.
	Get(key []byte) ([]byte, error)
	// NewIter walks [begin, end) forward or in reverse. want is how many rows the
	// caller means to read (it may read more: the transaction's own clears hide some);
	// a backend that fetches in pages may size its first page by it.
	NewIter(begin, end []byte, reverse bool, want int) (Iter, error)
	EstimateSize(begin, end []byte) (int64, error)
	// Release drops the transaction's hold on the snapshot. Idempotent.
	Release()
}

// Iter walks a snapshot range. Keys and values are valid until the next call.
type Iter interface {
	// First positions at the first row in iteration order.
	First() bool
	Next() bool
	// Seek positions at the first row at or after key (forward) or the last
	// row before key (reverse).
	Seek(key []byte) bool
	Key() []byte
	Value() []byte
	Err() error
	Close() error
}

// KeyRange is [Begin, End).
type KeyRange struct{ Begin, End []byte }

// Prefetcher is a Snapshot whose reads are round trips to a server, which can fetch
// several keys and ranges in one (udb.ReadTransaction.Prefetch).
type Prefetcher interface {
	Prefetch(keys [][]byte, ranges []udb.KeyRange)
}

// Mutation is one write, in transaction order.
type Mutation struct {
	Op    MutationOp
	Key   []byte
	Value []byte // the value, the clear range's end, or the atomic parameter
	// Atomic is the atomic operation when Op is OpAtomic.
	Atomic udb.MutationType
	// NoWriteConflict marks a write made under NextWriteNoWriteConflictRange.
	NoWriteConflict bool
}

// MutationOp says what a Mutation does.
type MutationOp uint8

// Mutation kinds. OpAtomic covers the versionstamp operations too.
const (
	OpSet MutationOp = iota
	OpClear
	OpClearRange
	OpAtomic
)

// CommitRequest is everything a backend needs to commit a transaction.
type CommitRequest struct {
	ReadVersion    int64
	ReadConflicts  []KeyRange
	WriteConflicts []KeyRange // explicit ones and those of the mutations
	Mutations      []Mutation
	// Watches are armed by the backend right after the commit is applied,
	// before any later commit, so no change can slip between.
	Watches []*Watch
}

// CommitResult is the outcome of a successful commit.
type CommitResult struct {
	Version      int64
	Versionstamp [10]byte
}
