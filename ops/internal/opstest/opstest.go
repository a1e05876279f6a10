package opstest

import (
	"context"
	"errors"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded" // mem://
)

// Open returns an empty in-memory store, closed when the test ends.
func Open(t testing.TB) udb.Database {
	t.Helper()
	db, err := udb.Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Write runs f in a transaction through the store's retry loop and commits
// it; any error fails the test.
func Write[T any](t testing.TB, db udb.Database, f func(tx udb.Transaction) (T, error)) T {
	t.Helper()
	v, err := Transact(db, f)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Transact runs f through the store's retry loop and returns its result.
func Transact[T any](db udb.Database, f func(tx udb.Transaction) (T, error)) (T, error) {
	return udb.Transact(context.Background(), db, f)
}

// Read runs f in a transaction that is never committed; any error fails the
// test.
func Read[T any](t testing.TB, db udb.Database, f func(r udb.ReadTransaction) (T, error)) T {
	t.Helper()
	out, err := udb.ReadTransact(context.Background(), db, f)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Run is the retry loop of Database.Transact, also returning the commit
// version, so a test can order the commits of concurrent transactions. A
// read-only commit has version -1.
func Run(ctx context.Context, db udb.Database, f func(tx udb.Transaction) error) (int64, error) {
	tx, err := db.CreateTransaction()
	if err != nil {
		return 0, err
	}
	defer tx.Cancel()
	for {
		err := f(tx)
		if err == nil {
			if err = tx.Commit(ctx); err == nil {
				return tx.GetCommittedVersion()
			}
		}
		var ue udb.Error
		if !errors.As(err, &ue) {
			return 0, err
		}
		if err := tx.OnError(ctx, err); err != nil {
			return 0, err
		}
	}
}

// Held is a transaction a test drives step by step: Begin takes its read
// version at once, so that several held transactions read the same state
// and the test then commits them in the order it chooses.
type Held struct {
	t  testing.TB
	tx udb.Transaction
}

// Begin opens a transaction and takes its read version.
func Begin(t testing.TB, db udb.Database) *Held {
	t.Helper()
	tx, err := db.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tx.Cancel)
	if _, err := tx.GetReadVersion(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &Held{t: t, tx: tx}
}

// Tx is the held transaction.
func (h *Held) Tx() udb.Transaction { return h.tx }

// Commit commits the held transaction and returns the commit error.
func (h *Held) Commit() error { return h.tx.Commit(context.Background()) }

// Retry hands err (a failed Commit's error) to OnError, which must accept
// it as retryable, then runs f again and commits; it returns f's error or
// the new commit's.
func (h *Held) Retry(err error, f func(tx udb.Transaction) error) error {
	h.t.Helper()
	if err := h.tx.OnError(context.Background(), err); err != nil {
		h.t.Fatalf("OnError(%v) refused to retry", err)
	}
	if err := f(h.tx); err != nil {
		return err
	}
	return h.Commit()
}

// IsConflict reports whether err is a commit conflict (not_committed).
func IsConflict(err error) bool { return udb.HasCode(err, udb.CodeNotCommitted) }
