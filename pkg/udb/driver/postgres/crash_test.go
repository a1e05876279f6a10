package postgres

import (
	"crypto/rand"
	"encoding/binary"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/jackc/pgx/v5"
)

// TestConnectionLostAtCommit loses the commit's connection just before
// COMMIT: the commit reports commit_unknown_result (1021), PostgreSQL rolls
// the transaction back, Transact retries, and a body guarded by an
// idempotency marker applies its effect exactly once. The pool drops the
// dead connection and the next commits work.
func TestConnectionLostAtCommit(t *testing.T) {
	_, dbs := openHandles(t, 1)
	db := dbs[0].(*DB)
	ctx := t.Context()
	lose := 1
	db.beforeCommit = func(c *pgx.Conn) {
		if lose > 0 {
			lose--
			_ = c.PgConn().Conn().Close()
		}
	}
	runs := 0
	_, err := db.Transact(ctx, func(tx udb.Transaction) (any, error) {
		runs++
		m, err := tx.Get(ctx, []byte("marker"))
		if err != nil || m != nil {
			return nil, err
		}
		tx.Set([]byte("marker"), []byte("done"))
		tx.Atomic(udb.MutationAdd, []byte("counter"), binary.LittleEndian.AppendUint64(nil, 1))
		return nil, nil
	})
	if err != nil {
		t.Fatalf("Transact: %v", err)
	}
	if runs != 2 {
		t.Errorf("the body ran %d times, want 2 (a lost COMMIT, then the retry)", runs)
	}
	tx := mustTx(t, db)
	v, err := tx.Get(ctx, []byte("counter"))
	if err != nil || binary.LittleEndian.Uint64(v) != 1 {
		t.Errorf("counter: %v, %v; want 1", v, err)
	}

	// The failure itself, seen by a plain commit.
	lose = 1
	tx = mustTx(t, db)
	tx.Set([]byte("lost"), []byte("x"))
	err = tx.Commit(ctx)
	if !udb.HasCode(err, udb.CodeCommitUnknownResult) || !udb.IsMaybeCommitted(err) {
		t.Fatalf("commit whose connection closed before COMMIT: got %v, want commit_unknown_result", err)
	}
	tx = mustTx(t, db)
	if v, err := tx.Get(ctx, []byte("lost")); err != nil || v != nil {
		t.Errorf("the lost commit's write: %q, %v; want absent (PostgreSQL rolled it back)", v, err)
	}
	put(t, db, "after", "ok")
}

// TestKeyLongerThanIndexLimit: PostgreSQL's btree indexes refuse keys past
// about 2,700 bytes (incompressible); such a commit fails with
// key_too_large, writes nothing, and the database goes on working.
func TestKeyLongerThanIndexLimit(t *testing.T) {
	_, dbs := openHandles(t, 1)
	db := dbs[0]
	ctx := t.Context()
	key := make([]byte, 3000)
	_, _ = rand.Read(key)
	tx := mustTx(t, db)
	tx.Set(key, []byte("v"))
	tx.Set([]byte("beside"), []byte("v"))
	if err := tx.Commit(ctx); !udb.HasCode(err, udb.CodeKeyTooLarge) {
		t.Fatalf("commit of a 3,000-byte random key: got %v, want key_too_large", err)
	}
	tx = mustTx(t, db)
	if v, err := tx.Get(ctx, []byte("beside")); err != nil || v != nil {
		t.Errorf("the failed commit's other write: %q, %v; want absent", v, err)
	}
	put(t, db, "after", "ok")
}
