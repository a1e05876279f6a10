package pegboard

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/berthhq/berth/engine/metrics"
	"github.com/berthhq/berth/ops/actor"
	oprunner "github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// RunnersOptions configures Runners. DB and Actors are required.
type RunnersOptions struct {
	DB udb.Database
	// Hosts closes the sockets of runners that stopped.
	Hosts   Hosts
	Log     *slog.Logger
	Metrics *metrics.Metrics
	// Actors is the actor lifecycle: a drain sends the runner's actors away, a stop loses
	// those left.
	Actors *Actors
	// LostThreshold: a runner not pinged for this long is lost; a draining
	// runner stops after this long even if actors remain.
	LostThreshold time.Duration
	// ScanInterval is how often the loop looks for due runners; zero means
	// LostThreshold/15, within [50 ms, 1 s].
	ScanInterval time.Duration
}

// scanBatch bounds the runners one scan handles per index; the loop scans
// again at once while a scan comes back full.
const scanBatch = 256

// Runners drives the runner lifecycle.
type Runners struct {
	o    RunnersOptions
	loop scanLoop
}

// NewRunners returns the runner lifecycle; Run starts its loop.
func NewRunners(o RunnersOptions) *Runners {
	if o.DB == nil || o.Actors == nil {
		panic("pegboard: RunnersOptions.DB and Actors are required")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	return &Runners{o: o, loop: newScanLoop(o.LostThreshold, o.ScanInterval)}
}

// Actors is the actor lifecycle the runners' actors go through.
func (p *Runners) Actors() *Actors { return p.o.Actors }

// Drain drains runner rid: every actor on it is told to stop (and is placed elsewhere
// once stopped), and the runner stops as soon as none is left — at once if it has none;
// its socket is then closed with 1000 ws.eviction. connID, when not zero, fences the
// drain to that socket (the runner's own ToServerStopping). Draining a runner that is
// already draining or stopped changes nothing. Unknown runners are runner.not_found.
func (p *Runners) Drain(ctx context.Context, rid, connID id.ID) error {
	now := time.Now().UnixMilli()
	cfg := p.o.Actors.Config()
	t, err := Transact(ctx, p.o.Actors, func(tx udb.Transaction) (transition, actor.Effects, error) {
		d, err := oprunner.Drain(ctx, tx, oprunner.DrainInput{RunnerID: rid, ConnID: connID, NowMs: now})
		if err != nil || !d.Drained {
			return transition{}, actor.Effects{}, err
		}
		on, err := oprunner.ActorsOn(ctx, tx, rid)
		if err != nil {
			return transition{}, actor.Effects{}, err
		}
		eff, err := actor.GoingAway(ctx, tx, actor.RunnerHost(rid), on, now, cfg)
		if err != nil {
			return transition{}, actor.Effects{}, err
		}
		f, err := oprunner.FinishDrain(ctx, tx, oprunner.FinishDrainInput{RunnerID: rid, NowMs: now})
		return transition{drained: d.Drained, finish: f}, eff, err
	})
	if err != nil {
		return err
	}
	if t.drained {
		p.o.Metrics.RunnerTransitions.WithLabelValues("drained").Inc()
		p.o.Log.Info("runner draining", "runner_id", rid.String(), "by_runner", !connID.IsZero())
	}
	if t.finish.Stopped {
		p.stopped(rid, "drained", t.finish.Lost)
	}
	return nil
}

type transition struct {
	drained bool
	finish  oprunner.FinishDrainOutput
}

// Registered runs what follows a runner's registration: the pool's config
// is created if it has none, and when it asks for drain_on_version_upgrade,
// every connected runner of the pool with an older version is drained. It
// reports whether the pool's config is serverless (its runners are told the
// serverless drain grace period at init).
func (p *Runners) Registered(ctx context.Context, in oprunner.RegisterInput) (serverless bool, err error) {
	type ensured struct {
		serverless bool
		older      []id.ID
	}
	res, err := udb.Transact(ctx, p.o.DB, func(tx udb.Transaction) (ensured, error) {
		cfg, err := runnerconfig.Ensure(ctx, tx, runnerconfig.EnsureInput{Namespace: in.Namespace, Name: in.Name})
		if err != nil || !cfg.Common().DrainOnVersionUpgrade {
			return ensured{serverless: cfg.Serverless != nil}, err
		}
		older, err := oprunner.ListOlderVersions(ctx, tx, in.Namespace, in.Name, in.Version)
		return ensured{serverless: cfg.Serverless != nil, older: older}, err
	})
	if err != nil {
		return false, err
	}
	return res.serverless, p.drainAll(ctx, res.older, in.Name, in.Version)
}

// DrainOlder drains every connected runner of pool (ns, name) whose version is below
// version: a serverless pool's /metadata announced a newer runner version.
func (p *Runners) DrainOlder(ctx context.Context, ns id.ID, name string, version uint32) error {
	res, err := udb.ReadTransact(ctx, p.o.DB, func(r udb.ReadTransaction) ([]id.ID, error) {
		return oprunner.ListOlderVersions(ctx, r, ns, name, version)
	})
	if err != nil {
		return err
	}
	return p.drainAll(ctx, res, name, version)
}

// drainAll drains runners rids of pool name, older than version.
func (p *Runners) drainAll(ctx context.Context, rids []id.ID, name string, version uint32) error {
	var errs []error
	for _, rid := range rids {
		p.o.Log.Info("draining an older runner version", "runner_id", rid.String(), "name", name, "new_version", version)
		if err := p.Drain(ctx, rid, id.ID{}); err != nil && !rerr.Is(err, rerr.CodeRunnerNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Run scans for lost and drain-timed-out runners until ctx ends.
func (p *Runners) Run(ctx context.Context) { p.loop.run(ctx, p.scan) }

// Kick makes the loop scan now.
func (p *Runners) Kick() { p.loop.kickNow() }

// scan handles one batch of each index; it reports whether to scan again
// at once.
func (p *Runners) scan(ctx context.Context) (more bool) {
	before := p.loop.cutoff(time.Now())
	lost, err := p.list(ctx, func(r udb.ReadTransaction) ([]id.ID, error) {
		return oprunner.ListUnpingedSince(ctx, r, before, scanBatch)
	})
	ok := true
	for _, rid := range lost {
		ok = p.expire(ctx, rid, before) && ok
	}
	draining, err2 := p.list(ctx, func(r udb.ReadTransaction) ([]id.ID, error) {
		return oprunner.ListDrainingSince(ctx, r, before, scanBatch)
	})
	for _, rid := range draining {
		ok = p.forceStop(ctx, rid) && ok
	}
	if err := errors.Join(err, err2); err != nil && ctx.Err() == nil {
		p.o.Log.Warn("runner scan failed", "error", err)
	}
	// Scan again at once only after a full batch that went through: a
	// failing store waits for the next tick.
	return ok && (len(lost) == scanBatch || len(draining) == scanBatch)
}

func (p *Runners) list(ctx context.Context, f func(udb.ReadTransaction) ([]id.ID, error)) ([]id.ID, error) {
	return udb.ReadTransact(ctx, p.o.DB, f)
}

// expire declares rid lost if it still has not pinged since before; its actors are lost
// with it. False if the store failed.
func (p *Runners) expire(ctx context.Context, rid id.ID, before int64) bool {
	now, cfg := time.Now().UnixMilli(), p.o.Actors.Config()
	out, err := Transact(ctx, p.o.Actors, func(tx udb.Transaction) (oprunner.ExpireOutput, actor.Effects, error) {
		out, err := oprunner.Expire(ctx, tx, oprunner.ExpireInput{RunnerID: rid, NowMs: now, PingBeforeMs: before})
		if err != nil || !out.Expired {
			return out, actor.Effects{}, err
		}
		eff, err := actor.Lost(ctx, tx, actor.RunnerHost(rid), out.Lost, actor.LostRunnerConnection, now, cfg)
		return out, eff, err
	})
	if err != nil {
		return p.warn(ctx, "expire", rid, err)
	}
	if out.Expired {
		p.stopped(rid, "expired", out.Lost)
	}
	return true
}

// forceStop stops rid, which drained for longer than the lost threshold; the actors still
// on it are lost. False if the store failed.
func (p *Runners) forceStop(ctx context.Context, rid id.ID) bool {
	now, cfg := time.Now().UnixMilli(), p.o.Actors.Config()
	out, err := Transact(ctx, p.o.Actors, func(tx udb.Transaction) (oprunner.FinishDrainOutput, actor.Effects, error) {
		out, err := oprunner.FinishDrain(ctx, tx, oprunner.FinishDrainInput{RunnerID: rid, NowMs: now, Force: true})
		if err != nil || !out.Stopped {
			return out, actor.Effects{}, err
		}
		eff, err := actor.Lost(ctx, tx, actor.RunnerHost(rid), out.Lost, actor.LostDrainingTimeout, now, cfg)
		return out, eff, err
	})
	if err != nil {
		return p.warn(ctx, "stop after drain timeout", rid, err)
	}
	if out.Stopped {
		p.stopped(rid, "drain_timed_out", out.Lost)
	}
	return true
}

// warn logs a failed transition; it reports whether the failure was benign
// (the runner is gone).
func (p *Runners) warn(ctx context.Context, what string, rid id.ID, err error) bool {
	if rerr.Is(err, rerr.CodeRunnerNotFound) {
		return true
	}
	if ctx.Err() == nil {
		p.o.Log.Warn("runner "+what+" failed", "runner_id", rid.String(), "error", err)
	}
	return false
}

// stopped reports a runner that just stopped and closes its socket, which
// must not reconnect.
func (p *Runners) stopped(rid id.ID, why string, lost []id.ID) {
	p.o.Metrics.RunnerTransitions.WithLabelValues(why).Inc()
	p.o.Log.Info("runner stopped", "runner_id", rid.String(), "reason", why, "actors_lost", len(lost))
	if p.o.Hosts != nil {
		p.o.Hosts.CloseSocket(actor.RunnerHost(rid), rerr.WSEviction())
	}
}
