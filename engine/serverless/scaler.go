package serverless

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/lease"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// Scaler timings.
const (
	// ScalerLeaseTTL is how long a node drives a runner pool's scaling without renewing
	// its lease; another node takes the pool over after it.
	ScalerLeaseTTL   = 10 * time.Second
	scalerLeaseRenew = 3 * time.Second
	// scalerScan is how often the pools are listed: a safety net, since a config write on
	// this node wakes the scaler (Wake) and each pool's loop watches its config.
	scalerScan   = 2 * time.Second
	scalerListed = 10_000
)

// Scaler keeps the GET {url}/start requests of the datacenter's serverless runner pools
// (rivetkit 2.2.1) open, as many as each pool's demand asks for (docs/serverless.md § 5):
// one loop per pool, driven by the pool's demand counter and config (store watches), on
// the node that holds the pool's lease (ops/lease). The runners these requests start
// connect to any node.
type Scaler struct {
	DB      udb.Database
	Starter *Starter
	// NodeID names this node in the pools' leases.
	NodeID string
	// Drain drains a runner (engine/pegboard.Runners.Drain with no connection id).
	Drain func(ctx context.Context, rid id.ID) error
	// MovePool, when set, asks the lifecycle to place the pool's queued actors
	// (engine/pegboard.Actors.MovePool): called when the pool has both queued actors and
	// free slots, which an actor queued while a runner registered can leave behind.
	MovePool func(ns id.ID, name string)
	// DrainGrace is how long before the end of its request a runner is drained
	// (DefaultRunnerDrainGrace when 0).
	DrainGrace time.Duration
	Log        *slog.Logger

	wake chan struct{}
}

// NewScaler returns a Scaler; Run runs it.
func NewScaler(s Scaler) *Scaler {
	if s.DrainGrace <= 0 {
		s.DrainGrace = DefaultRunnerDrainGrace
	}
	if s.Log == nil {
		s.Log = slog.Default()
	}
	s.wake = make(chan struct{}, 1)
	return &s
}

// Wake makes the scaler look for new pools now (a config was written here).
func (s *Scaler) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run runs a loop per serverless pool until ctx ends; the requests end with it.
func (s *Scaler) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	loops := map[poolKey]context.CancelFunc{}
	defer func() {
		for _, stop := range loops {
			stop()
		}
	}()
	t := time.NewTicker(scalerScan)
	defer t.Stop()
	for {
		pools, err := udb.ReadTransact(ctx, s.DB, func(r udb.ReadTransaction) ([]runnerconfig.Pool, error) {
			return runnerconfig.ListServerless(ctx, r, nil, scalerListed)
		})
		if err != nil && ctx.Err() == nil {
			s.Log.Warn("serverless scaler: listing pools failed", "error", err.Error())
		}
		if err == nil {
			seen := map[poolKey]bool{}
			for _, p := range pools {
				k := poolKey{p.Namespace, p.Name}
				seen[k] = true
				if loops[k] == nil {
					lctx, stop := context.WithCancel(ctx)
					loops[k] = stop
					pl := &poolLoop{s: s, key: k, life: ctx, events: make(chan reqEvent, 16),
						stopped: make(chan struct{}), open: map[*runnerReq]bool{}}
					wg.Go(func() { pl.run(lctx) })
				}
			}
			for k, stop := range loops {
				if !seen[k] {
					stop()
					delete(loops, k)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
	}
}

// poolLoop scales one pool.
type poolLoop struct {
	s   *Scaler
	key poolKey
	// life is the scaler's: the requests live on it, to their lifespans, even once the
	// loop has stopped (the pool was deleted).
	life   context.Context
	events chan reqEvent
	// stopped is closed when the loop ends: requests then have no one to tell.
	stopped chan struct{}
	// open are the requests this loop started and has not seen end; true while they count
	// towards the pool's runners (until their drain).
	open        map[*runnerReq]bool
	held        bool
	failures    int
	lastFailure time.Time
	retryAt     time.Time
}

// runnerReq is one open GET /start request.
type runnerReq struct {
	// endpoint is the url and headers it was made with (endpointOf).
	endpoint string
}

// endpointOf is what a config change must alter for the pool's open requests to be
// replaced: the url and the headers, as on the reference (docs/serverless.md § 5.3).
func endpointOf(cfg keys.ServerlessRunnerConfig) string {
	b, _ := json.Marshal(struct {
		URL     string
		Headers map[string]string
	}{cfg.URL, cfg.Headers}) // map keys are sorted
	return string(b)
}

// replaceOutdated stops counting the requests made with another url or headers than
// cfg's, so that replacements are started with cfg's at once; as on the reference, the
// older ones live on to their drain and lifespan.
func (p *poolLoop) replaceOutdated(cfg keys.ServerlessRunnerConfig) {
	cur := endpointOf(cfg)
	for req, counted := range p.open {
		if counted && req.endpoint != cur {
			p.open[req] = false
			p.s.Log.Info("serverless scaler: replacing a request of an older endpoint", "pool", p.key.name)
		}
	}
}

// reqEvent is news of a request: it began draining its runner, or it ended (err: how it
// failed, nil when closed at its lifespan or after its drain).
type reqEvent struct {
	req      *runnerReq
	draining bool
	err      error
}

func (p *poolLoop) leaseName() string {
	return "serverless-runners/" + p.key.ns.String() + "/" + p.key.name
}

type poolRead struct {
	demand  runnerconfig.RunnerPoolDemand
	nsName  string
	watches []udb.Watch
}

func (p *poolLoop) run(ctx context.Context) {
	defer close(p.stopped)
	defer p.release()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for ctx.Err() == nil {
		rd, err := udb.Transact(ctx, p.s.DB, func(tx udb.Transaction) (poolRead, error) {
			d, ws, err := runnerconfig.ReadRunnerPoolDemand(ctx, tx, p.key.ns, p.key.name, scalerSlotsLimit)
			out := poolRead{demand: d, watches: ws}
			if err != nil || d.Config == nil {
				return out, err
			}
			ns, err := namespace.Get(ctx, tx, namespace.GetInput{NamespaceID: p.key.ns})
			out.nsName = ns.Name
			return out, err
		})
		if err != nil {
			if ctx.Err() == nil {
				p.s.Log.Warn("serverless scaler: reading a pool failed", "pool", p.key.name, "error", err.Error())
			}
			rd.watches = nil
		}
		if d := rd.demand; d.Pending > 0 && d.FreeSlots > 0 && p.s.MovePool != nil {
			p.s.MovePool(p.key.ns, p.key.name)
		}
		want := uint64(0)
		if cfg := rd.demand.Config; cfg != nil {
			want = DesiredRunners(*cfg, min(rd.demand.Slots, MaxDesiredSlots(*cfg)))
			p.replaceOutdated(*cfg)
		}
		next := time.Time{}
		if want > 0 || len(p.open) > 0 {
			p.renew(ctx)
			next = time.Now().Add(scalerLeaseRenew)
		} else {
			p.release()
		}
		if p.held && want > uint64(p.counted()) {
			if now := time.Now(); now.Before(p.retryAt) {
				next = earliest(next, p.retryAt)
			} else {
				for range want - uint64(p.counted()) {
					p.start(RunnerStart{Config: *rd.demand.Config, Name: p.key.name, NamespaceName: rd.nsName})
				}
			}
		}
		if err != nil {
			next = earliest(next, time.Now().Add(time.Second))
		}
		p.wait(ctx, rd.watches, next, retry)
	}
}

// scalerSlotsLimit bounds the slots a pool's demand read counts.
const scalerSlotsLimit = 1 << 20

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// wait waits for a watch to fire, a request's news, the time next (if set) or ctx's end.
func (p *poolLoop) wait(ctx context.Context, watches []udb.Watch, next time.Time, timer *time.Timer) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fired := make(chan struct{}, 1)
	for _, w := range watches {
		go func() {
			if w.Wait(wctx) == nil {
				select {
				case fired <- struct{}{}:
				default:
				}
			}
		}()
	}
	defer func() {
		for _, w := range watches {
			w.Cancel()
		}
	}()
	var at <-chan time.Time
	if !next.IsZero() {
		timer.Reset(time.Until(next))
		at = timer.C
		defer timer.Stop()
	}
	select {
	case <-ctx.Done():
	case <-fired:
	case <-at:
	case ev := <-p.events:
		p.handle(ev)
	}
	for { // news that arrived meanwhile
		select {
		case ev := <-p.events:
			p.handle(ev)
		default:
			return
		}
	}
}

func (p *poolLoop) counted() int {
	n := 0
	for _, c := range p.open {
		if c {
			n++
		}
	}
	return n
}

func (p *poolLoop) handle(ev reqEvent) {
	if ev.draining {
		if _, ok := p.open[ev.req]; ok {
			p.open[ev.req] = false
		}
		return
	}
	delete(p.open, ev.req)
	now := time.Now()
	switch {
	case ev.err == nil:
	case errors.Is(ev.err, ErrEndedEarly):
		// Not backed off (docs/serverless.md § 5.4), only spaced.
		p.retryAt = now.Add(endedPause)
	case now.Before(p.retryAt):
		// A request started with the one that failed first: one failure of the pool.
	default:
		if now.Sub(p.lastFailure) > runnerRetryReset {
			p.failures = 0
		}
		p.failures++
		p.lastFailure = now
		p.retryAt = now.Add(RunnerRetryDelay(p.failures))
	}
}

// renew takes or renews the pool's lease.
func (p *poolLoop) renew(ctx context.Context) {
	held, err := udb.Transact(ctx, p.s.DB, func(tx udb.Transaction) (bool, error) {
		held, _, err := lease.Acquire(ctx, tx, lease.Input{Name: p.leaseName(), Holder: p.s.NodeID,
			NowMs: time.Now().UnixMilli(), TTLMs: ScalerLeaseTTL.Milliseconds()})
		return held, err
	})
	if err != nil && ctx.Err() == nil {
		p.s.Log.Warn("serverless scaler: lease failed", "pool", p.key.name, "error", err.Error())
	}
	if held != p.held && err == nil {
		p.s.Log.Info("serverless scaler: pool lease", "pool", p.key.name, "held", held)
	}
	p.held = held && err == nil
}

// release gives the pool's lease up, if held (the pool wants no runner, or the loop ends).
func (p *poolLoop) release() {
	if !p.held {
		return
	}
	p.held = false
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.life), time.Second)
	defer cancel()
	if _, err := udb.Transact(ctx, p.s.DB, func(tx udb.Transaction) (struct{}, error) {
		return struct{}{}, lease.Release(ctx, tx, p.leaseName(), p.s.NodeID)
	}); err != nil {
		p.s.Log.Warn("serverless scaler: releasing a lease failed", "pool", p.key.name, "error", err.Error())
	}
}

// start opens one request for in: its runner is drained DrainGrace before the request's
// lifespan ends (a replacement is then started if still wanted), and the request is closed
// at its lifespan (docs/serverless.md § 5.3).
func (p *poolLoop) start(in RunnerStart) {
	req := &runnerReq{endpoint: endpointOf(in.Config)}
	p.open[req] = true
	lifespan := time.Duration(in.Config.RequestLifespan) * time.Second
	notify := func(ev reqEvent) {
		select {
		case p.events <- ev:
		case <-p.stopped:
		}
	}
	go func() {
		ctx, cancel := context.WithTimeout(p.life, lifespan)
		defer cancel()
		var (
			mu     sync.Mutex
			runner id.ID
		)
		drain := time.AfterFunc(drainAfter(lifespan, p.s.DrainGrace), func() {
			notify(reqEvent{req: req, draining: true})
			mu.Lock()
			rid := runner
			mu.Unlock()
			if !rid.IsZero() {
				if err := p.s.Drain(ctx, rid); err != nil && ctx.Err() == nil {
					p.s.Log.Warn("serverless scaler: draining a runner failed", "runner_id", rid.String(), "error", err.Error())
				}
			}
		})
		err := p.s.Starter.StartRunner(ctx, in, func(raw string) {
			if rid, err := id.Parse(raw); err == nil {
				mu.Lock()
				runner = rid
				mu.Unlock()
			}
			p.poolSuccess(ctx)
		})
		drained := !drain.Stop()
		if drained && errors.Is(err, ErrEndedEarly) {
			err = nil // the runner was drained: its stream may end
		}
		if err != nil && p.life.Err() == nil {
			p.poolError(err)
		}
		notify(reqEvent{req: req, err: err})
	}()
}

// poolSuccess counts an init event towards clearing the pool's error.
func (p *poolLoop) poolSuccess(ctx context.Context) {
	if _, err := udb.Transact(ctx, p.s.DB, func(tx udb.Transaction) (struct{}, error) {
		return struct{}{}, runnerconfig.PoolSuccess(ctx, tx, p.key.ns, p.key.name)
	}); err != nil && ctx.Err() == nil {
		p.s.Log.Warn("serverless scaler: recording a success failed", "pool", p.key.name, "error", err.Error())
	}
}

// poolError records a failed request as the pool's error.
func (p *poolLoop) poolError(err error) {
	poolErr := json.RawMessage(`"internal_error"`)
	var se *StartError
	if errors.As(err, &se) {
		poolErr = se.PoolError()
	}
	p.s.Log.Warn("serverless runner start failed", "pool", p.key.name, "runner_pool_error", string(poolErr), "error", err.Error())
	if _, err := udb.Transact(p.life, p.s.DB, func(tx udb.Transaction) (struct{}, error) {
		runnerconfig.SetPoolError(tx, p.key.ns, p.key.name, poolErr)
		return struct{}{}, nil
	}); err != nil && p.life.Err() == nil {
		p.s.Log.Warn("serverless scaler: recording a pool error failed", "pool", p.key.name, "error", err.Error())
	}
}
