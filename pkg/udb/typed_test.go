package udb_test

import (
	"context"
	"errors"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
)

func TestTyped(t *testing.T) {
	ctx := context.Background()
	db, err := udb.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := []byte("k")

	if err := udb.Update(ctx, db, func(tx udb.Transaction) error {
		tx.Set(key, []byte("v1"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var seen []byte
	if err := udb.View(ctx, db, func(r udb.ReadTransaction) error {
		var err error
		seen, err = r.Get(ctx, key)
		return err
	}); err != nil || string(seen) != "v1" {
		t.Fatalf("View saw %q, %v", seen, err)
	}

	n, err := udb.Transact(ctx, db, func(tx udb.Transaction) (int, error) {
		tx.Set(key, []byte("v2"))
		return 2, nil
	})
	if err != nil || n != 2 {
		t.Fatalf("Transact = %d, %v", n, err)
	}
	v, err := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) (string, error) {
		b, err := r.Get(ctx, key)
		return string(b), err
	})
	if err != nil || v != "v2" {
		t.Fatalf("ReadTransact = %q, %v", v, err)
	}

	// A failing function: its error, the zero result, and nothing written.
	boom := errors.New("boom")
	if err := udb.Update(ctx, db, func(tx udb.Transaction) error {
		tx.Set(key, []byte("lost"))
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want boom", err)
	}
	if err := udb.View(ctx, db, func(udb.ReadTransaction) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("View = %v, want boom", err)
	}
	if s, err := udb.Transact(ctx, db, func(tx udb.Transaction) (string, error) {
		tx.Set(key, []byte("lost"))
		return "partial", boom
	}); !errors.Is(err, boom) || s != "" {
		t.Fatalf("Transact = %q, %v; want the zero value and boom", s, err)
	}
	if s, err := udb.ReadTransact(ctx, db, func(udb.ReadTransaction) (string, error) { return "partial", boom }); !errors.Is(err, boom) || s != "" {
		t.Fatalf("ReadTransact = %q, %v; want the zero value and boom", s, err)
	}
	if v, _ := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) ([]byte, error) { return r.Get(ctx, key) }); string(v) != "v2" {
		t.Fatalf("a failed transaction wrote %q", v)
	}
}
