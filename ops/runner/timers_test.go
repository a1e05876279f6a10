package runner

import (
	"slices"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

func unpinged(t *testing.T, db udb.Database, before int64) []id.ID {
	t.Helper()
	return opstest.Read(t, db, func(r udb.ReadTransaction) ([]id.ID, error) {
		return ListUnpingedSince(ctx, r, before, 0)
	})
}

func draining(t *testing.T, db udb.Database, before int64) []id.ID {
	t.Helper()
	return opstest.Read(t, db, func(r udb.ReadTransaction) ([]id.ID, error) {
		return ListDrainingSince(ctx, r, before, 0)
	})
}

func placeActor(t *testing.T, db udb.Database, rid, aid id.ID) {
	t.Helper()
	opstest.Write(t, db, func(tx udb.Transaction) (any, error) {
		keys.Set(tx, keys.RunnerActorKey{RunnerID: rid, ActorID: aid}, 1)
		return nil, nil
	})
}

func finishDrain(t *testing.T, db udb.Database, in FinishDrainInput) FinishDrainOutput {
	t.Helper()
	return opstest.Write(t, db, func(tx udb.Transaction) (FinishDrainOutput, error) { return FinishDrain(ctx, tx, in) })
}

// The ping index follows registration, pings and reconnects, and lists
// exactly the runners not pinged since a time, oldest first.
func TestPingIndex(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	a, b := input(ns, "pool", "a", 1000), input(ns, "pool", "b", 2000)
	ra, rb := register(t, db, a).RunnerID, register(t, db, b).RunnerID

	if got := unpinged(t, db, 2001); !slices.Equal(got, []id.ID{ra, rb}) {
		t.Fatalf("unpinged before 2001 = %v, want [a b]", got)
	}
	if got := unpinged(t, db, 2000); !slices.Equal(got, []id.ID{ra}) {
		t.Fatalf("unpinged before 2000 = %v, want [a] (the bound is exclusive)", got)
	}
	if _, err := ping(db, ra, a.ConnID, 5000); err != nil {
		t.Fatal(err)
	}
	if got := unpinged(t, db, 4000); !slices.Equal(got, []id.ID{rb}) {
		t.Fatalf("after a's ping, unpinged before 4000 = %v, want [b]", got)
	}
	// A reconnect counts as a ping, and leaves one entry.
	b2 := input(ns, "pool", "b", 6000)
	if register(t, db, b2).RunnerID != rb {
		t.Fatal("reconnect changed the runner id")
	}
	if got := unpinged(t, db, 1<<62); !slices.Equal(got, []id.ID{ra, rb}) {
		t.Fatalf("unpinged = %v, want [a b], one entry each", got)
	}
	// An expired runner leaves the index; its later pings stay out of it.
	out := opstest.Write(t, db, func(tx udb.Transaction) (ExpireOutput, error) {
		return Expire(ctx, tx, ExpireInput{RunnerID: ra, NowMs: 7000, PingBeforeMs: 6000})
	})
	if !out.Expired {
		t.Fatal("runner a, last pinged at 5000, did not expire with PingBeforeMs 6000")
	}
	if _, err := ping(db, ra, a.ConnID, 8000); err != nil {
		t.Fatal(err)
	}
	if got := unpinged(t, db, 1<<62); !slices.Equal(got, []id.ID{rb}) {
		t.Fatalf("unpinged after a expired = %v, want [b]", got)
	}
}

// FinishDrain stops a draining runner only when no actor is left on it, or
// with Force, reporting the actors it leaves; it never touches a runner that
// is not draining.
func TestFinishDrain(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	in := input(ns, "pool", "k", 1000)
	rid := register(t, db, in).RunnerID
	a1, a2 := id.New(1), id.New(1)
	placeActor(t, db, rid, a1)
	placeActor(t, db, rid, a2)

	if out := finishDrain(t, db, FinishDrainInput{RunnerID: rid, NowMs: 1500, Force: true}); out.Stopped {
		t.Fatal("FinishDrain stopped a runner that is not draining")
	}
	opstest.Write(t, db, func(tx udb.Transaction) (DrainOutput, error) {
		return Drain(ctx, tx, DrainInput{RunnerID: rid, NowMs: 2000})
	})
	if got := draining(t, db, 2001); !slices.Equal(got, []id.ID{rid}) {
		t.Fatalf("draining since before 2001 = %v, want the runner", got)
	}
	if got := draining(t, db, 2000); len(got) != 0 {
		t.Fatalf("draining since before 2000 = %v, want none", got)
	}
	if out := finishDrain(t, db, FinishDrainInput{RunnerID: rid, NowMs: 2500}); out.Stopped {
		t.Fatal("FinishDrain stopped a runner with actors on it")
	}
	if r := get(t, db, rid); r.StopTs != nil {
		t.Fatalf("runner with actors got stop_ts %d", *r.StopTs)
	}

	out := finishDrain(t, db, FinishDrainInput{RunnerID: rid, NowMs: 3000, Force: true})
	sortIDs(out.Lost)
	want := []id.ID{a1, a2}
	sortIDs(want)
	if !out.Stopped || !slices.Equal(out.Lost, want) {
		t.Fatalf("forced FinishDrain = %+v, want stopped with both actors lost", out)
	}
	r := get(t, db, rid)
	if r.StopTs == nil || *r.StopTs != 3000 {
		t.Fatalf("stop_ts = %v, want 3000", r.StopTs)
	}
	if got := draining(t, db, 1<<62); len(got) != 0 {
		t.Fatalf("stopped runner still in the drain index: %v", got)
	}
	if got := unpinged(t, db, 1<<62); len(got) != 0 {
		t.Fatalf("stopped runner still in the ping index: %v", got)
	}
	actors := opstest.Read(t, db, func(r udb.ReadTransaction) ([]id.ID, error) { return actorsOn(ctx, r, rid, 0) })
	if len(actors) != 0 {
		t.Fatalf("stopped runner still holds actors %v", actors)
	}
	if out := finishDrain(t, db, FinishDrainInput{RunnerID: rid, NowMs: 4000, Force: true}); out.Stopped {
		t.Fatal("FinishDrain stopped a stopped runner again")
	}
}

// A draining runner with no actor stops at the first FinishDrain.
func TestFinishDrainIdle(t *testing.T) {
	db := opstest.Open(t)
	in := input(id.New(1), "pool", "k", 1000)
	rid := register(t, db, in).RunnerID
	opstest.Write(t, db, func(tx udb.Transaction) (DrainOutput, error) {
		return Drain(ctx, tx, DrainInput{RunnerID: rid, ConnID: in.ConnID, NowMs: 2000})
	})
	if out := finishDrain(t, db, FinishDrainInput{RunnerID: rid, NowMs: 2001}); !out.Stopped || len(out.Lost) != 0 {
		t.Fatalf("FinishDrain of an idle draining runner = %+v, want stopped, nothing lost", out)
	}
}

func TestListOlderVersions(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	reg := func(name, key string, version uint32) id.ID {
		in := input(ns, name, key, 1000)
		in.Version = version
		return register(t, db, in).RunnerID
	}
	v1, v2 := reg("pool", "a", 1), reg("pool", "b", 2)
	reg("pool", "c", 3)
	reg("other", "d", 1)
	got := opstest.Read(t, db, func(r udb.ReadTransaction) ([]id.ID, error) { return ListOlderVersions(ctx, r, ns, "pool", 3) })
	sortIDs(got)
	want := []id.ID{v1, v2}
	sortIDs(want)
	if !slices.Equal(got, want) {
		t.Fatalf("older than 3 = %v, want %v", got, want)
	}
	if got := opstest.Read(t, db, func(r udb.ReadTransaction) ([]id.ID, error) { return ListOlderVersions(ctx, r, ns, "pool", 1) }); len(got) != 0 {
		t.Fatalf("older than 1 = %v, want none", got)
	}
}

func sortIDs(ids []id.ID) {
	slices.SortFunc(ids, func(a, b id.ID) int { return slices.Compare(a[:], b[:]) })
}

// The actor names a runner announces join the namespace's actor names; a later
// registration updates their metadata.
func TestRegisterWritesActorNames(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	in := input(ns, "pool", "k", 1000)
	in.ActorNames = []ActorName{{Name: "counter", Metadata: []byte(`{"v":1}`)}, {Name: "chat"}}
	register(t, db, in)
	in2 := input(ns, "pool", "k2", 2000)
	in2.ActorNames = []ActorName{{Name: "counter", Metadata: []byte(`{"v":2}`)}}
	register(t, db, in2)
	for name, want := range map[string]string{"counter": `{"v":2}`, "chat": `{}`} {
		got := opstest.Read(t, db, func(r udb.ReadTransaction) (keys.ActorNameValue, error) {
			v, _, err := keys.Get(ctx, r, keys.ActorNameKey{Namespace: ns, Name: name})
			return v, err
		})
		if got.Metadata != want {
			t.Errorf("actor name %s metadata %q, want %q", name, got.Metadata, want)
		}
	}
}
