package pegboard

import (
	"context"
	"fmt"
	"testing"

	"github.com/berthhq/berth/ops/actor"
	oprunner "github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

func (k localKeys) Capacities(ctx context.Context, ns id.ID, pool string) []actor.DatacenterCapacity {
	var out []actor.DatacenterCapacity
	for _, label := range []uint16{1, 2} {
		if label == k.local {
			continue
		}
		c, err := k.w.p[label].Capacity(ctx, ns, pool)
		if err != nil {
			k.w.t.Error(err)
			continue
		}
		out = append(out, actor.DatacenterCapacity{Datacenter: fmt.Sprint("dc", label), Capacity: c})
	}
	return out
}

func (k localKeys) CreateIn(ctx context.Context, dc string, in actor.CreateInput, getOrCreate bool) (actor.Actor, bool, error) {
	var label uint16
	if _, err := fmt.Sscanf(dc, "dc%d", &label); err != nil || k.w.p[label] == nil {
		return actor.Actor{}, false, rerr.DatacenterNotFound(dc)
	}
	in.ActorID, in.Datacenter, in.NowMs, in.Pinned = id.ID{}, "", 0, true // as api-peer binds it there
	if getOrCreate {
		return k.w.p[label].GetOrCreate(ctx, in)
	}
	a, err := k.w.p[label].Create(ctx, in)
	return a, err == nil, err
}

// connectRunner registers a runner of pool with free slots in datacenter label, pinged now.
func (w *twoDCs) connectRunner(label uint16, pool string) {
	w.t.Helper()
	ctx := context.Background()
	if err := udb.Update(ctx, w.db[label], func(tx udb.Transaction) error {
		conn := id.New(label)
		out, err := oprunner.Register(ctx, tx, oprunner.RegisterInput{Namespace: w.ns, Name: pool, Key: "r", Version: 1,
			TotalSlots: 8, ProtocolVersion: 7, ConnID: conn, NewRunnerID: id.New(label), NowMs: now()})
		if err != nil {
			return err
		}
		_, err = oprunner.UpdatePing(ctx, tx, oprunner.UpdatePingInput{RunnerID: out.RunnerID, ConnID: conn, NowMs: now()})
		return err
	}); err != nil {
		w.t.Fatal(err)
	}
}

// configure gives pool a runner config in datacenter label.
func (w *twoDCs) configure(label uint16, pool string) {
	w.t.Helper()
	if err := udb.Update(context.Background(), w.db[label], func(tx udb.Transaction) error {
		_, err := runnerconfig.Ensure(context.Background(), tx, runnerconfig.EnsureInput{Namespace: w.ns, Name: pool})
		return err
	}); err != nil {
		w.t.Fatal(err)
	}
}

// A request that names no datacenter creates where the pool has a free host, else where it
// is configured (here first); one that names its datacenter creates there.
func TestPlacementAcrossDatacenters(t *testing.T) {
	w := newTwoDCs(t)
	ctx := context.Background()
	create := func(from uint16, pool string, key *string, pinned bool) (actor.Actor, error) {
		in := w.input("")
		in.Key, in.Selector, in.Pinned = key, pool, pinned
		return w.p[from].Create(ctx, in)
	}
	lives := func(what string, a actor.Actor, err error, want uint16) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if a.ActorID.Label() != want || a.Datacenter != fmt.Sprint("dc", want) {
			t.Errorf("%s: created in %s (label %d), want dc%d", what, a.Datacenter, a.ActorID.Label(), want)
		}
	}

	// "pool" is configured in both, with no runner: here.
	a, err := create(1, "pool", nil, false)
	lives("no free host anywhere", a, err, 1)

	// A free runner in dc2 only: creates from either datacenter go there, keyed or not.
	w.connectRunner(2, "pool")
	a, err = create(1, "pool", nil, false)
	lives("free host in dc2, from dc1", a, err, 2)
	a, err = create(2, "pool", nil, false)
	lives("free host in dc2, from dc2", a, err, 2)
	key := "moved"
	a, err = create(1, "pool", &key, false)
	lives("keyed, free host in dc2, from dc1", a, err, 2)
	got, created, err := w.p[1].GetOrCreate(ctx, w.input(key))
	if err != nil || created || got.ActorID != a.ActorID {
		t.Errorf("get-or-create of the moved key from dc1: %v created=%v %v, want actor %v", err, created, got.ActorID, a.ActorID)
	}
	if _, err := create(1, "pool", &key, false); !rerr.Is(err, rerr.CodeActorDuplicateKey) {
		t.Errorf("create of the moved key from dc1: %v, want actor.duplicate_key", err)
	}

	// Named datacenter: there, free host or not.
	a, err = create(1, "pool", nil, true)
	lives("pinned to dc1", a, err, 1)

	// A pool configured in dc2 only, with no runner: the Rivet engine's rule sends it there.
	w.configure(2, "only2")
	a, err = create(1, "only2", nil, false)
	lives("configured in dc2 only", a, err, 2)

	// Configured nowhere: this datacenter's error.
	if _, err := create(1, "nowhere", nil, false); !rerr.Is(err, rerr.CodeActorNoRunnerConfigConfigured) {
		t.Errorf("a pool configured nowhere: %v, want actor.no_runner_config_configured", err)
	}
}
