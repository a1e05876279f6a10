package envoy

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

func pick(t *testing.T, db udb.Database, in PickInput) (string, bool) {
	t.Helper()
	type res struct {
		key string
		ok  bool
	}
	r := opstest.Write(t, db, func(tx udb.Transaction) (res, error) {
		k, ok, err := Pick(ctx, tx, in)
		return res{k, ok}, err
	})
	return r.key, r.ok
}

// Only fresh envoys of the newest version in the indexes are picked, with either strategy:
// a stale ping, a drain, an expiry or an older version keeps an envoy out.
func TestPickEligibility(t *testing.T) {
	for _, strategy := range Strategies {
		t.Run(strategy, func(t *testing.T) {
			db := opstest.Open(t)
			ns := id.New(1)
			r := rand.New(rand.NewPCG(3, 4))
			in := PickInput{Namespace: ns, PoolName: "pool", Strategy: strategy, PingedSinceMs: 1000, Random: func(n int64) int64 { return r.Int64N(n) }}
			if _, ok := pick(t, db, in); ok {
				t.Fatal("picked in an empty pool")
			}
			old := input(ns, "old", "pool", 2000)
			old.Version = 1
			register(t, db, old)
			for _, k := range []string{"stale", "drained", "expired", "fresh"} {
				in := input(ns, k, "pool", 2000)
				in.Version = 2
				if k == "stale" {
					in.NowMs = 500
				}
				register(t, db, in)
			}
			if _, err := drain(db, DrainInput{Namespace: ns, EnvoyKey: "drained", NowMs: 2000}); err != nil {
				t.Fatal(err)
			}
			if _, err := expire(db, ExpireInput{Namespace: ns, EnvoyKey: "expired", NowMs: 2000}); err != nil {
				t.Fatal(err)
			}
			for range 50 {
				if k, ok := pick(t, db, in); !ok || k != "fresh" {
					t.Fatalf("picked %q, %v; want only fresh", k, ok)
				}
			}
		})
	}
}

// A placement and a drain of the envoy it picked, concurrent: the one that commits second
// conflicts (the pick's read conflict on the index entry), so no actor lands on a drained
// envoy.
func TestPickConflictsWithDrain(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	register(t, db, input(ns, "envoy-a", "pool", 2000))
	tx, err := db.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Cancel()
	k, ok, err := Pick(ctx, tx, PickInput{Namespace: ns, PoolName: "pool", PingedSinceMs: 1000, Random: func(int64) int64 { return 0 }})
	if err != nil || !ok || k != "envoy-a" {
		t.Fatalf("pick %q %v %v", k, ok, err)
	}
	PlaceActor(tx, PlaceActorInput{Namespace: ns, EnvoyKey: k, ActorID: id.New(1), Generation: 0})
	if _, err := drain(db, DrainInput{Namespace: ns, EnvoyKey: "envoy-a", NowMs: 3000}); err != nil {
		t.Fatal(err)
	}
	var ue udb.Error
	if err := tx.Commit(ctx); !errors.As(err, &ue) || ue.Code != 1020 {
		t.Fatalf("commit after the drain: %v; want not_committed (1020)", err)
	}
}

// ReleaseActor takes the actor off and reports the stopping envoy's last actor.
func TestReleaseActor(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	register(t, db, input(ns, "envoy-a", "pool", 2000))
	a1, a2 := id.New(1), id.New(1)
	opstest.Write(t, db, func(tx udb.Transaction) (keys.Empty, error) {
		PlaceActor(tx, PlaceActorInput{Namespace: ns, EnvoyKey: "envoy-a", ActorID: a1})
		PlaceActor(tx, PlaceActorInput{Namespace: ns, EnvoyKey: "envoy-a", ActorID: a2})
		return keys.Empty{}, nil
	})
	if got := get(t, db, ns, "envoy-a").Slots; got != 2 {
		t.Fatalf("slots %d, want 2", got)
	}
	if _, err := drain(db, DrainInput{Namespace: ns, EnvoyKey: "envoy-a", NowMs: 3000}); err != nil {
		t.Fatal(err)
	}
	release := func(aid id.ID) ReleaseActorOutput {
		return opstest.Write(t, db, func(tx udb.Transaction) (ReleaseActorOutput, error) {
			return ReleaseActor(ctx, tx, ns, "envoy-a", aid)
		})
	}
	if out := release(a1); out.Stopped {
		t.Fatal("stopped with an actor left")
	}
	if out := release(a1); out.Stopped {
		t.Fatal("a second release of the same actor counted")
	}
	if out := release(a2); !out.Stopped {
		t.Fatal("not stopped after its last actor left")
	}
	if got := get(t, db, ns, "envoy-a").Slots; got != 0 {
		t.Fatalf("slots %d, want 0", got)
	}
}
