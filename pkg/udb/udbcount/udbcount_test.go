package udbcount

import (
	"context"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded"
)

var ctx = context.Background()

func open(t *testing.T, o Options) *DB {
	t.Helper()
	db, err := udb.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return Wrap(db, o)
}

func TestCountsWritesReadsAndConflictRanges(t *testing.T) {
	db := open(t, Options{})
	err := udb.Update(ctx, db, func(tx udb.Transaction) error {
		tx.Set([]byte("a"), []byte("12"))                                       // 3 bytes
		tx.Set([]byte("b"), []byte("345"))                                      // 4 bytes
		tx.Atomic(udb.MutationAdd, []byte("n"), []byte{1, 0, 0, 0})             // 5 bytes
		if err := tx.Options().SetNextWriteNoWriteConflictRange(); err != nil { // no range for the next write
			return err
		}
		tx.Clear([]byte("zz")) // 2 bytes
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c := db.Counts()
	want := Counts{Transactions: 1, Commits: 1, Sets: 2, Atomics: 1, Clears: 1, WriteConflictRanges: 3, BytesWritten: 14}
	if c != want {
		t.Fatalf("after the write: %+v, want %+v", c, want)
	}

	before := db.Counts()
	err = udb.Update(ctx, db, func(tx udb.Transaction) error {
		v, err := tx.Get(ctx, []byte("a")) // found: 1 key, 3 bytes
		if err != nil || string(v) != "12" {
			return err
		}
		if _, err := tx.Snapshot().Get(ctx, []byte("absent")); err != nil { // no key, no conflict
			return err
		}
		rows, err := tx.GetRange(udb.FirstGreaterOrEqual([]byte("a")), udb.FirstGreaterOrEqual([]byte("c")), udb.RangeOptions{}).All(ctx)
		if err != nil || len(rows) != 2 { // a and b: 2 keys, 7 bytes
			t.Errorf("range: %d rows, %v", len(rows), err)
		}
		it := tx.Snapshot().GetRange(udb.FirstGreaterOrEqual([]byte("b")), udb.FirstGreaterOrEqual([]byte("z")), udb.RangeOptions{})
		for it.Next(ctx) { // b and n: 2 keys, 4+5 bytes
		}
		tx.Set([]byte("c"), nil)
		return it.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	got := db.Counts().Sub(before)
	want = Counts{Transactions: 1, Commits: 1, Gets: 2, RangeReads: 2, KeysRead: 5, BytesRead: 3 + 7 + 9,
		Sets: 1, BytesWritten: 1, ReadConflictRanges: 2, WriteConflictRanges: 1}
	if got != want {
		t.Fatalf("read-write transaction: %+v, want %+v", got, want)
	}

	before = db.Counts()
	if _, err := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) ([]byte, error) { return r.Get(ctx, []byte("b")) }); err != nil {
		t.Fatal(err)
	}
	got = db.Counts().Sub(before)
	want = Counts{Transactions: 1, Gets: 1, KeysRead: 1, BytesRead: 4}
	if got != want {
		t.Fatalf("read-only transaction (no commit): %+v, want %+v", got, want)
	}
}

// A conflict is counted as a refused commit, and the retry as an attempt of the same
// transaction.
func TestCountsConflictsAndRetries(t *testing.T) {
	db := open(t, Options{})
	attempts := 0
	err := udb.Update(ctx, db, func(tx udb.Transaction) error {
		attempts++
		if _, err := tx.Get(ctx, []byte("k")); err != nil {
			return err
		}
		if attempts == 1 { // another transaction writes what this one read
			if err := udb.Update(ctx, db, func(o udb.Transaction) error { o.Set([]byte("k"), []byte("x")); return nil }); err != nil {
				return err
			}
		}
		tx.Set([]byte("k"), []byte("y"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c := db.Counts()
	if attempts != 2 || c.Transactions != 2 || c.Retries != 1 || c.Commits != 3 || c.Conflicts != 1 || c.Gets != 2 {
		t.Fatalf("attempts %d, counts %+v: want 2 transactions, 1 retry, 3 commits, 1 conflict, 2 gets", attempts, c)
	}
}

func TestSkipLeavesTransactionsUncounted(t *testing.T) {
	skip := true
	db := open(t, Options{Skip: func() bool { return skip }})
	write := func() {
		if err := udb.Update(ctx, db, func(tx udb.Transaction) error { tx.Set([]byte("k"), nil); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	write()
	if c := db.Counts(); !c.IsZero() {
		t.Fatalf("skipped transaction counted: %+v", c)
	}
	skip = false
	write()
	if c := db.Counts(); c.Transactions != 1 || c.Commits != 1 || c.Sets != 1 {
		t.Fatalf("counted transaction: %+v", c)
	}
}
