package census

import (
	"context"
	"testing"
	"time"

	"github.com/berthhq/berth/engine/metrics"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded"
)

// seed stores a default namespace with actors in the given phases, as index entries and
// state records.
func seed(t *testing.T, db udb.Database, phases []keys.ActorPhase) {
	t.Helper()
	ctx := context.Background()
	ns := id.New(1)
	if _, err := udb.Transact(ctx, db, func(tx udb.Transaction) (namespace.EnsureDefaultOutput, error) {
		return namespace.EnsureDefault(ctx, tx, namespace.EnsureDefaultInput{NamespaceID: ns, NowMs: 1})
	}); err != nil {
		t.Fatal(err)
	}
	if err := udb.Update(ctx, db, func(tx udb.Transaction) error {
		for i, p := range phases {
			aid := id.New(1)
			keys.Set(tx, keys.ActiveActorKey{Namespace: ns, Name: "a", CreateTs: int64(i), ActorID: aid}, aid)
			keys.Set(tx, keys.ActorStateKey{ActorID: aid}, keys.ActorState{V: 1, Phase: p, Namespace: ns, Name: "a", CreateTs: int64(i)})
			if p == keys.PhasePending {
				keys.Set(tx, keys.PendingActorKey{Namespace: ns, Selector: "pool", Ts: int64(i), ActorID: aid}, 0)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestCensusCountsAndBound(t *testing.T) {
	db, err := udb.Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var phases []keys.ActorPhase
	for range 600 { // more than one page
		phases = append(phases, keys.PhaseRunning)
	}
	phases = append(phases, keys.PhasePending, keys.PhasePending, keys.PhaseSleeping)
	seed(t, db, phases)

	for _, tc := range []struct {
		name      string
		maxRows   int
		truncated bool
		running   int
	}{
		{"unbounded", 0, false, 600},
		{"bounded", 300, true, 500}, // stops after the first page of actors
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Options{DB: db, Metrics: metrics.New(), MaxRows: tc.maxRows, Interval: time.Hour})
			n, err := c.Count(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if n.Truncated != tc.truncated || n.Actors[actor.PhaseRunning] != tc.running {
				t.Fatalf("truncated %v, running %d; want %v, %d", n.Truncated, n.Actors[actor.PhaseRunning], tc.truncated, tc.running)
			}
			if !tc.truncated && (n.Actors[actor.PhasePending] != 2 || n.Actors[actor.PhaseSleeping] != 1 || n.Pending != 2) {
				t.Fatalf("counts %+v", n)
			}
			if err := c.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
