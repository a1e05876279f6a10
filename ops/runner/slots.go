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
	// transaction, or nil. With it the runner's fields are not read (see takeFromEntry).
	From *Candidate
}

// TakeSlot takes one free slot of the runner for the actor: remaining slots go down by one,
// the allocation-index entry moves, and the runner's actor entry (RunnerActorKey) is
// written. It reports false, writing nothing, when the runner cannot take it (not in the
// index — draining, stopped, disconnected —, no free slot, or stale ping). Serializable
// reads of the runner with a read conflict on its index entry, so two placements racing
// for the last slot, or a placement racing a drain or ping, conflict.
func TakeSlot(ctx context.Context, tx udb.Transaction, in TakeSlotInput) (bool, error) {
	if c := in.From; c != nil && c.RunnerID == in.RunnerID && c.entryAgrees() {
		return takeFromEntry(ctx, tx, *c, in)
	}
	return takeFromFields(ctx, tx, in)
}

// takeFromFields is TakeSlot reading the runner's fields.
func takeFromFields(ctx context.Context, tx udb.Transaction, in TakeSlotInput) (bool, error) {
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

// entryCountedSlots is the most slots a runner may have for its index entry's value to hold
// its remaining count as stored. The value is rewritten only when the entry's key moves,
// that is when the remaining slots' share in thousandths changes (state.setRemaining): on
// every change of the count for a runner of at most 1,000 slots, not always for a larger
// one (rivetkit's runners have 100,000).
const entryCountedSlots = 1000

// entryAgrees reports whether c's index entry is one berth wrote for the runner: its value
// names the runner and its count falls in the key's share.
func (c Candidate) entryAgrees() bool {
	v := c.value
	return v.TotalSlots > 0 && v.WorkflowID == c.RunnerID &&
		keys.RemainingMillislots(v.RemainingSlots, v.TotalSlots) == c.entry.RemainingMillislots
}

// PrefetchCounts fetches together the stored remaining counts that TakeSlot will read for
// candidates whose index entry does not hold it (runners of more than entryCountedSlots):
// one round trip for a create's candidates, most of which the next creates of its batch
// share, rather than one for each runner chosen.
func PrefetchCounts(ctx context.Context, tx udb.Transaction, cands []Candidate) {
	var counts [][]byte
	for _, c := range cands {
		if c.value.TotalSlots > entryCountedSlots {
			counts = append(counts, keys.RunnerRemainingSlotsKey{RunnerID: c.RunnerID}.Pack())
		}
	}
	if len(counts) > 0 {
		tx.Snapshot().Prefetch(ctx, counts, nil)
	}
}

// takeFromEntry is TakeSlot for a runner chosen from its index entry c, which holds the
// ping in its key and the total slots in its value, and for a runner of at most
// entryCountedSlots the remaining count too; a larger runner's count is read (a point
// read, fetched ahead by PrefetchCounts). Every other change to the runner that bears on a
// placement (a ping, a drain, a stop, a new socket, and for a small runner a slot taken or
// given back) removes or moves that entry, so a read conflict on the entry stands for the
// serializable read of the runner's fields, and the take reads none of them: a batch of
// creates on a store whose reads are round trips takes its slots without one per create.
func takeFromEntry(ctx context.Context, tx udb.Transaction, c Candidate, in TakeSlotInput) (bool, error) {
	if c.LastPingTs < in.PingedSinceMs {
		return false, nil
	}
	remaining := c.value.RemainingSlots
	if c.value.TotalSlots > entryCountedSlots {
		stored, found, err := keys.Get(ctx, tx, keys.RunnerRemainingSlotsKey{RunnerID: c.RunnerID})
		if err != nil {
			return false, corrupt.Mark("runner", err)
		}
		if !found || keys.RemainingMillislots(stored, c.value.TotalSlots) != c.entry.RemainingMillislots {
			return takeFromFields(ctx, tx, in) // the entry is not the runner's as stored
		}
		remaining = stored
	}
	if remaining == 0 {
		return false, nil
	}
	old := c.entry.Pack()
	if err := udb.AddReadConflictKey(tx, old); err != nil {
		return false, err
	}
	n := remaining - 1
	moved, v := c.entry, c.value
	moved.RemainingMillislots, v.RemainingSlots = keys.RemainingMillislots(n, v.TotalSlots), n
	if moved != c.entry { // as state.setRemaining: the entry moves when its share does
		tx.Clear(old)
		keys.Set(tx, moved, v) // a full runner keeps its entry, last in the index
	}
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
