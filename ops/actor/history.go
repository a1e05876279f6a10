package actor

import (
	"bytes"
	"cmp"
	"context"
	"slices"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// record appends to a's history the transitions from a.old to a.st (nothing when neither
// its phase, its generation nor its error changed), in the transaction that makes them.
func (m *machine) record(a *actor) {
	for _, kind := range transitions(a.old, a.st) {
		ev := keys.ActorHistoryEvent{Seq: a.st.HistorySeq, Ts: m.now, Kind: kind, Generation: a.st.Generation,
			RunnerID: a.st.RunnerID, EnvoyKey: a.st.EnvoyKey, StopReason: a.st.StopReason}
		if kind == "crashed" || kind == "destroyed" || kind == "sleeping" {
			ev.Error = a.st.Error
		}
		keys.Set(m.tx, keys.ActorHistoryKey{ActorID: a.id, Slot: int64(a.st.HistorySeq % keys.ActorHistoryLen)}, ev)
		a.st.HistorySeq++
		switch kind {
		case "created":
			m.eff.Created++
		case "woken":
			m.eff.Woken++
		}
	}
}

// transitions names what changed from old to st: "created" for a new actor, then the
// kind of its new phase (a sleeping actor that goes pending is "woken", a new error that
// comes with sleeping or rescheduling is "crashed", a new placement is "placed").
func transitions(old, st keys.ActorState) []string {
	var out []string
	if old.Phase == "" {
		out = append(out, "created")
		if st.Phase == keys.PhasePending {
			return out
		}
	}
	newError := len(st.Error) > 0 && !bytes.Equal(old.Error, st.Error)
	switch {
	case st.Phase == old.Phase && st.Generation == old.Generation && !newError:
	case newError && (st.Phase == keys.PhaseSleeping || st.Phase == keys.PhaseRescheduling):
		out = append(out, "crashed")
	case st.Phase == keys.PhaseStarting:
		out = append(out, "placed")
	case st.Phase == keys.PhasePending && old.Phase == keys.PhaseSleeping:
		out = append(out, "woken")
	case st.Phase == keys.PhaseRescheduling:
		out = append(out, "rescheduled")
	case st.Phase != old.Phase:
		out = append(out, string(st.Phase))
	}
	return out
}

// History reads actor aid's recorded transitions at snapshot isolation, oldest first (at
// most keys.ActorHistoryLen).
func History(ctx context.Context, r udb.ReadTransaction, aid id.ID) ([]keys.ActorHistoryEvent, error) {
	begin, end := keys.ActorHistoryRange(aid)
	kvs, err := r.Snapshot().GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Limit: keys.ActorHistoryLen}).All(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]keys.ActorHistoryEvent, 0, len(kvs))
	for _, kv := range kvs {
		ev, err := keys.ActorHistoryKey{}.Decode(kv.Value)
		if err != nil {
			return nil, corrupt.Mark("actor", err)
		}
		out = append(out, ev)
	}
	slices.SortFunc(out, func(a, b keys.ActorHistoryEvent) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}
