package embedded

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
)

// TestClearRangeSmallAndLarge covers both ways a range clear is applied:
// key by key (few keys) and as a pebble range deletion (many), each also
// in a group where an earlier transaction wrote into the range.
func TestClearRangeSmallAndLarge(t *testing.T) {
	ctx := context.Background()
	db, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, n := range []int{0, 3, smallClear, smallClear + 1, 200} {
		prefix := fmt.Sprintf("clear/%d/", n)
		key := func(i int) []byte { return []byte(fmt.Sprintf("%s%04d", prefix, i)) }
		if _, err := db.Transact(ctx, func(tx udb.Transaction) (any, error) {
			for i := range n {
				tx.Set(key(i), []byte("v"))
			}
			tx.Set([]byte(prefix+"~after"), []byte("kept")) // outside [begin, end)
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		// One transaction writes a key into the range, the next clears the
		// range; committed together they may share a group and a batch.
		t1, _ := db.CreateTransaction()
		t2, _ := db.CreateTransaction()
		t1.Set(key(n+1), []byte("late"))
		t2.ClearRange(key(0), key(9999))
		s1, s2 := t1.GetVersionstamp(), t2.GetVersionstamp()
		errs := make(chan error, 2)
		go func() { errs <- t1.Commit(ctx) }()
		go func() { errs <- t2.Commit(ctx) }()
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		stamp1, err1 := s1.Get(ctx)
		stamp2, err2 := s2.Get(ctx)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		got, err := db.ReadTransact(ctx, func(tx udb.ReadTransaction) (any, error) {
			b, e := udb.PrefixRange([]byte(prefix))
			return tx.GetRange(udb.FirstGreaterOrEqual(b), udb.FirstGreaterOrEqual(e), udb.RangeOptions{}).All(ctx)
		})
		if err != nil {
			t.Fatal(err)
		}
		rows := got.([]udb.KeyValue)
		// The late key survives only if its commit came after the clear: a
		// later version, or the same group at a later batch index.
		lateKept := bytes.Compare(stamp1[:], stamp2[:]) > 0
		want := 1
		if lateKept {
			want = 2
		}
		if len(rows) != want || string(rows[len(rows)-1].Value) != "kept" {
			t.Errorf("n=%d: after the clear got %d rows %q, want %d (late write kept: %v)", n, len(rows), rows, want, lateKept)
		}
	}
}

// TestCloseDuringCommits closes the database while commits race into the
// queue: every commit returns, applied or with an error, and none hangs.
func TestCloseDuringCommits(t *testing.T) {
	ctx := context.Background()
	for round := range 20 {
		db, err := Open(Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 16)
		for i := range 16 {
			go func() {
				tx, err := db.CreateTransaction()
				if err != nil {
					done <- nil // closed before it began: nothing to commit
					return
				}
				tx.Set([]byte(fmt.Sprintf("k%d/%d", round, i)), []byte("v"))
				done <- tx.Commit(ctx)
			}()
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		for range 16 {
			<-done // a hang here fails the test by its timeout
		}
	}
}

// TestReadsAfterClose: a transaction that outlives its database gets an
// error from every read, never a panic, and Close reports no leak.
func TestReadsAfterClose(t *testing.T) {
	ctx := context.Background()
	db, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Get(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close with a transaction open: %v", err)
	}
	if _, err := tx.Get(ctx, []byte("a")); err == nil {
		t.Error("Get after Close succeeded")
	}
	if _, err := tx.GetRange(udb.FirstGreaterOrEqual(nil), udb.FirstGreaterOrEqual([]byte{0xff}), udb.RangeOptions{}).All(ctx); err == nil {
		t.Error("GetRange after Close succeeded")
	}
	tx.Set([]byte("a"), []byte("b"))
	if err := tx.Commit(ctx); err == nil {
		t.Error("Commit after Close succeeded")
	}
}

// TestClearRangeFromEmptyKey clears from the empty key, as clearing a whole
// key space does: a non-nil empty lower bound crashed pebble's invariant
// checks in race builds.
func TestClearRangeFromEmptyKey(t *testing.T) {
	ctx := context.Background()
	db, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, n := range []int{3, smallClear + 5} {
		if _, err := db.Transact(ctx, func(tx udb.Transaction) (any, error) {
			tx.Set([]byte{}, []byte("empty key"))
			for i := range n {
				tx.Set([]byte(fmt.Sprintf("k%03d", i)), []byte("v"))
			}
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Transact(ctx, func(tx udb.Transaction) (any, error) {
			tx.ClearRange([]byte{}, []byte{0xff})
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		got, err := db.ReadTransact(ctx, func(tx udb.ReadTransaction) (any, error) {
			return tx.GetRange(udb.FirstGreaterOrEqual(nil), udb.FirstGreaterOrEqual([]byte{0xff}), udb.RangeOptions{}).All(ctx)
		})
		if err != nil {
			t.Fatal(err)
		}
		if kvs := got.([]udb.KeyValue); len(kvs) != 0 {
			t.Fatalf("%d keys: after clearing [\"\", \\xff) %d keys remain, first %q", n, len(kvs), kvs[0].Key)
		}
	}
}
