package pegboard

import (
	"context"
	"errors"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	openvoy "github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// DrainPool drains the envoys of pool (ns, pool) whose version is below version, or all of
// them when version is 0 (its serverless config was deleted), as an envoy that announced
// it is stopping is drained (Stopping): each leaves the placement indexes, its actors are
// moved away, and its socket is closed once the last has left. It returns how many envoys
// it drained.
func (p *Envoys) DrainPool(ctx context.Context, ns id.ID, pool string, version uint32) (int, error) {
	envoys, err := udb.ReadTransact(ctx, p.o.DB, func(r udb.ReadTransaction) ([]string, error) {
		return openvoy.ListBelowVersion(ctx, r, ns, pool, version)
	})
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, key := range envoys {
		p.o.Log.Info("draining an envoy of a serverless pool", "namespace_id", ns.String(), "pool", pool, "envoy_key", key, "below_version", version)
		if err := p.Stopping(ctx, ns, key, id.ID{}); err != nil && !rerr.Is(err, rerr.CodeEnvoyNotFound) {
			errs = append(errs, err)
		}
	}
	return len(envoys), errors.Join(errs...)
}

// CloseServerlessPool closes the /start requests this node has open for actors of pool
// (ns, pool), whose serverless config was deleted: an actor still waiting on its
// placeholder sleeps at once (the next request or alarm places it again, on whatever the
// pool then is); one its envoy took is moved by that envoy's drain (Envoys.DrainPool). It
// returns how many requests it closed.
func (p *Actors) CloseServerlessPool(ctx context.Context, ns id.ID, pool string) (int, error) {
	p.sl.mu.Lock()
	open := make([]actor.Checkpoint, 0, len(p.sl.open))
	for k := range p.sl.open {
		open = append(open, k)
	}
	p.sl.mu.Unlock()
	var errs []error
	closed := 0
	for _, k := range open {
		st, err := udb.ReadTransact(ctx, p.o.DB, func(r udb.ReadTransaction) (keys.ActorState, error) {
			st, _, err := keys.Get(ctx, r.Snapshot(), keys.ActorStateKey{ActorID: k.ActorID})
			return st, err
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st.Namespace != ns || st.Selector != pool {
			continue
		}
		p.sl.mu.Lock()
		cancel := p.sl.open[k]
		p.sl.mu.Unlock()
		if cancel == nil {
			continue // it ended meanwhile
		}
		cancel()
		closed++
		if _, err := Transact(ctx, p, func(tx udb.Transaction) (struct{}, actor.Effects, error) {
			eff, err := actor.ServerlessFailed(ctx, tx, k.ActorID, k.Generation, nil, now(), p.o.Config)
			return struct{}{}, eff, err
		}); err != nil && !rerr.Is(err, rerr.CodeActorNotFound) {
			errs = append(errs, err)
		}
	}
	return closed, errors.Join(errs...)
}

// DrainEnvoys, DrainRunners and CloseStarts drain a serverless pool's hosts
// (engine/serverless.PoolHosts).
func (l *Lifecycle) DrainEnvoys(ctx context.Context, ns id.ID, pool string, version uint32) (int, error) {
	return l.Envoys.DrainPool(ctx, ns, pool, version)
}

func (l *Lifecycle) DrainRunners(ctx context.Context, ns id.ID, pool string, version uint32) error {
	return l.Runners.DrainOlder(ctx, ns, pool, version)
}

func (l *Lifecycle) CloseStarts(ctx context.Context, ns id.ID, pool string) (int, error) {
	return l.Actors.CloseServerlessPool(ctx, ns, pool)
}
