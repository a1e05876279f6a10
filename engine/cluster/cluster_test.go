package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/berthhq/berth/engine/runnerws"
	opnode "github.com/berthhq/berth/ops/node"
	"github.com/berthhq/berth/pkg/id"
	proto "github.com/berthhq/berth/pkg/protocol/runner"
	"github.com/berthhq/berth/pkg/pubsub"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeLocal is a node's runner sockets: it holds the runners in held and records what the
// bus delivered.
type fakeLocal struct {
	mu     sync.Mutex
	held   map[id.ID]bool
	cmds   map[id.ID]int
	closed map[id.ID]string
	evict  map[id.ID]bool
	got    chan struct{}
}

func newFakeLocal(held ...id.ID) *fakeLocal {
	l := &fakeLocal{held: map[id.ID]bool{}, cmds: map[id.ID]int{}, closed: map[id.ID]string{}, evict: map[id.ID]bool{}, got: make(chan struct{}, 16)}
	for _, r := range held {
		l.held[r] = true
	}
	return l
}

func (l *fakeLocal) SendCommandsHere(rid id.ID, cmds []proto.CommandWrapper) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held[rid] {
		return false
	}
	l.cmds[rid] += len(cmds)
	l.got <- struct{}{}
	return true
}

func (l *fakeLocal) CloseRunnerHere(rid id.ID, err error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held[rid] {
		return false
	}
	e, _ := rerr.As(err)
	l.closed[rid] = e.Key()
	l.got <- struct{}{}
	return true
}

func (l *fakeLocal) EvictHere(connID id.ID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evict[connID] = true
	l.got <- struct{}{}
	return true
}

func (l *fakeLocal) Holds(rid id.ID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[rid]
}

func (l *fakeLocal) OpenTunnel(id.ID) (*runnerws.Tunnel, error) {
	return nil, runnerws.ErrNoRunnerSocket
}

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

func startNode(t *testing.T, db udb.Database, bus pubsub.PubSub, nodeID string, releases int, local Local) *Node {
	t.Helper()
	n := New(Options{DB: db, Bus: bus, ID: nodeID, Label: 1, Lease: 3 * time.Second, Releases: releases})
	if err := n.Start(context.Background(), local, "http://"+nodeID+".internal:6421"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	return n
}

// TestBusReachesTheHoldingNode: commands, closes and evictions sent from one node reach the
// node that holds the socket.
func TestBusReachesTheHoldingNode(t *testing.T) {
	db, bus := openStore(t), pubsub.NewMemory()
	t.Cleanup(func() { _ = bus.Close() })
	rid, conn := id.New(1), id.New(1)
	a, lb := newFakeLocal(), newFakeLocal(rid)
	na := startNode(t, db, bus, "a", 8, a)
	startNode(t, db, bus, "b", 8, lb)

	na.SendCommands(rid, []proto.CommandWrapper{{Checkpoint: proto.ActorCheckpoint{ActorID: "x"}, Inner: proto.CommandStopActor{}}})
	lb.await(t)
	na.CloseRunner(rid, rerr.WS("eviction"))
	lb.await(t)
	na.Evict(conn)
	lb.await(t)
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if lb.cmds[rid] != 1 || lb.closed[rid] != "ws.eviction" || !lb.evict[conn] {
		t.Fatalf("delivered to b: commands %v, closes %v, evictions %v", lb.cmds, lb.closed, lb.evict)
	}
}

// TestReleaseAll: a node releases every record it holds but those of live sockets, in
// batches within its bound; a preserve shutdown releases nothing.
func TestReleaseAll(t *testing.T) {
	ctx := context.Background()
	db, bus := openStore(t), pubsub.NewMemory()
	t.Cleanup(func() { _ = bus.Close() })
	live := id.New(1)
	n := startNode(t, db, bus, "a", 3, newFakeLocal(live))
	if n.releases.Workers*n.releases.Batch > 3 {
		t.Fatalf("%d workers × %d per batch exceed BERTH_RELEASES=3", n.releases.Workers, n.releases.Batch)
	}
	for _, rid := range append([]id.ID{live}, ids(100)...) {
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
	for _, rid := range ids(10) {
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

func ids(n int) []id.ID {
	out := make([]id.ID, n)
	for i := range out {
		out[i] = id.New(1)
	}
	return out
}

func heldEpoch(t *testing.T, db udb.Database, node string, rid id.ID) int64 {
	t.Helper()
	res, err := db.ReadTransact(context.Background(), func(r udb.ReadTransaction) (any, error) {
		return opnode.ListHeld(context.Background(), r, opnode.ListHeldInput{NodeID: node})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range res.([]opnode.Held) {
		if h.RunnerID == rid {
			return h.Epoch
		}
	}
	t.Fatalf("%s holds no record of %s", node, rid)
	return 0
}
