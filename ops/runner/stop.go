package runner

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// StopInput marks a runner stopped.
type StopInput struct {
	RunnerID id.ID
	NowMs    int64
}

// StopOutput reports whether this call stopped the runner.
type StopOutput struct {
	// Stopped is false when the runner was already stopped; nothing was
	// written then.
	Stopped bool
	// Lost are the actors that were still on the runner: the caller
	// reschedules them by their crash policy, in the same transaction.
	Lost []id.ID
}

// Stop marks the runner stopped (stop_ts): it leaves the active indexes
// (it stays in the all indexes, listed with include_stopped), the
// allocation index, and releases its runner key. A runner that did not
// drain first is stopped all the same.
//
// Serializable reads, so a concurrent ping or registration conflicts.
func Stop(ctx context.Context, tx udb.Transaction, in StopInput) (StopOutput, error) {
	s, found, err := readState(ctx, tx, in.RunnerID)
	switch {
	case err != nil:
		return StopOutput{}, err
	case !found:
		return StopOutput{}, rerr.RunnerNotFound(in.RunnerID.String())
	case s.stopped:
		return StopOutput{}, nil
	}
	lost, err := s.stop(ctx, tx, in.NowMs)
	if err != nil {
		return StopOutput{}, err
	}
	return StopOutput{Stopped: true, Lost: lost}, nil
}

// stop writes stop_ts and takes the runner out of every index but the all
// indexes (the timer indexes too), and off its actors, which it returns.
// s must not be stopped yet.
func (s state) stop(ctx context.Context, tx udb.Transaction, nowMs int64) (lost []id.ID, err error) {
	if err := s.unindex(tx); err != nil {
		return nil, err
	}
	if err := s.releaseKey(ctx, tx); err != nil {
		return nil, err
	}
	if lost, err = actorsOn(ctx, tx, s.id, 0); err != nil {
		return nil, err
	}
	tx.ClearRange(keys.RunnerActorKeyRange(s.id))
	keys.Clear(tx, keys.ActiveRunnerKey{Namespace: s.namespace, CreateTs: s.createTs, RunnerID: s.id})
	keys.Clear(tx, keys.ActiveRunnerByNameKey{Namespace: s.namespace, Name: s.name, CreateTs: s.createTs, RunnerID: s.id})
	keys.Clear(tx, keys.RunnerPingIdxKey{LastPingTs: s.lastPingTs, RunnerID: s.id})
	if s.draining {
		keys.Clear(tx, keys.RunnerDrainIdxKey{DrainTs: s.drainTs, RunnerID: s.id})
	}
	keys.Set(tx, keys.RunnerStopTsKey{RunnerID: s.id}, nowMs)
	return lost, nil
}
