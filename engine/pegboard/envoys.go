package pegboard

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	openvoy "github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/tuple"
	"github.com/berthhq/berth/pkg/udb"
)

// EnvoysOptions configures Envoys. DB and Actors are required.
type EnvoysOptions struct {
	DB udb.Database
	// Hosts closes the sockets of envoys that stopped or expired.
	Hosts Hosts
	// Actors is the actor lifecycle: a stopping envoy's actors are evicted through it.
	Actors *Actors
	Log    *slog.Logger
	// LostThreshold: an envoy not pinged for this long is expired (it leaves the
	// load-balancer and active indexes). Rivet's envoy_lost_threshold.
	LostThreshold time.Duration
	// ScanInterval is how often the loop looks for lost envoys; zero means
	// LostThreshold/15, within [50 ms, 1 s].
	ScanInterval time.Duration
}

// Envoys drives the envoy lifecycle: stopping (with the eviction of its actors, evict.go),
// disconnection and expiry of envoys whose socket was lost with no one to notice (the node
// holding it died). The actors of a lost envoy find out by their liveness checks
// (ops/actor), as on Rivet.
type Envoys struct {
	o         EnvoysOptions
	loop      scanLoop
	evictions evictions
	// from is where the next scan of the active index starts (nil: at its start); owned by
	// the loop's goroutine.
	from []byte
}

// NewEnvoys returns the envoy lifecycle; Run starts its loop.
func NewEnvoys(o EnvoysOptions) *Envoys {
	if o.DB == nil || o.Actors == nil {
		panic("pegboard: EnvoysOptions.DB and Actors are required")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Envoys{o: o, loop: newScanLoop(o.LostThreshold, o.ScanInterval)}
}

// Actors is the actor lifecycle the envoys' actors go through.
func (p *Envoys) Actors() *Actors { return p.o.Actors }

// Stopping handles an envoy's ToRivetStopping on socket connID: the envoy leaves the
// placement indexes at once and stop_ts is set (ops/envoy.Drain); then its actors are
// evicted, paced by its pool's runner config (evict.go), and its socket is closed with
// 1000 ws.eviction once the last has left, at once if it has none. A stale socket gets
// envoy.stale_connection.
func (p *Envoys) Stopping(ctx context.Context, ns id.ID, envoyKey string, connID id.ID) error {
	now := time.Now().UnixMilli()
	type drained struct {
		out    openvoy.DrainOutput
		actors int
		cfg    keys.RunnerConfigCommon
	}
	d, err := udb.Transact(ctx, p.o.DB, func(tx udb.Transaction) (drained, error) {
		out, err := openvoy.Drain(ctx, tx, openvoy.DrainInput{Namespace: ns, EnvoyKey: envoyKey, ConnID: connID, NowMs: now})
		if err != nil {
			return drained{}, err
		}
		// Serializable: an actor placed here concurrently conflicts with the drain.
		aids, err := openvoy.Actors(ctx, tx, ns, envoyKey, 1)
		if err != nil {
			return drained{}, err
		}
		d := drained{out: out, actors: len(aids)}
		if d.actors > 0 {
			pool, _, err := keys.Get(ctx, tx.Snapshot(), keys.EnvoyPoolNameKey{Namespace: ns, EnvoyKey: envoyKey})
			if err != nil {
				return drained{}, err
			}
			e, err := runnerconfig.Get(ctx, tx, runnerconfig.GetInput{Namespace: ns, Name: pool})
			switch {
			case err == nil:
				d.cfg = e.Config.Common()
			case !rerr.Is(err, rerr.CodeRunnerConfigNotFound):
				return drained{}, err
			}
		}
		return d, nil
	})
	if err != nil {
		return err
	}
	if d.out.Drained {
		p.o.Log.Info("envoy stopping", "namespace_id", ns.String(), "envoy_key", envoyKey)
	}
	if d.actors > 0 {
		// Also when the envoy was draining already: an eviction this process lost (a
		// restart) starts again; one under way here is not doubled.
		h := actor.EnvoyHost(ns, envoyKey)
		p.evictions.start(h, func(ctx context.Context) { p.evict(ctx, h, d.cfg) })
		return nil
	}
	if p.o.Hosts != nil {
		p.o.Hosts.CloseSocket(actor.EnvoyHost(ns, envoyKey), rerr.WSEviction())
	}
	return nil
}

// Disconnected expires the envoy whose socket connID ended (Rivet's pegboard_envoy_expire
// without skip_if_fresh). A socket a newer one replaced changes nothing.
func (p *Envoys) Disconnected(ctx context.Context, ns id.ID, envoyKey string, connID id.ID) error {
	now := time.Now().UnixMilli()
	res, err := udb.Transact(ctx, p.o.DB, func(tx udb.Transaction) (openvoy.ExpireOutput, error) {
		return openvoy.Expire(ctx, tx, openvoy.ExpireInput{Namespace: ns, EnvoyKey: envoyKey, ConnID: connID, NowMs: now})
	})
	switch {
	case rerr.Is(err, rerr.CodeEnvoyStaleConnection), rerr.Is(err, rerr.CodeEnvoyNotFound):
		return nil
	case err != nil:
		return err
	}
	if res.Expired {
		p.o.Log.Info("envoy expired", "namespace_id", ns.String(), "envoy_key", envoyKey, "reason", "disconnected")
	}
	return nil
}

// Run scans for lost envoys and runs the evictions of stopping ones until ctx ends.
func (p *Envoys) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { p.evictions.run(ctx) })
	p.loop.run(ctx, p.scan)
	wg.Wait()
}

// Kick makes the loop scan now.
func (p *Envoys) Kick() { p.loop.kickNow() }

// scan checks one batch of the active envoys of every namespace and expires those not
// pinged since the cutoff; it reports whether to scan again at once (the batch was full).
//
// Envoys have no ping-time index (Rivet finds stale envoys while allocating and through the
// actors' liveness checks), so the loop walks the active index, scanBatch entries at a
// time, reading each envoy's last ping at snapshot isolation; the expiry itself rechecks
// the ping serializably (PingBeforeMs), so a ping that lands in between wins.
func (p *Envoys) scan(ctx context.Context) (more bool) {
	before := p.loop.cutoff(time.Now())
	begin, end := activeEnvoysRange()
	if p.from != nil {
		begin = p.from
	}
	type due struct {
		ns  id.ID
		key string
	}
	type scanned struct {
		due  []due
		next []byte
	}
	out, err := udb.ReadTransact(ctx, p.o.DB, func(r udb.ReadTransaction) (scanned, error) {
		snap := r.Snapshot()
		kvs, err := snap.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end),
			udb.RangeOptions{Limit: scanBatch, Mode: udb.StreamingModeWantAll}).All(ctx)
		if err != nil {
			return scanned{}, err
		}
		var out scanned
		for _, kv := range kvs {
			k, err := keys.UnpackActiveEnvoyKey(kv.Key)
			if err != nil {
				return scanned{}, err
			}
			ping, _, err := keys.Get(ctx, snap, keys.EnvoyLastPingTsKey{Namespace: k.Namespace, EnvoyKey: k.EnvoyKey})
			if err != nil {
				return scanned{}, err
			}
			if ping < before {
				out.due = append(out.due, due{k.Namespace, k.EnvoyKey})
			}
		}
		if len(kvs) == scanBatch {
			out.next = udb.KeyAfter(kvs[len(kvs)-1].Key)
		}
		return out, nil
	})
	if err != nil {
		if ctx.Err() == nil {
			p.o.Log.Warn("envoy scan failed", "error", err)
		}
		return false
	}
	ok := true
	for _, d := range out.due {
		ok = p.expire(ctx, d.ns, d.key, before) && ok
	}
	p.from = out.next
	return ok && out.next != nil
}

// expire expires envoy (ns, key) if it still has not pinged since before, and closes its
// socket if this node holds one. False if the store failed.
func (p *Envoys) expire(ctx context.Context, ns id.ID, key string, before int64) bool {
	now := time.Now().UnixMilli()
	res, err := udb.Transact(ctx, p.o.DB, func(tx udb.Transaction) (openvoy.ExpireOutput, error) {
		return openvoy.Expire(ctx, tx, openvoy.ExpireInput{Namespace: ns, EnvoyKey: key, PingBeforeMs: before, NowMs: now})
	})
	switch {
	case rerr.Is(err, rerr.CodeEnvoyNotFound):
		return true
	case err != nil:
		if ctx.Err() == nil {
			p.o.Log.Warn("envoy expire failed", "namespace_id", ns.String(), "envoy_key", key, "error", err)
		}
		return false
	}
	if res.Expired {
		p.o.Log.Info("envoy expired", "namespace_id", ns.String(), "envoy_key", key, "reason", "lost")
		if p.o.Hosts != nil {
			// A socket that still exists is not answering: it must reconnect.
			p.o.Hosts.CloseSocket(actor.EnvoyHost(ns, key), rerr.EnvoyExpired(key))
		}
	}
	return true
}

// activeEnvoysRange is the ActiveEnvoyKey entries of every namespace: keys has the range of
// one namespace only, so the common prefix is what an entry's key keeps once the packed
// tail (namespace_id, create_ts, envoy_key) is cut off (tuple encoding concatenates
// elements).
func activeEnvoysRange() (begin, end []byte) {
	ns := id.New(0)
	k := keys.ActiveEnvoyKey{Namespace: ns, CreateTs: 0, EnvoyKey: "x"}.Pack()
	tail := tuple.Tuple{ns, int64(0), "x"}.Pack()
	if !bytes.HasSuffix(k, tail) {
		panic(errors.New("pegboard: ActiveEnvoyKey does not end in its packed fields")) // a keys change; TestActiveEnvoysRange
	}
	prefix := k[:len(k)-len(tail)]
	return append(bytes.Clone(prefix), 0x00), append(bytes.Clone(prefix), 0xff)
}
