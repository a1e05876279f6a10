package runner

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// ExpireInput declares a runner lost.
type ExpireInput struct {
	RunnerID id.ID
	NowMs    int64
	// PingBeforeMs, if not 0, expires the runner only if its last ping is
	// older than this (now minus the lost threshold): the check and the
	// expiry are then one transaction, so a ping that lands in between
	// makes the expiry retry and find the runner fresh.
	PingBeforeMs int64
}

// ExpireOutput reports whether this call expired the runner.
type ExpireOutput struct {
	// Expired is false when the runner was already expired or, with
	// PingBeforeMs, pinged recently; nothing was written then.
	Expired bool
	// Lost are the actors that were still on the runner: the caller
	// reschedules them by their crash policy, in the same transaction.
	Lost []id.ID
}

// Expire marks the runner expired (expired_ts) and stopped (stop_ts, if
// not yet), as Rivet's runner workflow does when it finds the runner lost:
// it leaves the active and allocation indexes and releases its runner key,
// so that the next registration with the same key gets a new runner id.
// Later pings from its socket are still recorded, outside the index.
//
// Serializable reads, so a concurrent ping or registration conflicts.
func Expire(ctx context.Context, tx udb.Transaction, in ExpireInput) (ExpireOutput, error) {
	s, found, err := readState(ctx, tx, in.RunnerID)
	switch {
	case err != nil:
		return ExpireOutput{}, err
	case !found:
		return ExpireOutput{}, rerr.RunnerNotFound(in.RunnerID.String())
	case s.expired:
		return ExpireOutput{}, nil
	case in.PingBeforeMs != 0 && s.lastPingTs >= in.PingBeforeMs:
		return ExpireOutput{}, nil
	}
	if s.stopped {
		// Already out of every index and key; only the mark is missing.
		keys.Set(tx, keys.RunnerExpiredTsKey{RunnerID: s.id}, in.NowMs)
		return ExpireOutput{Expired: true}, nil
	}
	lost, err := s.stop(ctx, tx, in.NowMs)
	if err != nil {
		return ExpireOutput{}, err
	}
	keys.Set(tx, keys.RunnerExpiredTsKey{RunnerID: s.id}, in.NowMs)
	return ExpireOutput{Expired: true, Lost: lost}, nil
}
