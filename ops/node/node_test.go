package node_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/ops/node"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

func tx[T any](t *testing.T, db udb.Database, f func(udb.Transaction) (T, error)) T {
	t.Helper()
	v, err := udb.Transact(context.Background(), db, func(tx udb.Transaction) (T, error) { return f(tx) })
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func owner(t *testing.T, db udb.Database, sock keys.Socket, now int64) (node.Owner, bool) {
	t.Helper()
	type res struct {
		o  node.Owner
		ok bool
	}
	r := tx(t, db, func(tx udb.Transaction) (res, error) {
		o, ok, err := node.SocketOwner(context.Background(), tx, node.SocketOwnerInput{Socket: sock, NowMs: now})
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

// TestClaimReleaseFencing runs the same fencing story for a runner's socket and an envoy's.
func TestClaimReleaseFencing(t *testing.T) {
	for _, sock := range []keys.Socket{keys.RunnerSocket(id.New(1)), keys.EnvoySocket(id.New(1), "envoy-a")} {
		t.Run(sock.String(), func(t *testing.T) { testClaimReleaseFencing(t, sock) })
	}
}

func testClaimReleaseFencing(t *testing.T, rid keys.Socket) {
	ctx := context.Background()
	db := opstest.Open(t)
	claim := func(n string) int64 {
		return tx(t, db, func(tx udb.Transaction) (int64, error) {
			return node.ClaimSocket(ctx, tx, node.ClaimSocketInput{Socket: rid, NodeID: n})
		})
	}
	release := func(n string, epoch int64) bool {
		return tx(t, db, func(tx udb.Transaction) (bool, error) {
			return node.ReleaseSocket(ctx, tx, node.ReleaseSocketInput{Socket: rid, NodeID: n, Epoch: epoch})
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
	if h := held(t, db, "b"); len(h) != 1 || h[0].Epoch != eb || h[0].Socket != rid {
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

// TestListHeldPages pages through a node's runner and envoy records mixed, each listed once.
func TestListHeldPages(t *testing.T) {
	ctx := context.Background()
	db := opstest.Open(t)
	ns := id.New(1)
	want := map[keys.Socket]bool{}
	for i := range 25 {
		sock := keys.RunnerSocket(id.New(1))
		if i%3 == 0 {
			sock = keys.EnvoySocket(ns, fmt.Sprintf("envoy-%d", i))
		}
		want[sock] = true
		tx(t, db, func(tx udb.Transaction) (int64, error) {
			return node.ClaimSocket(ctx, tx, node.ClaimSocketInput{Socket: sock, NodeID: "a"})
		})
	}
	for _, sock := range []keys.Socket{keys.RunnerSocket(id.New(1)), keys.EnvoySocket(ns, "envoy-ab")} {
		tx(t, db, func(tx udb.Transaction) (int64, error) {
			return node.ClaimSocket(ctx, tx, node.ClaimSocketInput{Socket: sock, NodeID: "ab"})
		})
	}
	var after *keys.Socket
	for {
		page := tx(t, db, func(tx udb.Transaction) ([]node.Held, error) {
			return node.ListHeld(ctx, tx, node.ListHeldInput{NodeID: "a", After: after, Limit: 10})
		})
		if len(page) == 0 {
			break
		}
		for _, h := range page {
			if !want[h.Socket] {
				t.Fatalf("listed %v: not one of node a's records, or listed twice", h.Socket)
			}
			delete(want, h.Socket)
		}
		after = &page[len(page)-1].Socket
	}
	if len(want) != 0 {
		t.Fatalf("%d of node a's records not listed over pages: %v", len(want), want)
	}
}
