package runnerconfig

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// RunnerPoolDemand is what a serverless runner pool's scaler reads (docs/serverless.md § 5.1).
type RunnerPoolDemand struct {
	// Config is the pool's serverless config; nil when the pool is gone, is not serverless,
	// or is an envoy pool (it has a protocol version): no runner is wanted then.
	Config *keys.ServerlessRunnerConfig
	// Slots is the desired slots: the pool's actors waiting in its queue, plus the slots
	// taken on its runners, counted up to limit.
	Slots uint64
	// Pending counts the actors waiting in the queue; FreeSlots the free slots of the
	// pool's runners (counted while Slots is under limit).
	Pending, FreeSlots uint64
}

// ReadRunnerPoolDemand reads pool (ns, name)'s demand, counting at most limit slots. When
// tx is not nil it also arms watches on the pool's config and demand counter
// (keys.ServerlessDemandKey), which fire at the next change of either. Snapshot reads.
func ReadRunnerPoolDemand(ctx context.Context, tx udb.Transaction, ns id.ID, name string, limit uint64) (RunnerPoolDemand, []udb.Watch, error) {
	snap := tx.Snapshot()
	cfgKey := keys.RunnerConfigDataKey{Namespace: ns, Name: name}
	watches := []udb.Watch{tx.Watch(cfgKey.Pack()), tx.Watch(keys.ServerlessDemandKey{Namespace: ns, Name: name}.Pack())}
	cfg, found, err := keys.Get(ctx, snap, cfgKey)
	if err != nil {
		return RunnerPoolDemand{}, watches, corrupt.Mark("runner_config", err)
	}
	if !found || cfg.Serverless == nil {
		return RunnerPoolDemand{}, watches, nil
	}
	if _, envoys, err := keys.Get(ctx, snap, keys.RunnerConfigProtocolVersionKey{Namespace: ns, Name: name}); err != nil || envoys {
		return RunnerPoolDemand{}, watches, corrupt.Mark("runner_config", err)
	}
	out := RunnerPoolDemand{Config: cfg.Serverless}
	begin, end := keys.PendingActorKeyRange(ns, name)
	pending, err := snap.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end),
		udb.RangeOptions{Limit: int(min(limit, 1<<20)), Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return RunnerPoolDemand{}, watches, err
	}
	out.Slots = uint64(len(pending))
	out.Pending = out.Slots
	begin, end = keys.RunnerAllocIdxKeyRange(ns, name)
	it := snap.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Mode: udb.StreamingModeIterator})
	for out.Slots < limit && it.Next(ctx) {
		v, err := keys.RunnerAllocIdxKey{}.Decode(it.KeyValue().Value)
		if err != nil {
			return RunnerPoolDemand{}, watches, corrupt.Mark("runner", err)
		}
		if v.TotalSlots > v.RemainingSlots {
			out.Slots += uint64(v.TotalSlots - v.RemainingSlots)
		}
		out.FreeSlots += uint64(min(v.RemainingSlots, v.TotalSlots))
	}
	return out, watches, it.Err()
}
