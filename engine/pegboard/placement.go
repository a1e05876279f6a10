package pegboard

import (
	"context"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// Where a new actor lives when its request names no datacenter (docs/api.md, POST /actors):
// here when this datacenter's pool has a free host; else the first other datacenter, in
// topology order, whose pool has one; else here when the pool is configured here; else the
// first other datacenter where it is configured (the Rivet engine's own rule, which looks
// at configs only, nearest first); else here, which answers
// actor.no_runner_config_configured. A single datacenter creates here without asking.

// Capacity is what pool (ns, pool) offers a new actor in this datacenter.
func (p *Actors) Capacity(ctx context.Context, ns id.ID, pool string) (actor.Capacity, error) {
	return udb.Transact(ctx, p.o.DB, func(tx udb.Transaction) (actor.Capacity, error) {
		return actor.PoolCapacity(ctx, tx, p.o.Config, ns, pool, now())
	})
}

// elsewhere returns the other datacenter in's actor is to be created in, or "" for this one.
func (p *Actors) elsewhere(ctx context.Context, in actor.CreateInput) (string, error) {
	if p.keys == nil || in.Pinned {
		return "", nil
	}
	here, err := p.Capacity(ctx, in.Namespace, in.Selector)
	if err != nil || here.Free {
		return "", err
	}
	others := p.keys.svc.Capacities(ctx, in.Namespace, in.Selector)
	for _, o := range others {
		if o.Free {
			return o.Datacenter, nil
		}
	}
	if here.Configured {
		return "", nil
	}
	for _, o := range others {
		if o.Configured {
			return o.Datacenter, nil
		}
	}
	return "", nil
}

// createElsewhere creates (or gets) in's actor in another datacenter when elsewhere says so;
// moved is false when it is to be created here.
func (p *Actors) createElsewhere(ctx context.Context, in actor.CreateInput, getOrCreate bool) (a actor.Actor, created, moved bool, err error) {
	dc, err := p.elsewhere(ctx, in)
	if err != nil || dc == "" {
		return actor.Actor{}, false, false, err
	}
	a, created, err = p.keys.svc.CreateIn(ctx, dc, in, getOrCreate)
	return a, created, true, err
}
