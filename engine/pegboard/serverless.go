package pegboard

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// ServerlessStarter asks a serverless pool's endpoint to run an actor (engine/serverless).
type ServerlessStarter interface {
	// Start makes the pool's POST {url}/start for cmd, a start for a placeholder host
	// (actor.ServerlessHost), and blocks until the request ends or ctx does; it calls
	// drain when the request's lifespan is nearly over. A non-nil error is a request that
	// failed (docs/serverless.md § 4.6); one with a PoolError() json.RawMessage method
	// names the pool's runner_pool_error.
	Start(ctx context.Context, cmd actor.Command, drain func()) error
}

// serverlessStarts are the /start requests this node has open, by actor generation.
type serverlessStarts struct {
	mu   sync.Mutex
	open map[actor.Checkpoint]context.CancelFunc // Index 0
}

// startServerless runs cmd's /start request in the background: a request that fails puts
// the actor to sleep if no envoy took it meanwhile (ops/actor.ServerlessFailed); a stop
// for the placeholder (the actor was destroyed, or its start timed out) ends the request.
func (p *Actors) startServerless(cmd actor.Command) {
	key := actor.Checkpoint{ActorID: cmd.Checkpoint.ActorID, Generation: cmd.Checkpoint.Generation}
	if cmd.Start == nil {
		p.sl.mu.Lock()
		cancel := p.sl.open[key]
		p.sl.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		return
	}
	if p.o.Serverless == nil {
		p.o.Log.Error("an actor of a serverless pool and no serverless starter", "actor_id", key.ActorID.String())
		return
	}
	ctx, cancel := context.WithCancel(p.life)
	p.sl.mu.Lock()
	if p.sl.open == nil {
		p.sl.open = map[actor.Checkpoint]context.CancelFunc{}
	}
	p.sl.open[key] = cancel
	p.sl.mu.Unlock()
	p.bg.Go(func() {
		defer func() {
			cancel()
			p.sl.mu.Lock()
			delete(p.sl.open, key)
			p.sl.mu.Unlock()
		}()
		err := p.o.Serverless.Start(ctx, cmd, func() { p.drainServerless(key) })
		if err == nil || p.life.Err() != nil {
			return
		}
		poolErr := json.RawMessage(`"internal_error"`)
		var pe interface{ PoolError() json.RawMessage }
		if errors.As(err, &pe) {
			poolErr = pe.PoolError()
		}
		p.o.Log.Warn("serverless start failed", "actor_id", key.ActorID.String(), "generation", key.Generation,
			"runner_pool_error", string(poolErr), "error", err)
		if _, err := Transact(p.life, p, func(tx udb.Transaction) (struct{}, actor.Effects, error) {
			eff, err := actor.ServerlessFailed(p.life, tx, key.ActorID, key.Generation, poolErr, now(), p.o.Config)
			return struct{}{}, eff, err
		}); err != nil {
			p.warn(p.life, "serverless start failure of "+key.ActorID.String(), err)
		}
	})
}

// drainServerless moves the actor generation key away from the envoy its /start request
// started it on, when that request's lifespan is nearly over: it is stopped there (going
// away) and placed again, through a new /start (docs/serverless.md § 4.4).
func (p *Actors) drainServerless(key actor.Checkpoint) {
	if _, err := Transact(p.life, p, func(tx udb.Transaction) (struct{}, actor.Effects, error) {
		st, found, err := keys.Get(p.life, tx, keys.ActorStateKey{ActorID: key.ActorID})
		h, placed := actor.HostOf(st)
		if err != nil || !found || !placed || st.Generation != key.Generation || h.IsServerless() {
			return struct{}{}, actor.Effects{}, err
		}
		eff, err := actor.GoingAway(p.life, tx, h, []id.ID{key.ActorID}, now(), p.o.Config)
		return struct{}{}, eff, err
	}); err != nil {
		p.warn(p.life, "serverless drain of "+key.ActorID.String(), err)
	}
}
