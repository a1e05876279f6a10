package keyres

import (
	"context"
	"errors"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

var ctx = context.Background()

func holderOf(aid id.ID, at int64) Holder { return Holder{ActorID: aid, ReservedAtMs: at} }

func TestReserveReplaceRelease(t *testing.T) {
	db := opstest.Open(t)
	k := Key{Namespace: id.New(1), Name: "room", Key: "k1"}
	a, b, c := id.New(2), id.New(3), id.New(1)
	write := func(f func(tx udb.Transaction) (Holder, error)) Holder {
		t.Helper()
		return opstest.Write(t, db, f)
	}
	steps := []struct {
		name string
		do   func(tx udb.Transaction) (Holder, error)
		want Holder
	}{
		{"reserve a free key", func(tx udb.Transaction) (Holder, error) { return Reserve(ctx, tx, k, holderOf(a, 10)) }, holderOf(a, 10)},
		{"reserve again, same actor", func(tx udb.Transaction) (Holder, error) { return Reserve(ctx, tx, k, holderOf(a, 11)) }, holderOf(a, 10)},
		{"reserve a held key", func(tx udb.Transaction) (Holder, error) { return Reserve(ctx, tx, k, holderOf(b, 12)) }, holderOf(a, 10)},
		{"replace, wrong expect", func(tx udb.Transaction) (Holder, error) { return Replace(ctx, tx, k, c, holderOf(b, 13)) }, holderOf(a, 10)},
		{"replace, right expect", func(tx udb.Transaction) (Holder, error) { return Replace(ctx, tx, k, a, holderOf(b, 14)) }, holderOf(b, 14)},
		{"replace, stale expect", func(tx udb.Transaction) (Holder, error) { return Replace(ctx, tx, k, a, holderOf(c, 15)) }, holderOf(b, 14)},
	}
	for _, s := range steps {
		if got := write(s.do); got != s.want {
			t.Fatalf("%s: holder %+v, want %+v", s.name, got, s.want)
		}
	}
	release := func(h id.ID) bool {
		return opstest.Write(t, db, func(tx udb.Transaction) (bool, error) { return Release(ctx, tx, k, h) })
	}
	if release(a) {
		t.Fatal("released by a former holder")
	}
	if !release(b) {
		t.Fatal("not released by its holder")
	}
	if free := opstest.Read(t, db, func(r udb.ReadTransaction) (bool, error) {
		_, found, err := Get(ctx, r, k)
		return !found, err
	}); !free {
		t.Fatal("still reserved after its release")
	}
	if got := write(func(tx udb.Transaction) (Holder, error) { return Replace(ctx, tx, k, a, holderOf(c, 16)) }); got != holderOf(c, 16) {
		t.Fatalf("replace of a released key: %+v", got)
	}
	other := Key{Namespace: k.Namespace, Name: "room", Key: "k2"}
	if got := write(func(tx udb.Transaction) (Holder, error) { return Reserve(ctx, tx, other, holderOf(a, 17)) }); got != holderOf(a, 17) {
		t.Fatalf("another key: %+v", got)
	}
}

// TestConcurrentReserve: two reservations of one key read it free at the same version; the
// second to commit conflicts and, retried, finds the first's.
func TestConcurrentReserve(t *testing.T) {
	db := opstest.Open(t)
	k := Key{Namespace: id.New(1), Name: "room", Key: "k"}
	a, b := id.New(1), id.New(2)
	ha, hb := opstest.Begin(t, db), opstest.Begin(t, db)
	for _, h := range []struct {
		held *opstest.Held
		aid  id.ID
	}{{ha, a}, {hb, b}} {
		if got, err := Reserve(ctx, h.held.Tx(), k, holderOf(h.aid, 1)); err != nil || got.ActorID != h.aid {
			t.Fatalf("reserve: %+v %v", got, err)
		}
	}
	if err := ha.Commit(); err != nil {
		t.Fatal(err)
	}
	err := hb.Commit()
	if !opstest.IsConflict(err) {
		t.Fatalf("second reservation committed: %v", err)
	}
	var got Holder
	if err := hb.Retry(err, func(tx udb.Transaction) (err error) { got, err = Reserve(ctx, tx, k, holderOf(b, 2)); return err }); err != nil {
		t.Fatal(err)
	}
	if got.ActorID != a {
		t.Fatalf("retried reservation: holder %v, want %v", got.ActorID, a)
	}
}

// world is a store with a pool's runner config, for creates.
type world struct {
	t  *testing.T
	db udb.Database
	ns id.ID
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, db: opstest.Open(t), ns: id.New(1)}
	opstest.Write(t, w.db, func(tx udb.Transaction) (keys.RunnerConfig, error) {
		return runnerconfig.Ensure(ctx, tx, runnerconfig.EnsureInput{Namespace: w.ns, Name: "pool"})
	})
	return w
}

func (w *world) createInput(aid id.ID, key string) actor.CreateInput {
	return actor.CreateInput{Namespace: w.ns, NamespaceName: "default", ActorID: aid, Name: "room", Key: &key,
		Selector: "pool", CrashPolicy: "sleep", NowMs: 5, Datacenter: "dc", Config: actor.DefaultConfig(), Reserved: true}
}

func (w *world) fence(aid id.ID) Liveness {
	return opstest.Write(w.t, w.db, func(tx udb.Transaction) (Liveness, error) { return Fence(ctx, tx, aid, 9) })
}

func TestFence(t *testing.T) {
	w := newWorld(t)
	live, gone, never := id.New(1), id.New(1), id.New(1)
	for _, aid := range []id.ID{live, gone} {
		opstest.Write(t, w.db, func(tx udb.Transaction) (actor.CreateOutput, error) {
			return actor.Create(ctx, tx, w.createInput(aid, aid.String()))
		})
	}
	opstest.Write(t, w.db, func(tx udb.Transaction) (actor.DestroyOutput, error) {
		return actor.Destroy(ctx, tx, actor.Input{ActorID: gone, NowMs: 6, Config: actor.DefaultConfig()})
	})
	for _, c := range []struct {
		aid  id.ID
		want Liveness
	}{{live, Live}, {gone, Destroyed}, {never, Absent}, {never, Absent}} {
		if got := w.fence(c.aid); got != c.want {
			t.Errorf("fence %v: %s, want %s", c.aid, got, c.want)
		}
	}
	// The fenced id can no longer be created.
	_, err := opstest.Transact(w.db, func(tx udb.Transaction) (actor.CreateOutput, error) {
		return actor.Create(ctx, tx, w.createInput(never, "k-never"))
	})
	if !errors.Is(err, actor.ErrFenced) {
		t.Fatalf("create of a fenced id: %v", err)
	}
	// Without Reserved (a single datacenter) the fence is not read.
	in := w.createInput(never, "k-never")
	in.Reserved = false
	opstest.Write(t, w.db, func(tx udb.Transaction) (actor.CreateOutput, error) { return actor.Create(ctx, tx, in) })
}

// TestFenceRacesCreate: a create and a fence of one id that read the same version; whichever
// commits second conflicts and, retried, sees the other's outcome: never both.
func TestFenceRacesCreate(t *testing.T) {
	for _, createFirst := range []bool{true, false} {
		w := newWorld(t)
		aid := id.New(1)
		in := w.createInput(aid, "k")
		hc, hf := opstest.Begin(t, w.db), opstest.Begin(t, w.db)
		create := func(tx udb.Transaction) error { _, err := actor.Create(ctx, tx, in); return err }
		var fenced Liveness
		fence := func(tx udb.Transaction) (err error) { fenced, err = Fence(ctx, tx, aid, 7); return err }
		if err := create(hc.Tx()); err != nil {
			t.Fatal(err)
		}
		if err := fence(hf.Tx()); err != nil || fenced != Absent {
			t.Fatalf("fence before either commits: %s %v", fenced, err)
		}
		first, second, secondDo := hc, hf, fence
		if !createFirst {
			first, second, secondDo = hf, hc, create
		}
		if err := first.Commit(); err != nil {
			t.Fatal(err)
		}
		err := second.Commit()
		if !opstest.IsConflict(err) {
			t.Fatalf("createFirst=%v: the second commit did not conflict: %v", createFirst, err)
		}
		err = second.Retry(err, secondDo)
		switch {
		case createFirst && (err != nil || fenced != Live):
			t.Errorf("fence after the create: %s %v, want live", fenced, err)
		case !createFirst && !errors.Is(err, actor.ErrFenced):
			t.Errorf("create after the fence: %v, want ErrFenced", err)
		}
	}
}

func TestLiveKeyed(t *testing.T) {
	w := newWorld(t)
	ns2 := id.New(1)
	opstest.Write(t, w.db, func(tx udb.Transaction) (keys.RunnerConfig, error) {
		return runnerconfig.Ensure(ctx, tx, runnerconfig.EnsureInput{Namespace: ns2, Name: "pool"})
	})
	want := map[id.ID]Key{}
	for i, ns := range []id.ID{w.ns, ns2, w.ns, ns2, w.ns} {
		aid := id.New(1)
		in := w.createInput(aid, string(rune('a'+i)))
		in.Namespace = ns
		opstest.Write(t, w.db, func(tx udb.Transaction) (actor.CreateOutput, error) { return actor.Create(ctx, tx, in) })
		want[aid] = Key{Namespace: ns, Name: "room", Key: *in.Key}
	}
	unkeyed := w.createInput(id.New(1), "")
	unkeyed.Key = nil
	opstest.Write(t, w.db, func(tx udb.Transaction) (actor.CreateOutput, error) { return actor.Create(ctx, tx, unkeyed) })
	var gone id.ID
	for aid := range want {
		gone = aid
		break
	}
	opstest.Write(t, w.db, func(tx udb.Transaction) (actor.DestroyOutput, error) {
		return actor.Destroy(ctx, tx, actor.Input{ActorID: gone, NowMs: 6, Config: actor.DefaultConfig()})
	})
	delete(want, gone)
	for _, limit := range []int{1, 2, 10} {
		got := map[id.ID]Key{}
		var from []byte
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("limit %d: no end", limit)
			}
			type page struct {
				entries []Entry
				next    []byte
			}
			p := opstest.Read(t, w.db, func(r udb.ReadTransaction) (page, error) {
				e, n, err := LiveKeyed(ctx, r, from, limit)
				return page{e, n}, err
			})
			if len(p.entries) > limit {
				t.Fatalf("limit %d: page of %d", limit, len(p.entries))
			}
			for _, e := range p.entries {
				if _, dup := got[e.ActorID]; dup {
					t.Fatalf("limit %d: %v twice", limit, e.ActorID)
				}
				got[e.ActorID] = e.Key
			}
			if p.next == nil {
				break
			}
			from = p.next
		}
		if len(got) != len(want) {
			t.Fatalf("limit %d: %d live keyed actors, want %d", limit, len(got), len(want))
		}
		for aid, k := range want {
			if got[aid] != k {
				t.Errorf("limit %d: %v: %+v, want %+v", limit, aid, got[aid], k)
			}
		}
	}
}
