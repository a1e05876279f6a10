package actor

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Crash policies: what an actor that crashes (stops with an error, or loses its runner)
// does next.
const (
	CrashRestart = "restart" // placed again, with a backoff when it keeps crashing
	CrashSleep   = "sleep"   // sleeps until woken
	CrashDestroy = "destroy" // destroyed
)

// CrashPolicies lists the valid policies.
var CrashPolicies = []string{CrashRestart, CrashSleep, CrashDestroy}

// Actor is the public actor object, with Rivet's JSON field names (docs/api.md, "Actor").
type Actor struct {
	ActorID             id.ID           `json:"actor_id"`
	Name                string          `json:"name"`
	Key                 *string         `json:"key"`
	NamespaceID         id.ID           `json:"namespace_id"`
	Datacenter          string          `json:"datacenter"`
	RunnerNameSelector  string          `json:"runner_name_selector"`
	CrashPolicy         string          `json:"crash_policy"`
	CreateTs            int64           `json:"create_ts"`
	StartTs             *int64          `json:"start_ts"`
	PendingAllocationTs *int64          `json:"pending_allocation_ts"`
	ConnectableTs       *int64          `json:"connectable_ts"`
	SleepTs             *int64          `json:"sleep_ts"`
	RescheduleTs        *int64          `json:"reschedule_ts"`
	DestroyTs           *int64          `json:"destroy_ts"`
	Error               json.RawMessage `json:"error,omitempty"`
}

// View is the public object of an actor with state st in datacenter dc.
func View(aid id.ID, st keys.ActorState, dc string) Actor {
	return Actor{
		ActorID: aid, Name: st.Name, Key: st.Key, NamespaceID: st.Namespace, Datacenter: dc,
		RunnerNameSelector: st.Selector, CrashPolicy: st.CrashPolicy, CreateTs: st.CreateTs,
		StartTs: st.StartTs, PendingAllocationTs: st.PendingTs, ConnectableTs: st.ConnectableTs,
		SleepTs: st.SleepTs, RescheduleTs: st.RescheduleTs, DestroyTs: st.DestroyTs, Error: st.Error,
	}
}

// GetInput names actors to read.
type GetInput struct {
	ActorIDs   []id.ID
	Datacenter string
}

// Get returns the actors that exist among in.ActorIDs, in the order given (duplicates
// once). Snapshot reads.
func Get(ctx context.Context, r udb.ReadTransaction, in GetInput) ([]Actor, error) {
	snap := r.Snapshot()
	prefetchStates(ctx, snap, in.ActorIDs)
	out := make([]Actor, 0, len(in.ActorIDs))
	var seen []id.ID
	for _, aid := range in.ActorIDs {
		if slices.Contains(seen, aid) {
			continue
		}
		seen = append(seen, aid)
		st, found, err := keys.Get(ctx, snap, keys.ActorStateKey{ActorID: aid})
		if err != nil {
			return nil, corrupt.Mark("actor", err)
		}
		if found {
			out = append(out, View(aid, st, in.Datacenter))
		}
	}
	return out, withPoolErrors(ctx, r, out)
}

// prefetchStates fetches the lifecycle records of actors ids together (udb Prefetch: one
// round trip on PostgreSQL, where a page of 100 actors read one by one took 100).
func prefetchStates(ctx context.Context, r udb.ReadTransaction, ids []id.ID) {
	if len(ids) < 2 {
		return // a single read is one round trip either way
	}
	stateKeys := make([][]byte, len(ids))
	for i, aid := range ids {
		stateKeys[i] = keys.ActorStateKey{ActorID: aid}.Pack()
	}
	r.Prefetch(ctx, stateKeys, nil)
}

// GetOne returns one actor, or actor.not_found.
func GetOne(ctx context.Context, r udb.ReadTransaction, aid id.ID, dc string) (Actor, error) {
	out, err := Get(ctx, r, GetInput{ActorIDs: []id.ID{aid}, Datacenter: dc})
	if err != nil {
		return Actor{}, err
	}
	if len(out) == 0 {
		return Actor{}, rerr.ActorNotFound(aid.String())
	}
	return out[0], nil
}

// state reads actor aid's lifecycle record, snapshot; found is false when it does not exist.
func state(ctx context.Context, r udb.ReadTransaction, aid id.ID) (keys.ActorState, bool, error) {
	st, found, err := keys.Get(ctx, r.Snapshot(), keys.ActorStateKey{ActorID: aid})
	return st, found, corrupt.Mark("actor", err)
}
