package envoyws_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/envoyws"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// fakeCluster records what an envoy server asks of the datacenter's nodes (wsconn.Cluster);
// its releases run their before in a transaction of db, as engine/cluster's do.
type fakeCluster struct {
	db udb.Database

	mu       sync.Mutex
	epoch    int64
	claims   map[actor.Host]int64
	released map[actor.Host]int64
	sent     map[actor.Host]int
	closes   map[actor.Host]string
	evicts   map[id.ID]bool
}

func newFakeCluster(db udb.Database) *fakeCluster {
	return &fakeCluster{db: db, claims: map[actor.Host]int64{}, released: map[actor.Host]int64{},
		sent: map[actor.Host]int{}, closes: map[actor.Host]string{}, evicts: map[id.ID]bool{}}
}

func (f *fakeCluster) ClaimSocket(_ context.Context, h actor.Host) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epoch++
	f.claims[h] = f.epoch
	return f.epoch, nil
}

func (f *fakeCluster) ReleaseSocket(ctx context.Context, h actor.Host, epoch int64, before func(context.Context, udb.Transaction) error) {
	_, err := f.db.Transact(ctx, func(tx udb.Transaction) (any, error) {
		if err := before(ctx, tx); err != nil {
			if _, ok := rerr.As(err); !ok {
				return nil, err
			}
		}
		return nil, nil
	})
	if err != nil {
		panic(err) // a store error in a test store
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released[h] = epoch
}

func (f *fakeCluster) SendCommands(h actor.Host, cmds []actor.Command) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent[h] += len(cmds)
}

func (f *fakeCluster) CloseSocket(h actor.Host, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, _ := rerr.As(err)
	f.closes[h] = e.Key()
}

func (f *fakeCluster) Evict(connID id.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.evicts[connID] = true
}

func (f *fakeCluster) locked(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

// TestClusterOwnership: with Options.Cluster an envoy's socket is claimed at registration
// under (namespace, envoy key), its release carries the claimed epoch with the envoy's
// expiry (refused as stale when a newer socket took over elsewhere), and commands, closes and
// evictions for envoys not held here go to the cluster.
func TestClusterOwnership(t *testing.T) {
	e := start(t, envoyws.Options{PingInterval: time.Hour})
	fa, fb := newFakeCluster(e.db), newFakeCluster(e.db)
	// start built e.srv without a cluster: serve two nodes of their own on its store.
	srvA, hsA := serve(t, e.db, envoyws.Options{PingInterval: time.Hour, Cluster: fa})
	srvB, hsB := serve(t, e.db, envoyws.Options{PingInterval: time.Hour, Cluster: fb})
	one, two := actor.EnvoyHost(e.ns, "envoy-1"), actor.EnvoyHost(e.ns, "envoy-2")

	old, _ := connect(t, e, hsA, "envoy-1")
	oldConn := connID(t, e, "envoy-1")
	// The claim follows the registration's commit, which connect waits for.
	var epoch int64
	eventually(t, "node A's claim", func() bool { fa.locked(func() { epoch = fa.claims[one] }); return epoch != 0 })
	if !srvA.Holds(e.ns, "envoy-1") || srvB.Holds(e.ns, "envoy-1") {
		t.Fatalf("claims %v; A holds %v, B holds %v", fa.claims, srvA.Holds(e.ns, "envoy-1"), srvB.Holds(e.ns, "envoy-1"))
	}

	// Not here: to the cluster. Here: delivered on the socket, nothing to the cluster.
	stop := actor.Command{Host: two, Checkpoint: actor.Checkpoint{ActorID: id.New(label)}}
	srvA.SendEnvoyCommands(two, []actor.Command{stop})
	srvA.CloseEnvoy(e.ns, "envoy-2", rerr.WS("eviction"))
	if srvA.EvictHere(id.New(label)) {
		t.Fatal("EvictHere closed a socket of an unknown connection")
	}
	fa.locked(func() {
		if fa.sent[two] != 1 || fa.closes[two] != "ws.eviction" || fa.sent[one] != 0 || fa.closes[one] != "" {
			t.Errorf("to the cluster: commands %v, closes %v", fa.sent, fa.closes)
		}
	})

	// The envoy reconnects to node B: B claims it and evicts the old socket through the
	// cluster (it is not on B); A, told over the bus, closes it.
	s2, _ := connect(t, e, hsB, "envoy-1")
	eventually(t, "node B's claim and its eviction of the old connection", func() bool {
		var done bool
		fb.locked(func() { done = fb.claims[one] != 0 && fb.evicts[oldConn] })
		return done
	})
	if !srvA.EvictHere(oldConn) {
		t.Fatal("node A does not hold the old socket")
	}
	old.closed(websocket.StatusNormalClosure, "ws.eviction")
	eventually(t, "node A's release", func() bool {
		var got int64
		fa.locked(func() { got = fa.released[one] })
		return got == epoch
	})
	if expired(t, e, "envoy-1") {
		t.Fatal("the old socket's release expired the envoy its new socket holds")
	}

	// The new socket ends: B releases its record with the envoy's expiry.
	_ = s2.c.Close(websocket.StatusNormalClosure, "")
	eventually(t, "node B's release", func() bool {
		var got int64
		fb.locked(func() { got = fb.released[one] })
		return got != 0
	})
	if !expired(t, e, "envoy-1") {
		t.Fatal("the envoy's last socket ended without expiring it")
	}
}
