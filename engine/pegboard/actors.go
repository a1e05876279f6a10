package pegboard

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/berthhq/berth/engine/metrics"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Hosts reaches the hosts' sockets wherever they are held in the datacenter
// (engine/cluster.Node). Neither call blocks on the host; a host that gets its commands late
// (it reconnects elsewhere) gets them from the stored commands.
type Hosts interface {
	SendCommands(h actor.Host, cmds []actor.Command)
	CloseSocket(h actor.Host, err error)
}

// ActorsOptions configures Actors. DB and Watchers are required.
type ActorsOptions struct {
	DB udb.Database
	// Hosts takes the commands of committed transitions and closes the sockets of hosts
	// that stopped; nil for a lifecycle no host connects to (the API's tests).
	Hosts Hosts
	// Watchers are woken by the changes the lifecycle commits.
	Watchers *Watchers
	Log      *slog.Logger
	Metrics  *metrics.Metrics
	Config   actor.Config
	// Label is the datacenter label new actor ids carry; Datacenter its name.
	Label      uint16
	Datacenter string
	// ScanInterval is how often due timers are looked for; zero means 100 ms.
	ScanInterval time.Duration
	// Announce, when set, tells the datacenter's other nodes of the actors a committed
	// transition changed (engine/cluster.Node.AnnounceActors), so that what waits there
	// follows changes made here.
	Announce func(actors []id.ID)
	// Keys, with several datacenters, makes keys unique across them (keys.go); nil in a
	// single datacenter.
	Keys KeyService
	// Serverless starts the actors of serverless envoy pools (serverless.go); nil when
	// none may run here.
	Serverless ServerlessStarter
}

// Actors drives the actor lifecycle: it runs ops/actor transitions and carries out their
// effects (commands to the hosts, queue moves, closing stopped hosts, waking watchers), and
// runs the timers.
type Actors struct {
	o ActorsOptions

	kick    chan struct{}
	creates batcher     // creates share transactions (batch.go)
	keys    *globalKeys // nil in a single datacenter

	mu    sync.Mutex
	pools []actor.Pool // queues to move

	sl serverlessStarts
	// life ends when Run returns; the /start requests (bg) end with it.
	life    context.Context
	endLife context.CancelFunc
	bg      sync.WaitGroup
}

// NewActors returns the actor lifecycle; Run starts its loop.
func NewActors(o ActorsOptions) *Actors {
	if o.DB == nil || o.Watchers == nil {
		panic("pegboard: ActorsOptions.DB and Watchers are required")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	if o.ScanInterval <= 0 {
		o.ScanInterval = 100 * time.Millisecond
	}
	p := &Actors{o: o, kick: make(chan struct{}, 1), keys: newGlobalKeys(o.Keys)}
	p.life, p.endLife = context.WithCancel(context.Background())
	p.creates.p = p
	return p
}

// Config is the lifecycle timings.
func (p *Actors) Config() actor.Config { return p.o.Config }

// now is the lifecycle clock, in milliseconds.
func now() int64 { return time.Now().UnixMilli() }

// lifecycleMaxRetryDelay caps the backoff of a lifecycle transaction that conflicted.
// Concurrent placements on one runner conflict on its slot count; with FoundationDB's
// 1 s cap an unlucky create kept backing off for seconds while the others won
// (BenchmarkActors: one create in ~10,000 passed api-public's 5 s limit).
const lifecycleMaxRetryDelay = 50 * time.Millisecond

// Transact runs f, a lifecycle transaction that returns effects, and carries them out
// once it has committed.
func Transact[T any](ctx context.Context, p *Actors, f func(tx udb.Transaction) (T, actor.Effects, error)) (T, error) {
	var eff actor.Effects
	v, err := udb.Transact(ctx, p.o.DB, func(tx udb.Transaction) (T, error) {
		if err := tx.Options().SetMaxRetryDelay(lifecycleMaxRetryDelay); err != nil {
			var zero T
			return zero, err
		}
		out, e, err := f(tx)
		eff = e
		return out, err
	})
	if err != nil {
		return v, err
	}
	p.Apply(eff)
	return v, nil
}

// Apply carries out committed effects.
func (p *Actors) Apply(eff actor.Effects) {
	p.sendCommands(eff.Commands)
	p.o.Metrics.ActorTransitions.WithLabelValues("created").Add(float64(eff.Created))
	p.o.Metrics.ActorTransitions.WithLabelValues("woken").Add(float64(eff.Woken))
	var changed []id.ID
	for _, group := range [][]id.ID{eff.Ready, eff.Stopped, eff.Destroyed} {
		changed = append(changed, group...)
	}
	if p.keys != nil {
		for _, aid := range eff.Destroyed {
			p.queueRelease(release{aid: aid})
		}
	}
	p.o.Watchers.Changed(changed)
	if p.o.Announce != nil && len(changed) > 0 {
		p.o.Announce(changed)
	}
	if len(eff.Pools) > 0 {
		p.mu.Lock()
		for _, pool := range eff.Pools {
			if !containsPool(p.pools, pool) {
				p.pools = append(p.pools, pool)
			}
		}
		p.mu.Unlock()
		p.Kick()
	}
	for _, rid := range eff.StoppedRunners {
		p.o.Metrics.RunnerTransitions.WithLabelValues("drained").Inc()
		p.o.Log.Info("runner stopped", "runner_id", rid.String(), "reason", "drained")
		p.closeHost(actor.RunnerHost(rid))
	}
	for _, h := range eff.StoppedEnvoys {
		p.o.Log.Info("envoy stopped", "namespace_id", h.Namespace.String(), "envoy_key", h.EnvoyKey, "reason", "evicted")
		p.closeHost(h)
	}
}

// closeHost closes the socket of h, which stopped, with ws.eviction: it must not reconnect.
func (p *Actors) closeHost(h actor.Host) {
	if p.o.Hosts != nil {
		p.o.Hosts.CloseSocket(h, rerr.WSEviction())
	}
}

// sendCommands sends commands to their hosts' sockets, one batch per host, in order.
func (p *Actors) sendCommands(cmds []actor.Command) {
	if len(cmds) == 0 {
		return
	}
	byHost := map[actor.Host][]actor.Command{}
	var order []actor.Host
	for _, c := range cmds {
		if c.Host.IsServerless() {
			p.startServerless(c)
			continue
		}
		if _, seen := byHost[c.Host]; !seen {
			order = append(order, c.Host)
		}
		byHost[c.Host] = append(byHost[c.Host], c)
	}
	for _, h := range order {
		if p.o.Hosts != nil {
			p.o.Hosts.SendCommands(h, byHost[h])
		}
	}
}

func containsPool(ps []actor.Pool, p actor.Pool) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// Watch and OnChange wait for the actor's next change (Watchers).
func (p *Actors) Watch(aid id.ID) <-chan struct{} { return p.o.Watchers.Watch(aid) }

func (p *Actors) OnChange(aid id.ID, f func()) (stop func()) { return p.o.Watchers.OnChange(aid, f) }

// Kick makes the loop run now.
func (p *Actors) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// MovePool asks the loop to place what waits in the pool's queue (a runner connected).
func (p *Actors) MovePool(pool actor.Pool) { p.Apply(actor.Effects{Pools: []actor.Pool{pool}}) }

// Run runs due timers and moves queues until ctx ends.
func (p *Actors) Run(ctx context.Context) {
	defer p.bg.Wait()
	defer p.endLife()
	if p.keys != nil {
		var keys sync.WaitGroup
		keys.Go(func() { p.runKeys(ctx) })
		defer keys.Wait()
	}
	t := time.NewTicker(p.o.ScanInterval)
	defer t.Stop()
	for {
		p.movePools(ctx)
		for p.runTimers(ctx) && ctx.Err() == nil {
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.kick:
		}
	}
}

const timerBatch = 256

// runTimers handles one batch of due timers; it reports whether to look again at once.
func (p *Actors) runTimers(ctx context.Context) bool {
	due, err := udb.ReadTransact(ctx, p.o.DB, func(r udb.ReadTransaction) ([]id.ID, error) {
		return actor.DueTimers(ctx, r, now()+1, timerBatch)
	})
	if err != nil {
		p.warn(ctx, "actor timers", err)
		return false
	}
	ok := true
	for _, aid := range due {
		in := actor.Input{ActorID: aid, NowMs: now(), Config: p.o.Config}
		if _, err := Transact(ctx, p, func(tx udb.Transaction) (struct{}, actor.Effects, error) {
			eff, err := actor.Timer(ctx, tx, in)
			return struct{}{}, eff, err
		}); err != nil {
			p.warn(ctx, "actor timer "+aid.String(), err)
			ok = false
		}
	}
	return ok && len(due) == timerBatch
}

// movePools places what waits in the queues of the pools that had a slot freed.
func (p *Actors) movePools(ctx context.Context) {
	for ctx.Err() == nil {
		p.mu.Lock()
		if len(p.pools) == 0 {
			p.mu.Unlock()
			return
		}
		pool := p.pools[0]
		p.pools = p.pools[1:]
		p.mu.Unlock()
		for more := true; more && ctx.Err() == nil; {
			in := actor.PlacePendingInput{Pool: pool, Limit: 32, NowMs: now(), Config: p.o.Config}
			out, err := Transact(ctx, p, func(tx udb.Transaction) (actor.PlacePendingOutput, actor.Effects, error) {
				out, err := actor.PlacePending(ctx, tx, in)
				return out, out.Effects, err
			})
			if err != nil {
				p.warn(ctx, "pending queue", err)
				break
			}
			more = out.More
		}
	}
}

func (p *Actors) warn(ctx context.Context, what string, err error) {
	if ctx.Err() == nil {
		p.o.Log.Warn(what+" failed", "error", err)
	}
}

// MARK: API

// fill completes a create with what the lifecycle decides: the actor id (drawn once, so
// that every retry of the transaction creates the same actor), the time, the timings and
// this datacenter.
func (p *Actors) fill(in actor.CreateInput) actor.CreateInput {
	if in.ActorID.IsZero() {
		in.ActorID = id.New(p.o.Label)
	}
	if in.NowMs == 0 {
		in.NowMs = now()
	}
	if in.Datacenter == "" {
		in.Datacenter = p.o.Datacenter
	}
	in.Config = p.o.Config
	return in
}

// Create creates and places an actor (ops/actor.Create), in a transaction shared with the
// creates that run at the same time (batch.go). With several datacenters a keyed create
// reserves its key across them first (keys.go), and an actor whose pool has no free host
// here may be created in another datacenter (placement.go).
func (p *Actors) Create(ctx context.Context, in actor.CreateInput) (actor.Actor, error) {
	in = p.fill(in)
	if p.keys != nil && in.Key != nil {
		a, _, err := p.keyed(ctx, in, false)
		return a, err
	}
	if a, _, moved, err := p.createElsewhere(ctx, in, false); err != nil || moved {
		return a, err
	}
	res, err := p.creates.do(ctx, len(in.Input), actor.CreateReads(in), func(ctx context.Context, tx udb.Transaction) (any, actor.Effects, error) {
		out, err := actor.Create(ctx, tx, in)
		return out.Actor, out.Effects, err
	})
	a, _ := res.(actor.Actor)
	return a, err
}

// GetOrCreate returns the live actor holding the key, or creates it (ops/actor.GetOrCreate),
// in a transaction shared as Create's.
func (p *Actors) GetOrCreate(ctx context.Context, in actor.CreateInput) (actor.Actor, bool, error) {
	in = p.fill(in)
	if p.keys != nil && in.Key != nil {
		return p.keyed(ctx, in, true)
	}
	res, err := p.creates.do(ctx, len(in.Input), actor.CreateReads(in), func(ctx context.Context, tx udb.Transaction) (any, actor.Effects, error) {
		out, err := actor.GetOrCreate(ctx, tx, in)
		return out, out.Effects, err
	})
	out, _ := res.(actor.GetOrCreateOutput)
	return out.Actor, out.Created, err
}

// Destroy destroys an actor and, with wait, returns once it is destroyed (a placed actor
// is stopped first) or ctx ends.
func (p *Actors) Destroy(ctx context.Context, aid id.ID, wait bool) error {
	changed := p.Watch(aid)
	in := actor.Input{ActorID: aid, NowMs: now(), Config: p.o.Config}
	out, err := Transact(ctx, p, func(tx udb.Transaction) (actor.DestroyOutput, actor.Effects, error) {
		out, err := actor.Destroy(ctx, tx, in)
		return out, out.Effects, err
	})
	if err != nil || out.Done || !wait {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-time.After(time.Second):
			// The stop may have been seen by another node; look again.
		}
		changed = p.Watch(aid)
		st, err := udb.ReadTransact(ctx, p.o.DB, func(r udb.ReadTransaction) (actor.Status, error) {
			st, _, err := actor.Lookup(ctx, r, aid)
			return st, err
		})
		if err != nil {
			return err
		}
		if st.Phase == actor.PhaseDestroyed {
			return nil
		}
	}
}

// Sleep, Wake and Reschedule run the transitions of the same names.
func (p *Actors) Sleep(ctx context.Context, aid id.ID) error {
	return p.run(ctx, aid, actor.Sleep)
}

func (p *Actors) Wake(ctx context.Context, aid id.ID) error {
	return p.run(ctx, aid, actor.Wake)
}

func (p *Actors) Reschedule(ctx context.Context, aid id.ID) error {
	return p.run(ctx, aid, actor.Reschedule)
}

func (p *Actors) run(ctx context.Context, aid id.ID, f func(context.Context, udb.Transaction, actor.Input) (actor.Effects, error)) error {
	in := actor.Input{ActorID: aid, NowMs: now(), Config: p.o.Config}
	_, err := Transact(ctx, p, func(tx udb.Transaction) (struct{}, actor.Effects, error) {
		eff, err := f(ctx, tx, in)
		return struct{}{}, eff, err
	})
	return err
}

// MARK: host sockets

// HostEvents applies a host's events and returns the checkpoints to acknowledge.
func (p *Actors) HostEvents(ctx context.Context, h actor.Host, events []actor.Event) ([]actor.Checkpoint, error) {
	in := actor.EventsInput{Host: h, Events: events, NowMs: now(), Config: p.o.Config}
	out, err := Transact(ctx, p, func(tx udb.Transaction) (actor.EventsOutput, actor.Effects, error) {
		out, err := actor.ApplyEvents(ctx, tx, in)
		return out, out.Effects, err
	})
	return out.Acks, err
}

// HostAckCommands clears the commands a host acknowledged.
func (p *Actors) HostAckCommands(ctx context.Context, h actor.Host, cps []actor.Checkpoint) error {
	return udb.Update(ctx, p.o.DB, func(tx udb.Transaction) error {
		return actor.AckCommands(ctx, tx, actor.AckCommandsInput{Host: h, Checkpoints: cps})
	})
}

// HostReplay returns the stored commands a host that just connected must get again.
func (p *Actors) HostReplay(ctx context.Context, h actor.Host) ([]actor.Command, error) {
	return udb.ReadTransact(ctx, p.o.DB, func(r udb.ReadTransaction) ([]actor.Command, error) { return actor.Replay(ctx, r, h) })
}
