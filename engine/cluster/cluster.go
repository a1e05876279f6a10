package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/guard"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	opnode "github.com/berthhq/berth/ops/node"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/pubsub"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// DefaultReleases is how many ownership releases may be in flight at once (node.releases).
const DefaultReleases = 128

// Options configures a Node.
type Options struct {
	DB  udb.Database
	Bus pubsub.PubSub // shared by the datacenter's nodes; the memory driver for a single node
	// ID names the node; empty draws a random one.
	ID string
	// Address is the internal URL other nodes reach this node's relay endpoint at; Start
	// sets it.
	Address string
	// Label is the datacenter's label, which scopes the bus subject.
	Label uint16
	// Lease is how long the node's lease lasts unless renewed.
	Lease time.Duration
	// Releases bounds the ownership releases in flight; ≤ 0 means DefaultReleases.
	Releases int
	// Auth authenticates relays between nodes: they present its admin token (x-rivet-token)
	// and accept only it.
	Auth *auth.Authenticator
	// HTTP dials the relays to other nodes (their TLS settings); nil means http.DefaultClient.
	HTTP *http.Client
	Log  *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	// Local is this node's host sockets (engine/hostsock.Registry); required.
	Local Local
	// Changes is woken with the actors other nodes announce changed
	// (engine/pegboard.Watchers); required.
	Changes interface{ Changed(actors []id.ID) }
}

// Local is what this node's host sockets do for the cluster, each call for a socket this
// node holds: false, or wsconn.ErrNoSocket, when it is not here.
type Local interface {
	SendCommandsHere(h actor.Host, cmds []actor.Command) bool
	CloseHere(h actor.Host, err error) bool
	EvictHere(connID id.ID) bool
	Holds(h actor.Host) bool
	// OpenTunnel opens a request to an actor on h: a fresh request of gateway gw when req
	// is nil, else request req of gw, its next message numbered next.
	OpenTunnel(h actor.Host, gw proto.GatewayID, req *proto.RequestID, next uint16) (guard.ResumableTunnel, error)
	// GatewayID is this node's gateway id.
	GatewayID() proto.GatewayID
}

// Node is this engine among the nodes of its datacenter.
type Node struct {
	o       Options
	subject string
	local   Local
	// releases commits ownership releases in batches: Workers × Batch ≤ Options.Releases
	// records in flight.
	releases wsconn.Batcher[releaseJob]

	releasing atomic.Int64 // releases queued or in flight
	preserve  atomic.Bool  // a preserve shutdown: ownership is kept
	relays    atomic.Int64 // relays being served
	refuse    atomic.Bool  // draining: no new relays
	owners    owners       // of sockets held elsewhere (owners.go)

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// New returns a Node; Start registers it.
func New(o Options) *Node {
	if o.DB == nil || o.Bus == nil || o.Local == nil || o.Changes == nil {
		panic("cluster: Options.DB, Bus, Local and Changes are required")
	}
	if o.ID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		o.ID = "node-" + hex.EncodeToString(b[:])
	}
	if o.Releases <= 0 {
		o.Releases = DefaultReleases
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Lease <= 0 {
		o.Lease = 10 * time.Second
	}
	n := &Node{o: o, local: o.Local, subject: fmt.Sprintf("berth.dc%d.runners", o.Label)}
	batch := min(16, o.Releases)
	n.releases = wsconn.Batcher[releaseJob]{Run: n.runReleases, WG: &n.wg, Workers: o.Releases / batch, Batch: batch, Queue: 4096}
	return n
}

// ID is the node's id.
func (n *Node) ID() string { return n.o.ID }

// Start writes the node's lease (naming address, the node's internal URL), releases the
// ownership records a previous run of this node id left (a SIGKILLed node restarted: it
// holds no socket yet, and other nodes must not route to it for them), subscribes to the
// bus and starts renewing the lease and delivering the bus's messages to the local sockets
// until Stop. It returns once the node is registered and subscribed.
func (n *Node) Start(ctx context.Context, address string) error {
	n.o.Address = address
	// Registration is a quick local step, done even when ctx is already cancelled (as
	// engine.Run allows); the loops below outlive ctx until Stop.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := n.renew(ctx); err != nil {
		return fmt.Errorf("cluster: register node %s: %w", n.o.ID, err)
	}
	if held, err := n.Held(ctx); err == nil && held > 0 {
		start := time.Now()
		if err := n.ReleaseAll(ctx); err != nil {
			n.o.Log.Warn("cluster: releasing a previous run's ownership records", "node", n.o.ID, "records", held, "error", err)
		} else {
			n.o.Log.Info("cluster: released a previous run's ownership records", "node", n.o.ID, "records", held, "duration", time.Since(start))
		}
	}
	sub, err := n.o.Bus.Subscribe(ctx, n.subject)
	if err != nil {
		return fmt.Errorf("cluster: subscribe to %s: %w", n.subject, err)
	}
	lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	n.stop = stop
	n.wg.Go(func() { n.renewLoop(lctx) })
	n.wg.Go(func() {
		defer func() { _ = sub.Unsubscribe() }()
		n.deliverLoop(lctx, sub)
	})
	return nil
}

// Stop ends the lease renewals and the bus subscription; the lease stays until it runs
// out (Leave clears it).
func (n *Node) Stop() {
	if n.stop != nil {
		n.stop()
	}
	n.wg.Wait()
}

func (n *Node) renew(ctx context.Context) error {
	in := opnode.RenewLeaseInput{NodeID: n.o.ID, Address: n.o.Address, ExpiresMs: n.o.Now().Add(n.o.Lease).UnixMilli()}
	return udb.Update(ctx, n.o.DB, func(tx udb.Transaction) error {
		opnode.RenewLease(tx, in)
		return nil
	})
}

func (n *Node) renewLoop(ctx context.Context) {
	t := time.NewTicker(n.o.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := n.renew(ctx); err != nil && ctx.Err() == nil {
			n.o.Log.Warn("cluster: renew node lease", "node", n.o.ID, "error", err)
		}
	}
}

// Leave clears the node's lease, so other nodes stop routing to it at once.
func (n *Node) Leave(ctx context.Context) error {
	return udb.Update(ctx, n.o.DB, func(tx udb.Transaction) error {
		opnode.Leave(tx, n.o.ID)
		return nil
	})
}

// ClaimSocket records that this node holds h's socket (a runner's or an envoy's); the epoch
// returned is the one to release it with.
func (n *Node) ClaimSocket(ctx context.Context, h actor.Host) (int64, error) {
	return udb.Transact(ctx, n.o.DB, func(tx udb.Transaction) (int64, error) {
		return opnode.ClaimSocket(ctx, tx, opnode.ClaimSocketInput{Socket: h.Socket, NodeID: n.o.ID})
	})
}

// ReleaseSocket releases the ownership record of h's socket held under epoch, in one
// transaction with before (the socket's own clean-up, nil for none; an *rerr.Error from it
// means it wrote nothing and is ignored), and returns once that committed or failed. Releases
// are committed in batches, at most Options.Releases records in flight. After a preserve
// shutdown began it does nothing: ownership is kept for the restart.
func (n *Node) ReleaseSocket(ctx context.Context, h actor.Host, epoch int64, before func(context.Context, udb.Transaction) error) {
	if n.preserve.Load() {
		return
	}
	j := releaseJob{ctx: ctx, sock: h.Socket, epoch: epoch, before: before, done: make(chan struct{})}
	n.push(j)
	<-j.done
}

// releaseJob is one ownership record to release.
type releaseJob struct {
	ctx    context.Context
	sock   keys.Socket
	epoch  int64
	before func(context.Context, udb.Transaction) error
	done   chan struct{} // closed once settled
}

func (n *Node) push(j releaseJob) {
	n.releasing.Add(1)
	n.releases.Push(j)
}

// runReleases commits one batch of releases in one transaction; if that fails, each alone.
func (n *Node) runReleases(batch []releaseJob) {
	defer func() {
		// Counted out before the waiters are woken: once a job is settled, it is not
		// counted in Releasing.
		n.releasing.Add(-int64(len(batch)))
		for _, j := range batch {
			close(j.done)
		}
	}()
	if n.preserve.Load() {
		return
	}
	ctx := batch[0].ctx
	if len(batch) > 1 {
		// Jobs come from different callers; the batch runs under a context of its own,
		// bounded like one of theirs.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
	}
	err := n.releaseTx(ctx, batch)
	if err == nil || len(batch) == 1 {
		if err != nil && ctx.Err() == nil {
			// The record stays ours; other nodes see it dead once the lease runs out.
			n.o.Log.Warn("cluster: release socket", "socket", batch[0].sock.String(), "epoch", batch[0].epoch, "error", err)
		}
		return
	}
	for _, j := range batch {
		if err := n.releaseTx(j.ctx, []releaseJob{j}); err != nil && j.ctx.Err() == nil {
			n.o.Log.Warn("cluster: release socket", "socket", j.sock.String(), "epoch", j.epoch, "error", err)
		}
	}
}

func (n *Node) releaseTx(ctx context.Context, batch []releaseJob) error {
	return udb.Update(ctx, n.o.DB, func(tx udb.Transaction) error {
		for _, j := range batch {
			if j.before != nil {
				if err := j.before(ctx, tx); err != nil {
					if _, ok := rerr.As(err); !ok {
						return err
					}
				}
			}
			if _, err := opnode.ReleaseSocket(ctx, tx, opnode.ReleaseSocketInput{Socket: j.sock, NodeID: n.o.ID, Epoch: j.epoch}); err != nil {
				return err
			}
		}
		return nil
	})
}

// Releasing is how many releases are in flight (waiting for a token or committing).
func (n *Node) Releasing() int64 { return n.releasing.Load() }

// Preserve makes later releases keep ownership (a restart of this node at this address).
func (n *Node) Preserve() { n.preserve.Store(true) }

// ReleaseAll releases every ownership record this node holds for a runner or an envoy whose
// socket is not live here (those are released by their sockets as they close), at most
// Options.Releases at once, and returns when all have settled or ctx ends.
func (n *Node) ReleaseAll(ctx context.Context) error {
	var after *keys.Socket
	var pending []chan struct{}
	defer func() {
		for _, d := range pending {
			<-d
		}
	}()
	for {
		page, err := udb.ReadTransact(ctx, n.o.DB, func(r udb.ReadTransaction) ([]opnode.Held, error) {
			return opnode.ListHeld(ctx, r, opnode.ListHeldInput{NodeID: n.o.ID, After: after, Limit: 1000})
		})
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		for _, h := range page {
			if n.preserve.Load() {
				return nil
			}
			if n.local.Holds(actor.Host{Socket: h.Socket}) {
				continue
			}
			j := releaseJob{ctx: ctx, sock: h.Socket, epoch: h.Epoch, done: make(chan struct{})}
			n.push(j) // blocks while the queue is full, so the listing stays near the releases
			pending = append(pending, j.done)
		}
		after = &page[len(page)-1].Socket
	}
}

// Held counts the ownership records this node still holds (a drain's progress).
func (n *Node) Held(ctx context.Context) (int, error) {
	res, err := udb.ReadTransact(ctx, n.o.DB, func(r udb.ReadTransaction) ([]opnode.Held, error) {
		return opnode.ListHeld(ctx, r, opnode.ListHeldInput{NodeID: n.o.ID})
	})
	if err != nil {
		return 0, err
	}
	return len(res), nil
}
