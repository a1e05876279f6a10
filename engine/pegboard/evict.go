package pegboard

import (
	"context"
	"sync"
	"time"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	openvoy "github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// Actor eviction from a stopping envoy (docs/design.md, "Lifecycle"): after the pool's
// actor_eviction_delay, each actor still on the envoy is told it is going away (it is
// placed on another envoy once stopped), one at a time, min(1/actor_eviction_rate,
// actor_eviction_period/n) apart; with the defaults (period 0) all at once. The envoy's
// socket closes when its last actor has left (actor.Effects.StoppedEnvoys).
//
// An eviction under way lives in this process only: if the engine restarts meanwhile,
// the envoy's actors stay until it disconnects (and their liveness checks find it lost).

// evictions runs the evictions of one Envoys, one at a time per envoy; its goroutines end
// with Run's context.
type evictions struct {
	mu     sync.Mutex
	ctx    context.Context // nil until Run; evictions asked for before wait for it
	queued []func(context.Context)
	active map[actor.Host]bool // envoys whose eviction is queued or under way
	wg     sync.WaitGroup
}

// start runs f, the eviction of envoy h, in its own goroutine under Run's context (or once
// Run starts), unless one of h is queued or under way already.
func (e *evictions) start(h actor.Host, f func(context.Context)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.active[h] {
		return
	}
	if e.active == nil {
		e.active = map[actor.Host]bool{}
	}
	e.active[h] = true
	g := func(ctx context.Context) {
		f(ctx)
		e.mu.Lock()
		delete(e.active, h)
		e.mu.Unlock()
	}
	if e.ctx == nil {
		e.queued = append(e.queued, g)
		return
	}
	if e.ctx.Err() != nil {
		return
	}
	ctx := e.ctx
	e.wg.Go(func() { g(ctx) })
}

// run starts the queued evictions and those asked for later, until ctx ends; then it
// waits for them.
func (e *evictions) run(ctx context.Context) {
	e.mu.Lock()
	e.ctx = ctx
	queued := e.queued
	e.queued = nil
	for _, f := range queued {
		e.wg.Go(func() { f(ctx) })
	}
	e.mu.Unlock()
	<-ctx.Done()
	e.wg.Wait()
}

// evictionInterval is the pause between two evictions of n actors: min(1/rate,
// period/n), zero when the period is (send all at once).
func evictionInterval(n int, c keys.RunnerConfigCommon) time.Duration {
	if n == 0 || c.ActorEvictionPeriod == 0 {
		return 0
	}
	d := time.Duration(c.ActorEvictionPeriod) * time.Second / time.Duration(n)
	if c.ActorEvictionRate > 0 {
		d = min(d, time.Duration(float64(time.Second)/float64(c.ActorEvictionRate)))
	}
	return d
}

// evict moves the actors of stopping envoy h away, paced by c.
func (p *Envoys) evict(ctx context.Context, h actor.Host, c keys.RunnerConfigCommon) {
	if !sleepCtx(ctx, time.Duration(c.ActorEvictionDelay)*time.Second) {
		return
	}
	res, err := p.o.DB.ReadTransact(ctx, func(r udb.ReadTransaction) (any, error) {
		return openvoy.Actors(ctx, r, h.Namespace, h.EnvoyKey, 0)
	})
	if err != nil {
		p.warn(ctx, "envoy eviction", err)
		return
	}
	aids := res.([]id.ID)
	gap := evictionInterval(len(aids), c)
	p.o.Log.Info("envoy evicting actors", "namespace_id", h.Namespace.String(), "envoy_key", h.EnvoyKey, "actors", len(aids), "interval", gap)
	for i, aid := range aids {
		if i > 0 && !sleepCtx(ctx, gap) {
			return
		}
		cfg := p.o.Actors.Config()
		if _, err := Transact(ctx, p.o.Actors, func(tx udb.Transaction) (struct{}, actor.Effects, error) {
			eff, err := actor.GoingAway(ctx, tx, h, []id.ID{aid}, now(), cfg)
			return struct{}{}, eff, err
		}); err != nil {
			p.warn(ctx, "envoy eviction of "+aid.String(), err)
		}
	}
}

func (p *Envoys) warn(ctx context.Context, what string, err error) {
	if ctx.Err() == nil {
		p.o.Log.Warn(what+" failed", "error", err)
	}
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
