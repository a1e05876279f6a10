package lease_test

import (
	"context"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/ops/lease"
	"github.com/berthhq/berth/pkg/udb"
)

func acquire(t *testing.T, db udb.Database, holder string, now int64) (bool, keys.Lease) {
	t.Helper()
	type res struct {
		held  bool
		other keys.Lease
	}
	r, err := udb.Transact(context.Background(), db, func(tx udb.Transaction) (res, error) {
		held, other, err := lease.Acquire(context.Background(), tx, lease.Input{Name: "pool", Holder: holder, NowMs: now, TTLMs: 100})
		return res{held, other}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return r.held, r.other
}

func TestLeaseOneHolderAtATime(t *testing.T) {
	db := opstest.Open(t)
	if held, _ := acquire(t, db, "a", 1000); !held {
		t.Fatal("a free lease was not taken")
	}
	if held, other := acquire(t, db, "b", 1050); held || other.Holder != "a" || other.ExpiresMs != 1100 {
		t.Fatalf("b took a held lease: %v, holder %+v", held, other)
	}
	if held, _ := acquire(t, db, "a", 1090); !held {
		t.Fatal("the holder could not renew")
	}
	if held, _ := acquire(t, db, "b", 1150); held {
		t.Fatal("b took the lease before the renewed expiry (1190)")
	}
	if held, _ := acquire(t, db, "b", 1190); !held {
		t.Fatal("b could not take the expired lease")
	}
	if held, _ := acquire(t, db, "a", 1200); held {
		t.Fatal("a took the lease back from b")
	}
	if _, err := udb.Transact(context.Background(), db, func(tx udb.Transaction) (struct{}, error) {
		return struct{}{}, lease.Release(context.Background(), tx, "pool", "a") // not a's: kept
	}); err != nil {
		t.Fatal(err)
	}
	if held, _ := acquire(t, db, "a", 1200); held {
		t.Fatal("a release by a node that does not hold the lease freed it")
	}
	if _, err := udb.Transact(context.Background(), db, func(tx udb.Transaction) (struct{}, error) {
		return struct{}{}, lease.Release(context.Background(), tx, "pool", "b")
	}); err != nil {
		t.Fatal(err)
	}
	if held, _ := acquire(t, db, "a", 1200); !held {
		t.Fatal("a could not take the released lease")
	}
}

func TestLeaseRefusesBadInput(t *testing.T) {
	db := opstest.Open(t)
	for _, in := range []lease.Input{{Name: "p", Holder: "", TTLMs: 1}, {Name: "p", Holder: "a", TTLMs: 0}} {
		if _, err := udb.Transact(context.Background(), db, func(tx udb.Transaction) (bool, error) {
			held, _, err := lease.Acquire(context.Background(), tx, in)
			return held, err
		}); err == nil {
			t.Errorf("Acquire(%+v) succeeded", in)
		}
	}
}
