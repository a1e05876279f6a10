package actor

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// transitions names each lifecycle change once, and nothing for a save that changes
// neither phase, generation nor error.
func TestHistoryTransitions(t *testing.T) {
	st := func(p keys.ActorPhase, gen uint32, errJSON string) keys.ActorState {
		s := keys.ActorState{Phase: p, Generation: gen}
		if errJSON != "" {
			s.Error = json.RawMessage(errJSON)
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		old, new keys.ActorState
		want     []string
	}{
		{"created pending", keys.ActorState{}, st(keys.PhasePending, 0, ""), []string{"created"}},
		{"created and placed", keys.ActorState{}, st(keys.PhaseStarting, 0, ""), []string{"created", "placed"}},
		{"placed", st(keys.PhasePending, 0, ""), st(keys.PhaseStarting, 0, ""), []string{"placed"}},
		{"running", st(keys.PhaseStarting, 0, ""), st(keys.PhaseRunning, 0, ""), []string{"running"}},
		{"same phase", st(keys.PhaseRunning, 0, ""), st(keys.PhaseRunning, 0, ""), nil},
		{"stopping", st(keys.PhaseRunning, 0, ""), st(keys.PhaseStopping, 0, ""), []string{"stopping"}},
		{"sleeping", st(keys.PhaseStopping, 0, ""), st(keys.PhaseSleeping, 0, ""), []string{"sleeping"}},
		{"woken", st(keys.PhaseSleeping, 0, ""), st(keys.PhasePending, 0, ""), []string{"woken"}},
		{"crashed to sleep", st(keys.PhaseRunning, 1, ""), st(keys.PhaseSleeping, 1, `{"crashed":{}}`), []string{"crashed"}},
		{"crashed to backoff", st(keys.PhaseRunning, 1, ""), st(keys.PhaseRescheduling, 1, `{"crashed":{}}`), []string{"crashed"}},
		{"rescheduled", st(keys.PhaseRunning, 1, `{"crashed":{}}`), st(keys.PhaseRescheduling, 1, `{"crashed":{}}`), []string{"rescheduled"}},
		{"placed again", st(keys.PhaseRescheduling, 1, ""), st(keys.PhaseStarting, 2, ""), []string{"placed"}},
		{"destroyed", st(keys.PhaseStopping, 2, ""), st(keys.PhaseDestroyed, 2, ""), []string{"destroyed"}},
	} {
		if got := transitions(tc.old, tc.new); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The history is a ring: after 70 transitions it holds the latest 64, oldest first.
func TestHistoryRing(t *testing.T) {
	db := opstest.Open(t)
	ctx := context.Background()
	aid := id.New(1)
	_, err := udb.Transact(ctx, db, func(tx udb.Transaction) (struct{}, error) {
		m := newMachine(ctx, tx, Config{}, 1000)
		a := &actor{id: aid}
		for i := range 70 {
			a.st.Phase = []keys.ActorPhase{keys.PhasePending, keys.PhaseStarting}[i%2]
			a.st.Generation = uint32(i)
			m.record(a)
			a.old = a.st
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) ([]keys.ActorHistoryEvent, error) { return History(ctx, r, aid) })
	if err != nil {
		t.Fatal(err)
	}
	// 70 events, seq 0 ("created") to 69: the ring keeps 6 to 69.
	if len(h) != keys.ActorHistoryLen || h[0].Seq != 70-keys.ActorHistoryLen || h[len(h)-1].Seq != 69 || h[len(h)-1].Generation != 69 {
		t.Fatalf("history: %d events, seq %d to %d", len(h), h[0].Seq, h[len(h)-1].Seq)
	}
}
