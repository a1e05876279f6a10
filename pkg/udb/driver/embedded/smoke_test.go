package embedded

import (
	"context"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	db, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Transact(ctx, func(tx udb.Transaction) (any, error) {
		tx.Set([]byte("a"), []byte("1"))
		tx.Set([]byte("b"), []byte("2"))
		tx.Atomic(udb.MutationAdd, []byte("c"), []byte{1})
		v, err := tx.Get(ctx, []byte("c"))
		if err != nil || string(v) != "\x01" {
			t.Errorf("ryw atomic: %q %v", v, err)
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := db.ReadTransact(ctx, func(tx udb.ReadTransaction) (any, error) {
		return tx.GetRange(udb.FirstGreaterOrEqual([]byte("")), udb.FirstGreaterOrEqual([]byte("\xff")), udb.RangeOptions{}).All(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	kvs := v.([]udb.KeyValue)
	if len(kvs) != 3 || string(kvs[2].Value) != "\x01" {
		t.Fatalf("got %q", kvs)
	}
	// conflict
	t1, _ := db.CreateTransaction()
	t2, _ := db.CreateTransaction()
	t1.Get(ctx, []byte("a"))
	t2.Get(ctx, []byte("a"))
	t1.Set([]byte("a"), []byte("x"))
	t2.Set([]byte("a"), []byte("y"))
	if err := t1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := t2.Commit(ctx); !udb.HasCode(err, udb.CodeNotCommitted) {
		t.Fatalf("want 1020, got %v", err)
	}
}
