package pegboard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/keyres"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// twoDCs is two datacenters in this process, each a store and an Actors: label 1 the
// leader, label 2 the other, reaching each other through localKeys.
type twoDCs struct {
	t  *testing.T
	ns id.ID
	db map[uint16]udb.Database
	p  map[uint16]*Actors
}

// localKeys is KeyService over the stores of this process: what api-peer's KeyClient does
// with a call to the leader or to an actor's datacenter.
type localKeys struct {
	w     *twoDCs
	local uint16
}

func (k localKeys) LeaderIsLocal() bool { return k.local == 1 }
func (k localKeys) Leader() string      { return "dc1" }

func (k localKeys) Replace(ctx context.Context, reqs []keyres.Request) ([]keyres.Holder, error) {
	return udb.Transact(ctx, k.w.db[1], func(tx udb.Transaction) ([]keyres.Holder, error) {
		var out []keyres.Holder
		for _, r := range reqs {
			h, err := keyres.Replace(ctx, tx, r.Key, r.Expect, r.Candidate)
			if err != nil {
				return nil, err
			}
			out = append(out, h)
		}
		return out, nil
	})
}

func (k localKeys) Release(ctx context.Context, reqs []keyres.Request) error {
	return udb.Update(ctx, k.w.db[1], func(tx udb.Transaction) error {
		for _, r := range reqs {
			if _, err := keyres.Release(ctx, tx, r.Key, r.Expect); err != nil {
				return err
			}
		}
		return nil
	})
}

func (k localKeys) Find(ctx context.Context, aid id.ID, fence bool) (keyres.Liveness, actor.Actor, error) {
	db := k.w.db[aid.Label()]
	l, err := udb.Transact(ctx, db, func(tx udb.Transaction) (keyres.Liveness, error) {
		if fence {
			return keyres.Fence(ctx, tx, aid, now())
		}
		return keyres.Look(ctx, tx, aid)
	})
	if err != nil || l != keyres.Live {
		return l, actor.Actor{}, err
	}
	a, err := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) (actor.Actor, error) {
		return actor.GetOne(ctx, r, aid, fmt.Sprint("dc", aid.Label()))
	})
	return l, a, err
}

func (k localKeys) Holder(ctx context.Context, key keyres.Key) (keyres.Holder, bool, error) {
	type held struct {
		h     keyres.Holder
		found bool
	}
	h, err := udb.ReadTransact(ctx, k.w.db[1], func(r udb.ReadTransaction) (held, error) {
		h, found, err := keyres.Get(ctx, r, key)
		return held{h, found}, err
	})
	return h.h, h.found, err
}

func newTwoDCs(t *testing.T) *twoDCs {
	ctx := context.Background()
	w := &twoDCs{t: t, ns: id.New(1), db: map[uint16]udb.Database{}, p: map[uint16]*Actors{}}
	for _, label := range []uint16{1, 2} {
		db, err := udb.Open(ctx, "mem://")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := udb.Update(ctx, db, func(tx udb.Transaction) error {
			_, err := runnerconfig.Ensure(ctx, tx, runnerconfig.EnsureInput{Namespace: w.ns, Name: "pool"})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		w.db[label] = db
		// No Run: releases stay queued, so that a destroyed holder keeps its reservation.
		w.p[label] = NewActors(ActorsOptions{DB: db, Watchers: NewWatchers(), Config: actor.DefaultConfig(),
			Label: label, Datacenter: fmt.Sprint("dc", label), Keys: localKeys{w: w, local: label}})
	}
	return w
}

func (w *twoDCs) input(key string) actor.CreateInput {
	return actor.CreateInput{Namespace: w.ns, NamespaceName: "default", Name: "room", Key: &key, Selector: "pool", CrashPolicy: "sleep"}
}

// actors returns every actor ever created with key, in both datacenters.
func (w *twoDCs) actors(key string) []actor.Actor {
	w.t.Helper()
	var out []actor.Actor
	for _, label := range []uint16{1, 2} {
		l, err := udb.ReadTransact(context.Background(), w.db[label], func(r udb.ReadTransaction) (actor.ListOutput, error) {
			return actor.List(context.Background(), r, actor.ListInput{Namespace: w.ns, Name: "room", Key: &key, IncludeDestroyed: true})
		})
		if err != nil {
			w.t.Fatal(err)
		}
		out = append(out, l.Actors...)
	}
	return out
}

// reserve writes a reservation of key for aid at the leader, reserved at atMs.
func (w *twoDCs) reserve(key string, aid id.ID, atMs int64) {
	w.t.Helper()
	k := keyres.Key{Namespace: w.ns, Name: "room", Key: key}
	if _, err := (localKeys{w: w}).Replace(context.Background(), []keyres.Request{{Key: k, Candidate: keyres.Holder{ActorID: aid, ReservedAtMs: atMs}}}); err != nil {
		w.t.Fatal(err)
	}
}

func TestKeysConcurrentGetOrCreate(t *testing.T) {
	w := newTwoDCs(t)
	ctx := context.Background()
	const n = 20
	var wg sync.WaitGroup
	got := make([][2]id.ID, n)
	for i := range n {
		for j, label := range []uint16{1, 2} {
			wg.Go(func() {
				a, _, err := w.p[label].GetOrCreate(ctx, w.input(fmt.Sprint("k", i)))
				if err != nil {
					t.Errorf("k%d from dc%d: %v", i, label, err)
				}
				got[i][j] = a.ActorID
			})
		}
	}
	wg.Wait()
	for i := range n {
		if all := w.actors(fmt.Sprint("k", i)); len(all) != 1 || got[i][0] != all[0].ActorID || got[i][1] != all[0].ActorID {
			t.Errorf("k%d: answers %v, actors %d", i, got[i], len(all))
		}
	}
}

func TestKeysTakeOver(t *testing.T) {
	w := newTwoDCs(t)
	ctx := context.Background()
	// A holder of dc2 that was never created, reserved long ago: dc1 fences it and takes over.
	stale := id.New(2)
	w.reserve("stale", stale, now()-2*ReservationGrace.Milliseconds())
	a, created, err := w.p[1].GetOrCreate(ctx, w.input("stale"))
	if err != nil || !created || a.ActorID.Label() != 1 {
		t.Fatalf("get-or-create over a stale reservation: %+v %v %v", a, created, err)
	}
	late := w.input("stale")
	late.ActorID, late.Reserved, late.NowMs, late.Config = stale, true, now(), actor.DefaultConfig()
	if _, err := udb.Transact(ctx, w.db[2], func(tx udb.Transaction) (actor.CreateOutput, error) { return actor.Create(ctx, tx, late) }); !errors.Is(err, actor.ErrFenced) {
		t.Fatalf("the stale holder's late create: %v, want ErrFenced", err)
	}

	// A fresh reservation whose actor does not exist yet: waited for, not taken over.
	fresh := id.New(2)
	w.reserve("fresh", fresh, now())
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, _, err := w.p[1].GetOrCreate(wctx, w.input("fresh")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("get-or-create over a fresh reservation: %v, want to wait", err)
	}
	created2 := w.input("fresh")
	created2.ActorID, created2.Reserved, created2.NowMs, created2.Config = fresh, true, now(), actor.DefaultConfig()
	if _, err := udb.Transact(ctx, w.db[2], func(tx udb.Transaction) (actor.CreateOutput, error) { return actor.Create(ctx, tx, created2) }); err != nil {
		t.Fatal(err)
	}
	if a, created, err := w.p[1].GetOrCreate(ctx, w.input("fresh")); err != nil || created || a.ActorID != fresh {
		t.Fatalf("once its creator is done: %v %v %v, want %v", a.ActorID, created, err, fresh)
	}
	// dc1 finds it by key (the leader's reservation, then its cache).
	for range 2 {
		if a, found, err := w.p[1].GetByKey(ctx, w.ns, "room", "fresh"); err != nil || !found || a.ActorID != fresh {
			t.Fatalf("get by key from dc1: %v %v %v", a.ActorID, found, err)
		}
	}
	if _, found, err := w.p[1].GetByKey(ctx, w.ns, "room", "none"); err != nil || found {
		t.Fatalf("get of a free key: %v %v", found, err)
	}
	// A create of the key from dc1 names dc2's actor.
	if _, err := w.p[1].Create(ctx, w.input("fresh")); !rerr.Is(err, rerr.CodeActorDuplicateKey) {
		t.Fatalf("create of a key held in dc2: %v", err)
	}

	// A destroyed holder (its release never sent: no loop runs) is replaced.
	if err := w.p[2].Destroy(ctx, fresh, false); err != nil {
		t.Fatal(err)
	}
	if a, created, err := w.p[1].GetOrCreate(ctx, w.input("fresh")); err != nil || !created || a.ActorID.Label() != 1 {
		t.Fatalf("get-or-create over a destroyed holder: %+v %v %v", a, created, err)
	}
	if all := w.actors("fresh"); len(all) != 2 {
		t.Fatalf("%d actors of key fresh, want 2", len(all))
	}
}
