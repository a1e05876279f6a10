package node_test

import (
	"context"
	"testing"

	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/ops/node"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

func tx[T any](t *testing.T, db udb.Database, f func(udb.Transaction) (T, error)) T {
	t.Helper()
	v, err := db.Transact(context.Background(), func(tx udb.Transaction) (any, error) { return f(tx) })
	if err != nil {
		t.Fatal(err)
	}
	return v.(T)
}

func owner(t *testing.T, db udb.Database, rid id.ID, now int64) (node.Owner, bool) {
	t.Helper()
	type res struct {
		o  node.Owner
		ok bool
	}
	r := tx(t, db, func(tx udb.Transaction) (res, error) {
		o, ok, err := node.SocketOwner(context.Background(), tx, node.SocketOwnerInput{RunnerID: rid, NowMs: now})
		return res{o, ok}, err
	})
	return r.o, r.ok
}

func held(t *testing.T, db udb.Database, n string) []node.Held {
	t.Helper()
	return tx(t, db, func(tx udb.Transaction) ([]node.Held, error) {
		return node.ListHeld(context.Background(), tx, node.ListHeldInput{NodeID: n})
	})
}

func TestClaimReleaseFencing(t *testing.T) {
	ctx := context.Background()
	db := opstest.Open(t)
	rid := id.New(1)
	claim := func(n string) int64 {
		return tx(t, db, func(tx udb.Transaction) (int64, error) {
			return node.ClaimSocket(ctx, tx, node.ClaimSocketInput{RunnerID: rid, NodeID: n})
		})
	}
	release := func(n string, epoch int64) bool {
		return tx(t, db, func(tx udb.Transaction) (bool, error) {
			return node.ReleaseSocket(ctx, tx, node.ReleaseSocketInput{RunnerID: rid, NodeID: n, Epoch: epoch})
		})
	}
	tx(t, db, func(tx udb.Transaction) (bool, error) {
		node.RenewLease(tx, node.RenewLeaseInput{NodeID: "a", Address: "http://a", ExpiresMs: 1000})
		node.RenewLease(tx, node.RenewLeaseInput{NodeID: "b", Address: "http://b", ExpiresMs: 1000})
		return true, nil
	})

	if _, ok := owner(t, db, rid, 0); ok {
		t.Fatal("owner before any claim")
	}
	ea := claim("a")
	if o, ok := owner(t, db, rid, 0); !ok || o.NodeID != "a" || o.Address != "http://a" || o.Epoch != ea {
		t.Fatalf("after a's claim: %+v %v", o, ok)
	}
	if _, ok := owner(t, db, rid, 1000); ok {
		t.Fatal("owner found past the holder's lease")
	}
	eb := claim("b")
	if eb != ea+1 {
		t.Fatalf("epochs %d then %d, want consecutive", ea, eb)
	}
	if h := held(t, db, "a"); len(h) != 0 {
		t.Fatalf("a still lists %v after b's claim", h)
	}
	if release("a", ea) {
		t.Fatal("a's stale release cleared b's record")
	}
	if o, ok := owner(t, db, rid, 0); !ok || o.NodeID != "b" {
		t.Fatalf("after a's stale release: %+v %v", o, ok)
	}
	if h := held(t, db, "b"); len(h) != 1 || h[0].Epoch != eb || h[0].RunnerID != rid {
		t.Fatalf("b holds %v", h)
	}
	if !release("b", eb) {
		t.Fatal("b's release refused")
	}
	if _, ok := owner(t, db, rid, 0); ok {
		t.Fatal("owner after release")
	}
	if h := held(t, db, "b"); len(h) != 0 {
		t.Fatalf("b still lists %v after its release", h)
	}
	if release("b", eb) {
		t.Fatal("a second release reported clearing the record")
	}
	if ec := claim("a"); ec != eb+1 {
		t.Fatalf("epoch after release %d, want %d", ec, eb+1)
	}
	tx(t, db, func(tx udb.Transaction) (bool, error) { node.Leave(tx, "a"); return true, nil })
	if _, ok := owner(t, db, rid, 0); ok {
		t.Fatal("owner found after its node left")
	}
}

func TestListHeldPages(t *testing.T) {
	ctx := context.Background()
	db := opstest.Open(t)
	for range 25 {
		rid := id.New(1)
		tx(t, db, func(tx udb.Transaction) (int64, error) {
			return node.ClaimSocket(ctx, tx, node.ClaimSocketInput{RunnerID: rid, NodeID: "a"})
		})
	}
	tx(t, db, func(tx udb.Transaction) (int64, error) {
		return node.ClaimSocket(ctx, tx, node.ClaimSocketInput{RunnerID: id.New(1), NodeID: "ab"})
	})
	var all []node.Held
	var after id.ID
	for {
		page := tx(t, db, func(tx udb.Transaction) ([]node.Held, error) {
			return node.ListHeld(ctx, tx, node.ListHeldInput{NodeID: "a", After: after, Limit: 10})
		})
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		after = page[len(page)-1].RunnerID
	}
	if len(all) != 25 {
		t.Fatalf("listed %d records over pages, want 25 (node ab's must not appear)", len(all))
	}
}
