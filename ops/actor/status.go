package actor

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// Phase is where an actor is in its lifecycle (docs/design.md, "Lifecycle").
type Phase string

const (
	PhasePending      Phase = "pending"      // waiting for a host with room
	PhaseStarting     Phase = "starting"     // placed, its start sent, not yet running
	PhaseRunning      Phase = "running"      // running: requests reach it
	PhaseStopping     Phase = "stopping"     // told to stop, not yet stopped
	PhaseSleeping     Phase = "sleeping"     // stopped until woken
	PhaseRescheduling Phase = "rescheduling" // waiting out its crash backoff
	PhaseDestroyed    Phase = "destroyed"    // gone for good
)

// LivePhases are the phases of an actor that is not destroyed, in lifecycle order.
var LivePhases = []Phase{PhasePending, PhaseStarting, PhaseRunning, PhaseStopping, PhaseSleeping, PhaseRescheduling}

// Status is what other layers read of an actor's lifecycle: its phase, its generation and,
// when it is placed, its host.
type Status struct {
	Phase      Phase
	Generation uint32
	Host       Host
	Placed     bool
}

func statusOf(st keys.ActorState) Status {
	h, placed := HostOf(st)
	return Status{Phase: Phase(st.Phase), Generation: st.Generation, Host: h, Placed: placed}
}

// Lookup reads actor aid's status at snapshot isolation (a reader must not make the
// lifecycle's transactions retry); found is false when the actor does not exist.
func Lookup(ctx context.Context, r udb.ReadTransaction, aid id.ID) (st Status, found bool, err error) {
	s, found, err := state(ctx, r, aid)
	if err != nil || !found {
		return Status{}, found, err
	}
	return statusOf(s), true, nil
}

// CountPhasesInput asks for the phases of a namespace's live actors, a page at a time.
type CountPhasesInput struct {
	Namespace id.ID
	// After is the Next of the previous page; nil starts at the first actor.
	After []byte
	Limit int
}

// CountPhasesOutput is one page of a count.
type CountPhasesOutput struct {
	Phases map[Phase]int
	// Rows is how many index rows the page read; Next is where the next page starts, nil
	// after the last.
	Rows int
	Next []byte
}

// CountPhases counts, at snapshot isolation, the phases of up to Limit of the namespace's
// live actors from After on.
func CountPhases(ctx context.Context, r udb.ReadTransaction, in CountPhasesInput) (CountPhasesOutput, error) {
	begin, end := keys.ActiveActorKeyNamespaceRange(in.Namespace)
	kvs, err := pageAfter(ctx, r, begin, end, in.After, in.Limit)
	if err != nil {
		return CountPhasesOutput{}, err
	}
	out := CountPhasesOutput{Phases: map[Phase]int{}, Rows: len(kvs)}
	ids := make([]id.ID, len(kvs))
	for i, kv := range kvs {
		k, err := keys.UnpackActiveActorKey(kv.Key)
		if err != nil {
			return CountPhasesOutput{}, corrupt.Mark("actor", err)
		}
		ids[i] = k.ActorID
	}
	prefetchStates(ctx, r.Snapshot(), ids)
	for _, aid := range ids {
		st, found, err := state(ctx, r, aid)
		if err != nil {
			return CountPhasesOutput{}, err
		}
		if found && st.Phase != keys.PhaseDestroyed {
			out.Phases[Phase(st.Phase)]++
		}
	}
	if len(kvs) == in.Limit {
		out.Next = udb.KeyAfter(kvs[len(kvs)-1].Key)
	}
	return out, nil
}

// CountPendingInput asks for the number of a namespace's pending allocations, a page at a
// time (After and Limit as CountPhasesInput's).
type CountPendingInput struct {
	Namespace id.ID
	After     []byte
	Limit     int
}

// CountPending counts, at snapshot isolation, up to Limit of the namespace's pending
// allocations from After on; next is nil after the last page.
func CountPending(ctx context.Context, r udb.ReadTransaction, in CountPendingInput) (n int, next []byte, err error) {
	begin, end := keys.PendingActorKeyNamespaceRange(in.Namespace)
	kvs, err := pageAfter(ctx, r, begin, end, in.After, in.Limit)
	if err != nil {
		return 0, nil, err
	}
	if len(kvs) == in.Limit {
		next = udb.KeyAfter(kvs[len(kvs)-1].Key)
	}
	return len(kvs), next, nil
}

// pageAfter reads up to limit rows of [begin, end) from after on (nil: from begin), snapshot.
func pageAfter(ctx context.Context, r udb.ReadTransaction, begin, end, after []byte, limit int) ([]udb.KeyValue, error) {
	if after != nil {
		begin = after
	}
	return r.Snapshot().GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end),
		udb.RangeOptions{Limit: limit, Mode: udb.StreamingModeWantAll}).All(ctx)
}

// NamespaceOf returns the namespace of actor aid; found is false when the actor does not
// exist.
func NamespaceOf(ctx context.Context, r udb.ReadTransaction, aid id.ID) (ns id.ID, found bool, err error) {
	ns, found, err = keys.Get(ctx, r, keys.ActorNamespaceIDKey{ActorID: aid})
	return ns, found, corrupt.Mark("actor", err)
}
