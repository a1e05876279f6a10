package actor

import (
	"context"
	"encoding/binary"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// PlacePendingInput moves a pool's pending queue.
type PlacePendingInput struct {
	Pool   Pool
	Limit  int // actors tried in this transaction
	NowMs  int64
	Config Config
}

// PlacePendingOutput reports a queue move.
type PlacePendingOutput struct {
	Effects Effects
	// More is true when the queue may hold actors that could now be placed: the limit was
	// reached with every actor placed.
	More bool
}

// PlacePending places the pool's waiting actors, oldest first, until one finds no free
// runner (the rest wait behind it, in creation order) or limit actors are placed.
func PlacePending(ctx context.Context, tx udb.Transaction, in PlacePendingInput) (PlacePendingOutput, error) {
	begin, end := keys.PendingActorKeyRange(in.Pool.Namespace, in.Pool.Selector)
	kvs, err := tx.Snapshot().GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end),
		udb.RangeOptions{Limit: in.Limit, Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return PlacePendingOutput{}, err
	}
	m := newMachine(ctx, tx, in.Config, in.NowMs)
	for _, kv := range kvs {
		k, err := keys.UnpackPendingActorKey(kv.Key)
		if err != nil {
			return PlacePendingOutput{}, corrupt.Mark("actor", err)
		}
		a, found, err := m.load(k.ActorID)
		if err != nil {
			return PlacePendingOutput{}, err
		}
		if !found || a.st.Phase != keys.PhasePending {
			// A stale entry (its actor moved on): drop it.
			tx.Clear(kv.Key)
			continue
		}
		if err := m.place(a, true, true); err != nil {
			return PlacePendingOutput{}, err
		}
		placed := a.st.Phase != keys.PhasePending
		m.save(a)
		if !placed {
			return PlacePendingOutput{Effects: *m.eff}, nil
		}
	}
	return PlacePendingOutput{Effects: *m.eff, More: len(kvs) == in.Limit}, nil
}

// DueTimers returns up to limit actors whose timer is due before beforeMs, earliest first.
// A snapshot read: Timer checks again.
func DueTimers(ctx context.Context, r udb.ReadTransaction, beforeMs int64, limit int) ([]id.ID, error) {
	begin, end := keys.ActorTimerRange().BeforeTs(beforeMs)
	kvs, err := r.Snapshot().GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end),
		udb.RangeOptions{Limit: limit, Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]id.ID, 0, len(kvs))
	for _, kv := range kvs {
		k, err := keys.UnpackActorTimerKey(kv.Key)
		if err != nil {
			return nil, corrupt.Mark("actor", err)
		}
		out = append(out, k.ActorID)
	}
	return out, nil
}

// Replay returns the commands to send again to a host that reconnected: the stored
// (unacknowledged) commands of its actors whose start is not confirmed yet (starting) and
// of those being stopped; a running actor's start is not sent again. In stored order.
func Replay(ctx context.Context, tx udb.ReadTransaction, h Host) ([]Command, error) {
	begin, end := h.commandRange()
	kvs, err := tx.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return nil, err
	}
	states := map[id.ID]*keys.ActorState{}
	var out []Command
	for _, kv := range kvs {
		aid, gen, idx, err := h.unpackCommandKey(kv.Key)
		if err != nil {
			return nil, err
		}
		st, ok := states[aid]
		if !ok {
			s, found, err := keys.Get(ctx, tx, keys.ActorStateKey{ActorID: aid})
			if err != nil {
				return nil, corrupt.Mark("actor", err)
			}
			if found && hostedOn(s, h) && s.Generation == gen {
				st = &s
			}
			states[aid] = st
		}
		if st == nil {
			continue // the actor moved on; the command is moot
		}
		c, err := decodeStored(ctx, tx, aid, *st, kv.Value)
		if err != nil {
			return nil, err
		}
		if c.Start != nil && st.Phase != keys.PhaseStarting {
			continue
		}
		c.Host, c.Checkpoint = h, Checkpoint{ActorID: aid, Generation: gen, Index: idx}
		out = append(out, c)
	}
	return out, nil
}

// decodeStored rebuilds a stored command (see encodeStored), without its host and checkpoint.
func decodeStored(ctx context.Context, r udb.ReadTransaction, aid id.ID, st keys.ActorState, b []byte) (Command, error) {
	switch {
	case len(b) == 1 && b[0] == 1:
		return Command{}, nil
	case len(b) == 2 && b[0] == 1:
		return Command{StopReason: StopReason(b[1])}, nil
	case len(b) == 9 && b[0] == 0:
		input, _, err := keys.GetChunked(ctx, r, keys.ActorInputKey{ActorID: aid})
		if err != nil {
			return Command{}, corrupt.Mark("actor", err)
		}
		return Command{Start: &Start{
			Name: st.Name, Key: st.Key, CreateTs: int64(binary.BigEndian.Uint64(b[1:])), Input: input,
			Hibernating: []HibernatingRequest{},
		}}, nil
	}
	return Command{}, corrupt.Mark("runner", errBadCommand)
}
