package runner

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// DrainInput asks a runner to drain.
type DrainInput struct {
	RunnerID id.ID
	// ConnID, if not zero, fences the drain to that socket (a runner's own
	// ToServerStopping); zero for a drain decided by the engine.
	ConnID id.ID
	NowMs  int64
}

// DrainOutput reports whether this call began the drain.
type DrainOutput struct {
	// Drained is false when the runner was already draining, stopped or
	// expired; nothing was written then.
	Drained bool
}

// Drain marks the runner draining (drain_ts): it leaves the allocation
// index at once and releases its runner key, as Rivet's ClearDb(Draining)
// does, so a process reconnecting with the same key becomes a new runner
// instead of inheriting a draining one. The runner stays in the active
// lists (with drain_ts) until it stops, and its pings are still recorded.
//
// Serializable reads, so a concurrent ping cannot put the index entry back.
// With ConnID set, a stale socket gets runner.stale_connection.
func Drain(ctx context.Context, tx udb.Transaction, in DrainInput) (DrainOutput, error) {
	s, found, err := readState(ctx, tx, in.RunnerID)
	switch {
	case err != nil:
		return DrainOutput{}, err
	case !found:
		return DrainOutput{}, rerr.RunnerNotFound(in.RunnerID.String())
	case !in.ConnID.IsZero() && s.connID != in.ConnID:
		return DrainOutput{}, rerr.RunnerStaleConnection(in.RunnerID.String())
	case !s.eligible():
		return DrainOutput{}, nil
	}
	if err := s.unindex(tx); err != nil {
		return DrainOutput{}, err
	}
	if err := s.releaseKey(ctx, tx); err != nil {
		return DrainOutput{}, err
	}
	keys.Set(tx, keys.RunnerDrainTsKey{RunnerID: s.id}, in.NowMs)
	keys.Set(tx, keys.RunnerDrainIdxKey{DrainTs: in.NowMs, RunnerID: s.id}, keys.Empty{})
	return DrainOutput{Drained: true}, nil
}
