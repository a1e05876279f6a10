package serverless

import (
	"context"
	"time"

	"github.com/berthhq/berth/ops/lease"
	"github.com/berthhq/berth/pkg/udb"
)

// pollLeaseTTL is how long a node holds a pool's /metadata poll without renewing it, when
// it has seen failures failed polls in a row: the longest wait before its next poll should
// this one fail too, plus two intervals. A holder renews at each of its polls, so another
// node takes over about that long after the holder stops, and a backing-off holder keeps
// the lease through its backoff.
func pollLeaseTTL(interval time.Duration, failures int) time.Duration {
	return Backoff(interval, failures+1) + 2*interval
}

// pollLeaseName names the lease of pool k's periodic /metadata poll.
func pollLeaseName(k poolKey) string { return "serverless-metadata/" + k.ns.String() + "/" + k.name }

// takePoll reports whether this node makes pool k's periodic /metadata poll now: it takes
// or renews the pool's poll lease, so that one node of the datacenter at a time polls a
// pool (ops/lease). Without a NodeID (one node) every poll is this node's.
func (s *Service) takePoll(ctx context.Context, k poolKey, interval time.Duration, failures int) (bool, error) {
	if s.NodeID == "" {
		return true, nil
	}
	return udb.Transact(ctx, s.DB, func(tx udb.Transaction) (bool, error) {
		held, _, err := lease.Acquire(ctx, tx, lease.Input{Name: pollLeaseName(k), Holder: s.NodeID,
			NowMs: time.Now().UnixMilli(), TTLMs: pollLeaseTTL(interval, failures).Milliseconds()})
		return held, err
	})
}

// releasePolls gives up this node's poll leases of pools, so that another node polls them
// at once (the node is stopping).
func (s *Service) releasePolls(pools []poolKey) {
	if s.NodeID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, k := range pools {
		if _, err := udb.Transact(ctx, s.DB, func(tx udb.Transaction) (struct{}, error) {
			return struct{}{}, lease.Release(ctx, tx, pollLeaseName(k), s.NodeID)
		}); err != nil {
			s.Log.Warn("serverless: releasing a poll lease failed", "pool", k.name, "error", err.Error())
			return
		}
	}
}
