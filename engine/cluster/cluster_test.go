package cluster

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/guard"
	"github.com/berthhq/berth/ops/actor"
	opnode "github.com/berthhq/berth/ops/node"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/pubsub"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeLocal is a node's runner and envoy sockets: it holds the hosts in held and records
// what the bus delivered.
type fakeLocal struct {
	mu     sync.Mutex
	held   map[actor.Host]bool
	cmds   map[actor.Host][]actor.Command
	closed map[actor.Host]rerr.Code
	evict  map[id.ID]bool // held connections: whether they were evicted
	actors [][]id.ID      // what ActorsChanged got, call by call
	got    chan struct{}
}

func newFakeLocal(held ...actor.Host) *fakeLocal {
	l := &fakeLocal{held: map[actor.Host]bool{}, cmds: map[actor.Host][]actor.Command{}, closed: map[actor.Host]rerr.Code{}, evict: map[id.ID]bool{}, got: make(chan struct{}, 16)}
	for _, h := range held {
		l.held[h] = true
	}
	return l
}

// Changed records what the bus said changed (Options.Changes).
func (l *fakeLocal) Changed(actors []id.ID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.actors = append(l.actors, actors)
	l.got <- struct{}{}
}

func (l *fakeLocal) SendCommandsHere(h actor.Host, cmds []actor.Command) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held[h] {
		return false
	}
	l.cmds[h] = append(l.cmds[h], cmds...)
	l.got <- struct{}{}
	return true
}

func (l *fakeLocal) CloseHere(h actor.Host, err error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held[h] {
		return false
	}
	l.closed[h] = rerr.CodeOf(err)
	l.got <- struct{}{}
	return true
}

// EvictHere evicts connID if it is one of the held connections (evict's keys).
func (l *fakeLocal) EvictHere(connID id.ID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, held := l.evict[connID]; !held {
		return false
	}
	l.evict[connID] = true
	l.got <- struct{}{}
	return true
}

func (l *fakeLocal) Holds(h actor.Host) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[h]
}

func (l *fakeLocal) OpenTunnel(actor.Host, proto.GatewayID, *proto.RequestID, uint16) (guard.ResumableTunnel, error) {
	return nil, wsconn.ErrNoSocket
}

func (l *fakeLocal) GatewayID() proto.GatewayID { return proto.GatewayID{} }

func (l *fakeLocal) await(t *testing.T) {
	t.Helper()
	select {
	case <-l.got:
	case <-time.After(30 * time.Second):
		t.Fatal("nothing delivered within 30s")
	}
}

func openStore(t *testing.T) udb.Database {
	t.Helper()
	db, err := udb.Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func startNode(t *testing.T, db udb.Database, bus pubsub.PubSub, nodeID string, releases int, local *fakeLocal) *Node {
	t.Helper()
	n := New(Options{DB: db, Bus: bus, ID: nodeID, Label: 1, Lease: 3 * time.Second, Releases: releases, Local: local, Changes: local})
	if err := n.Start(context.Background(), "http://"+nodeID+".internal:6421"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	return n
}

// TestBusReachesTheHoldingNode: commands (an envoy's with their stop reasons), closes and
// evictions sent from one node reach the node that holds the runner's or the envoy's socket.
func TestBusReachesTheHoldingNode(t *testing.T) {
	db, bus := openStore(t), pubsub.NewMemory()
	t.Cleanup(func() { _ = bus.Close() })
	runner, envoy := actor.RunnerHost(id.New(1)), actor.EnvoyHost(id.New(1), "envoy-b")
	a, lb := newFakeLocal(), newFakeLocal(runner, envoy)
	na := startNode(t, db, bus, "a", 8, a)
	startNode(t, db, bus, "b", 8, lb)

	for _, h := range []actor.Host{runner, envoy} {
		conn := id.New(1)
		lb.mu.Lock()
		lb.evict[conn] = false
		lb.mu.Unlock()
		key := "k"
		start := actor.Command{Host: h, Checkpoint: actor.Checkpoint{ActorID: id.New(1), Generation: 2}, Start: &actor.Start{
			Name: "counter", Key: &key, CreateTs: 7, Input: []byte{0, 1}, Hibernating: []actor.HibernatingRequest{{GatewayID: [4]byte{1}, RequestID: [4]byte{2}}},
		}}
		stop := actor.Command{Host: h, Checkpoint: actor.Checkpoint{ActorID: start.Checkpoint.ActorID, Generation: 2, Index: 3}, StopReason: actor.StopReasonSleep}
		if h.IsEnvoy() {
			stop.StopReason = actor.StopReasonGoingAway
		}
		na.SendCommands(h, []actor.Command{start, stop})
		lb.await(t)
		na.CloseSocket(h, rerr.WSEviction())
		lb.await(t)
		na.Evict(conn)
		lb.await(t)
		lb.mu.Lock()
		got := lb.cmds[h]
		if !reflect.DeepEqual(got, []actor.Command{start, stop}) || lb.closed[h] != rerr.CodeWSEviction || !lb.evict[conn] {
			t.Errorf("delivered to b for %v: commands %+v, closes %v, evictions %v", h, got, lb.closed, lb.evict)
		}
		lb.mu.Unlock()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cmds) != 0 || len(a.closed) != 0 {
		t.Errorf("node a, holding nothing, took %v and %v", a.cmds, a.closed)
	}
}

// TestAnnounceActors: the actors one node's lifecycle changed reach every other node's, and
// not its own, which has applied them already.
func TestAnnounceActors(t *testing.T) {
	db, bus := openStore(t), pubsub.NewMemory()
	t.Cleanup(func() { _ = bus.Close() })
	a, b := newFakeLocal(), newFakeLocal()
	na := startNode(t, db, bus, "a", 8, a)
	nb := startNode(t, db, bus, "b", 8, b)
	changed := []id.ID{id.New(1), id.New(1)}
	na.AnnounceActors(changed)
	b.await(t)
	b.mu.Lock()
	got := b.actors
	b.mu.Unlock()
	if len(got) != 1 || !slices.Equal(got[0], changed) {
		t.Fatalf("node b got %v, want %v", got, changed)
	}
	// b's eviction of a connection a holds, published after the announcement, reaches a: a
	// node takes the bus's messages in order, so once a has it, it has had (and dropped)
	// the announcement.
	conn := id.New(1)
	a.mu.Lock()
	a.evict[conn] = false
	a.mu.Unlock()
	nb.Evict(conn)
	a.await(t)
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.actors) != 0 {
		t.Fatalf("node a got its own announcement: %v", a.actors)
	}
}

// TestReleaseAll: a node releases every record it holds but those of live sockets, in
// batches within its bound; a preserve shutdown releases nothing.
func TestReleaseAll(t *testing.T) {
	ctx := context.Background()
	db, bus := openStore(t), pubsub.NewMemory()
	t.Cleanup(func() { _ = bus.Close() })
	live := actor.EnvoyHost(id.New(1), "envoy-live")
	n := startNode(t, db, bus, "a", 3, newFakeLocal(live))
	if n.releases.Workers*n.releases.Batch > 3 {
		t.Fatalf("%d workers × %d per batch exceed BERTH_RELEASES=3", n.releases.Workers, n.releases.Batch)
	}
	for _, rid := range append([]actor.Host{live, actor.EnvoyHost(id.New(1), "envoy-gone")}, hosts(100)...) {
		if _, err := n.ClaimSocket(ctx, rid); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.ReleaseAll(ctx); err != nil {
		t.Fatal(err)
	}
	if h, err := n.Held(ctx); err != nil || h != 1 || n.Releasing() != 0 {
		t.Fatalf("after ReleaseAll: %d held (want the live socket's), %d releasing, %v", h, n.Releasing(), err)
	}
	epoch := heldEpoch(t, db, "a", live)
	n.ReleaseSocket(ctx, live, epoch+1, nil) // a stale epoch: not ours to clear
	if h, _ := n.Held(ctx); h != 0 {
		t.Fatalf("a stale release left the index entry: %d held", h)
	}

	p := startNode(t, db, bus, "p", 3, newFakeLocal())
	for _, rid := range hosts(10) {
		if _, err := p.ClaimSocket(ctx, rid); err != nil {
			t.Fatal(err)
		}
	}
	p.Preserve()
	if err := p.ReleaseAll(ctx); err != nil {
		t.Fatal(err)
	}
	if h, _ := p.Held(ctx); h != 10 {
		t.Fatalf("preserve released records: %d held, want 10", h)
	}
}

// TestStartReleasesStaleRecords: a node started with the id of one that was killed holding
// sockets (its lease still running) releases that run's records: it holds none of them.
func TestStartReleasesStaleRecords(t *testing.T) {
	ctx := context.Background()
	db, bus := openStore(t), pubsub.NewMemory()
	t.Cleanup(func() { _ = bus.Close() })
	local := newFakeLocal()
	killed := New(Options{DB: db, Bus: bus, ID: "a", Label: 1, Lease: time.Minute, Releases: 8, Local: local, Changes: local})
	if err := killed.Start(ctx, "http://127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts(20) {
		if _, err := killed.ClaimSocket(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	killed.Stop() // as a SIGKILL leaves it: lease and records in place
	if h, _ := killed.Held(ctx); h != 20 {
		t.Fatalf("%d records before the restart, want 20", h)
	}
	restarted := startNode(t, db, bus, "a", 8, newFakeLocal())
	if h, err := restarted.Held(ctx); err != nil || h != 0 {
		t.Fatalf("after the restart %d records held, %v; want none", h, err)
	}
}

// TestRestartUnderANewIDHoldsNothing: a node without a configured id gets a new one at each
// start. Restarted after a SIGKILL, at the same address, it must not take its previous
// run's records (its lease still live) for another node holding those sockets, or the
// gateway would relay their requests to itself until that lease ran out.
func TestRestartUnderANewIDHoldsNothing(t *testing.T) {
	ctx := context.Background()
	db, bus := openStore(t), pubsub.NewMemory()
	t.Cleanup(func() { _ = bus.Close() })
	const address = "http://127.0.0.1:1"
	local := newFakeLocal()
	killed := New(Options{DB: db, Bus: bus, ID: "node-1", Label: 1, Lease: time.Minute, Releases: 8, Local: local, Changes: local})
	if err := killed.Start(ctx, address); err != nil {
		t.Fatal(err)
	}
	h := actor.RunnerHost(id.New(1))
	if _, err := killed.ClaimSocket(ctx, h); err != nil {
		t.Fatal(err)
	}
	killed.Stop() // as a SIGKILL leaves it: lease and record in place

	other := startNode(t, db, bus, "elsewhere", 8, newFakeLocal())
	if up, err := other.Connected(ctx, h); err != nil || !up {
		t.Fatalf("a node at another address: Connected = %v, %v; want the killed node's live record to count", up, err)
	}
	restarted := New(Options{DB: db, Bus: bus, ID: "node-2", Label: 1, Lease: time.Minute, Releases: 8, Local: newFakeLocal(), Changes: local})
	if err := restarted.Start(ctx, address); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(restarted.Stop)
	if up, err := restarted.Connected(ctx, h); err != nil || up {
		t.Fatalf("the node restarted at the same address: Connected = %v, %v; want false", up, err)
	}
}

// hosts is n runners.
func hosts(n int) []actor.Host {
	out := make([]actor.Host, n)
	for i := range out {
		out[i] = actor.RunnerHost(id.New(1))
	}
	return out
}

func heldEpoch(t *testing.T, db udb.Database, node string, want actor.Host) int64 {
	t.Helper()
	res, err := udb.ReadTransact(context.Background(), db, func(r udb.ReadTransaction) ([]opnode.Held, error) {
		return opnode.ListHeld(context.Background(), r, opnode.ListHeldInput{NodeID: node})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, held := range res {
		if held.Socket == want.Socket {
			return held.Epoch
		}
	}
	t.Fatalf("%s holds no record of %s", node, want)
	return 0
}
