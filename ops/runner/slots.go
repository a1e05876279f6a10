package runner

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// Candidate is a runner that can take an actor, as the allocation index shows it.
type Candidate struct {
	RunnerID            id.ID
	Version             uint32
	RemainingMillislots uint32
	LastPingTs          int64
	ProtocolVersion     uint16

	entry keys.RunnerAllocIdxKey // the index entry it was read from
	value keys.RunnerAllocIdxValue
}

// ListCandidates returns up to limit runners of pool (namespace, name) that can take an
// actor: of the highest version in the pool, with a free slot, pinged at or after
// pingedSinceMs (the eligibility threshold), in allocation-index order (most free slots
// first). A snapshot read: TakeSlot checks the chosen runner again, serializably.
func ListCandidates(ctx context.Context, r udb.ReadTransaction, ns id.ID, name string, pingedSinceMs int64, limit int) ([]Candidate, error) {
	if limit <= 0 {
		return nil, nil
	}
	begin, end := keys.RunnerAllocIdxKeyRange(ns, name)
	snap := r.Snapshot()
	var out []Candidate
	var highest uint32
	// Pages of limit rows, doubling while stale runners are skipped: a create asks for a few
	// candidates, and a range read copies every row it fetches.
	for page, first := limit, true; ; page = min(2*page, maxCandidatePage) {
		rows, err := snap.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end),
			udb.RangeOptions{Limit: page, Mode: udb.StreamingModeWantAll}).All(ctx)
		if err != nil {
			return nil, err
		}
		for _, kv := range rows {
			k, err := keys.UnpackRunnerAllocIdxKey(kv.Key)
			if err != nil {
				return nil, corrupt.Mark("runner", err)
			}
			if first {
				highest, first = k.Version, false
			}
			if k.Version < highest || k.RemainingMillislots == 0 {
				return out, nil // older versions and full runners come after
			}
			if k.LastPingTs < pingedSinceMs {
				continue
			}
			v, err := keys.RunnerAllocIdxKey{}.Decode(kv.Value)
			if err != nil {
				return nil, corrupt.Mark("runner", err)
			}
			out = append(out, Candidate{RunnerID: k.RunnerID, Version: k.Version, RemainingMillislots: k.RemainingMillislots,
				LastPingTs: k.LastPingTs, ProtocolVersion: v.ProtocolVersion, entry: k, value: v})
			if len(out) == limit {
				return out, nil
			}
		}
		if len(rows) < page {
			return out, nil
		}
		begin = udb.KeyAfter(rows[len(rows)-1].Key)
	}
}

// maxCandidatePage bounds one page of ListCandidates' read.
const maxCandidatePage = 1024

// TakeSlotInput places an actor on a runner.
type TakeSlotInput struct {
	RunnerID   id.ID
	ActorID    id.ID
	Generation uint32
	// PingedSinceMs is the eligibility threshold: a runner pinged before it is refused.
	PingedSinceMs int64
	// From is the candidate the runner was chosen as, read by ListCandidates in the same
	// transaction, or nil. When its index entry holds every field the take needs, the
	// runner's fields are not read (see takeFromEntry).
	From *Candidate
}

// TakeSlot takes one free slot of the runner for the actor: remaining slots go down by one,
// the allocation-index entry moves, and the runner's actor entry (RunnerActorKey) is
// written. It reports false, writing nothing, when the runner cannot take it (not in the
// index — draining, stopped, disconnected —, no free slot, or stale ping). Serializable
// reads of the runner with a read conflict on its index entry, so two placements racing
// for the last slot, or a placement racing a drain or ping, conflict.
func TakeSlot(ctx context.Context, tx udb.Transaction, in TakeSlotInput) (bool, error) {
	if c := in.From; c != nil && c.RunnerID == in.RunnerID && c.entryIsWhole() {
		return takeFromEntry(tx, *c, in)
	}
	s, found, err := readState(ctx, tx, in.RunnerID)
	if err != nil || !found || !s.indexed() || s.remaining == 0 || s.lastPingTs < in.PingedSinceMs {
		return false, err
	}
	if err := s.setRemaining(tx, s.remaining-1); err != nil {
		return false, err
	}
	keys.Set(tx, keys.RunnerActorKey{RunnerID: s.id, ActorID: in.ActorID}, in.Generation)
	return true, nil
}

// entryIsWhole reports whether c's index entry holds the runner's slot counts as they are
// stored. The entry's value copies the remaining and total slots, but it is rewritten only
// when the entry's key moves, that is when the remaining slots' bucket of thousandths
// changes (runner.setRemaining): on every change of the remaining count for a runner of
// at most 1,000 slots, not always for a larger one. The value must also agree with the
// key it was read under.
func (c Candidate) entryIsWhole() bool {
	v := c.value
	return v.TotalSlots > 0 && v.TotalSlots <= 1000 && v.WorkflowID == c.RunnerID &&
		keys.RemainingMillislots(v.RemainingSlots, v.TotalSlots) == c.entry.RemainingMillislots
}

// takeFromEntry is TakeSlot for a runner whose index entry c holds all it needs: the ping
// in its key, the slot counts in its value. Every change to the runner that bears on a
// placement (a ping, a slot taken or given back, a drain, a stop, a new socket) removes or
// moves that entry, so a read conflict on the entry stands for the serializable read of
// the runner's fields, and the take waits for no read of its own: a batch of creates on a
// store whose reads are round trips takes its slots without one per create.
func takeFromEntry(tx udb.Transaction, c Candidate, in TakeSlotInput) (bool, error) {
	if c.value.RemainingSlots == 0 || c.LastPingTs < in.PingedSinceMs {
		return false, nil
	}
	old := c.entry.Pack()
	if err := udb.AddReadConflictKey(tx, old); err != nil {
		return false, err
	}
	n := c.value.RemainingSlots - 1
	moved, v := c.entry, c.value
	moved.RemainingMillislots, v.RemainingSlots = keys.RemainingMillislots(n, v.TotalSlots), n
	tx.Clear(old)
	keys.Set(tx, moved, v) // a full runner keeps its entry, last in the index
	keys.Set(tx, keys.RunnerRemainingSlotsKey{RunnerID: c.RunnerID}, n)
	keys.Set(tx, keys.RunnerActorKey{RunnerID: c.RunnerID, ActorID: in.ActorID}, in.Generation)
	return true, nil
}

// ReleaseSlot takes the actor off the runner: its RunnerActorKey entry and stored commands
// are cleared and, if it held a slot there, the slot is freed (the index entry moves). A
// runner that stopped meanwhile (its actors were cleared) or is unknown is left as it is.
func ReleaseSlot(ctx context.Context, tx udb.Transaction, rid, aid id.ID) error {
	tx.ClearRange(keys.RunnerActorCommandRange(rid, aid))
	k := keys.RunnerActorKey{RunnerID: rid, ActorID: aid}
	_, held, err := keys.Get(ctx, tx, k)
	if err != nil || !held {
		return corrupt.Mark("runner", err)
	}
	keys.Clear(tx, k)
	s, found, err := readState(ctx, tx, rid)
	if err != nil || !found || s.stopped {
		return err
	}
	return s.setRemaining(tx, min(s.remaining+1, s.total))
}
