package runner

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// ListUnpingedSince returns up to limit runners, not stopped, whose last
// ping is older than beforeMs, oldest first: the candidates for Expire with
// PingBeforeMs = beforeMs. A snapshot read: Expire checks again.
func ListUnpingedSince(ctx context.Context, r udb.ReadTransaction, beforeMs int64, limit int) ([]id.ID, error) {
	begin, end := keys.RunnerPingIdxRange().BeforeTs(beforeMs)
	return scanTimer(ctx, r, begin, end, limit, func(b []byte) (id.ID, error) {
		k, err := keys.UnpackRunnerPingIdxKey(b)
		return k.RunnerID, err
	})
}

// ListDrainingSince returns up to limit runners, draining and not stopped,
// that began draining before beforeMs, oldest first: the candidates for
// FinishDrain with Force. A snapshot read: FinishDrain checks again.
func ListDrainingSince(ctx context.Context, r udb.ReadTransaction, beforeMs int64, limit int) ([]id.ID, error) {
	begin, end := keys.RunnerDrainIdxRange().BeforeTs(beforeMs)
	return scanTimer(ctx, r, begin, end, limit, func(b []byte) (id.ID, error) {
		k, err := keys.UnpackRunnerDrainIdxKey(b)
		return k.RunnerID, err
	})
}

func scanTimer(ctx context.Context, r udb.ReadTransaction, begin, end []byte, limit int, runnerID func([]byte) (id.ID, error)) ([]id.ID, error) {
	kvs, err := r.Snapshot().GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end),
		udb.RangeOptions{Limit: limit, Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]id.ID, 0, len(kvs))
	for _, kv := range kvs {
		rid, err := runnerID(kv.Key)
		if err != nil {
			return nil, corrupt.Mark("runner", err)
		}
		out = append(out, rid)
	}
	return out, nil
}

// FinishDrainInput asks to stop a draining runner.
type FinishDrainInput struct {
	RunnerID id.ID
	NowMs    int64
	// Force stops the runner even if actors remain on it (the drain took
	// longer than the lost threshold); they are returned as Lost.
	Force bool
}

// FinishDrainOutput reports what FinishDrain did.
type FinishDrainOutput struct {
	// Stopped is true when this call stopped the runner.
	Stopped bool
	// Lost are the actors still on the runner when it stopped (only with
	// Force): the caller reschedules them by their crash policy, in the same
	// transaction.
	Lost []id.ID
}

// FinishDrain stops a draining runner once no actor remains on it, or at
// once with Force; a runner that is not draining, or already stopped, is
// left as it is. This is the one place a drain ends, whichever way it began
// (the runner's ToServerStopping or an operator's drain).
//
// Serializable reads of the runner and of its actor range: an actor placed
// or stopped concurrently makes this transaction conflict and retry.
func FinishDrain(ctx context.Context, tx udb.Transaction, in FinishDrainInput) (FinishDrainOutput, error) {
	s, found, err := readState(ctx, tx, in.RunnerID)
	switch {
	case err != nil:
		return FinishDrainOutput{}, err
	case !found:
		return FinishDrainOutput{}, rerr.RunnerNotFound(in.RunnerID.String())
	case !s.draining || s.stopped:
		return FinishDrainOutput{}, nil
	}
	if !in.Force {
		actors, err := actorsOn(ctx, tx, s.id, 1)
		if err != nil || len(actors) > 0 {
			return FinishDrainOutput{}, err
		}
	}
	lost, err := s.stop(ctx, tx, in.NowMs)
	if err != nil {
		return FinishDrainOutput{}, err
	}
	return FinishDrainOutput{Stopped: true, Lost: lost}, nil
}

// actorsOn reads up to limit (0: all) actors placed on runner rid,
// serializably.
func actorsOn(ctx context.Context, tx udb.ReadTransaction, rid id.ID, limit int) ([]id.ID, error) {
	begin, end := keys.RunnerActorKeyRange(rid)
	kvs, err := tx.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end),
		udb.RangeOptions{Limit: limit, Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]id.ID, 0, len(kvs))
	for _, kv := range kvs {
		k, err := keys.UnpackRunnerActorKey(kv.Key)
		if err != nil {
			return nil, corrupt.Mark("runner", err)
		}
		out = append(out, k.ActorID)
	}
	return out, nil
}

// ActorsOn returns the actors placed on runner rid, serializably: a placement or a
// departure racing with the caller's transaction conflicts.
func ActorsOn(ctx context.Context, tx udb.ReadTransaction, rid id.ID) ([]id.ID, error) {
	return actorsOn(ctx, tx, rid, 0)
}
