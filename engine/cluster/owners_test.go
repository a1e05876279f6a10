package cluster

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/guard"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/pubsub"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// readCounting counts the read transactions run through it.
type readCounting struct {
	udb.Database
	n atomic.Int64
}

func (d *readCounting) ReadTransact(ctx context.Context, f func(udb.ReadTransaction) (any, error)) (any, error) {
	d.n.Add(1)
	return d.Database.ReadTransact(ctx, f)
}

// relayServer is a node serving relays of the socket it holds until gone is set.
type relayServer struct {
	*fakeLocal
	gone   atomic.Bool
	opened atomic.Int64
}

func (l *relayServer) OpenTunnel(actor.Host, proto.GatewayID, *proto.RequestID, uint16) (guard.ResumableTunnel, error) {
	if l.gone.Load() {
		return nil, wsconn.ErrNoSocket
	}
	l.opened.Add(1)
	return &flowTunnel{out: make(chan proto.ToServerTunnelMessageKind), closed: make(chan struct{})}, nil
}

func startRelayNode(t *testing.T, db udb.Database, bus pubsub.PubSub, nodeID string, h actor.Host) (*Node, *relayServer) {
	t.Helper()
	local := &relayServer{fakeLocal: newFakeLocal(h)}
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	n := New(Options{DB: db, Bus: bus, ID: nodeID, Label: 1, Lease: 3 * time.Second, Releases: 8, Local: local, Changes: local})
	handler = n.RelayHandler()
	if err := n.Start(context.Background(), srv.URL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	return n, local
}

// A node relaying requests to a socket another node holds looks the owner up once, not
// per request; when the socket moves to a third node, the next request is refused at the
// cached owner and goes to the new one, without failing.
func TestRelayOwnerCached(t *testing.T) {
	db, bus := openStore(t), pubsub.NewMemory()
	t.Cleanup(func() { _ = bus.Close() })
	h := actor.RunnerHost(id.New(1))
	nb, b := startRelayNode(t, db, bus, "b", h)
	if _, err := nb.ClaimSocket(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	reads := &readCounting{Database: db}
	na := New(Options{DB: reads, Bus: bus, ID: "a", Label: 1, Lease: 3 * time.Second, Releases: 8, Local: newFakeLocal(), Changes: newFakeLocal()})
	if err := na.Start(context.Background(), "http://a.internal:6421"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(na.Stop)

	relay := func(what string) {
		t.Helper()
		if ok, err := na.Connected(context.Background(), h); !ok || err != nil {
			t.Fatalf("%s: Connected %v, %v", what, ok, err)
		}
		tun, err := na.OpenTunnel(h)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		tun.Close()
	}
	before := reads.n.Load()
	for i := range 5 {
		relay(fmt.Sprint("request ", i+1))
	}
	if got := reads.n.Load() - before; got != 1 {
		t.Errorf("5 relayed requests read the store %d times, want 1", got)
	}
	if b.opened.Load() != 5 {
		t.Errorf("the owner opened %d tunnels, want 5", b.opened.Load())
	}

	nc, c := startRelayNode(t, db, bus, "c", h)
	if _, err := nc.ClaimSocket(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	b.gone.Store(true)
	before = reads.n.Load()
	relay("after the move")
	if c.opened.Load() != 1 {
		t.Errorf("the new owner opened %d tunnels, want 1", c.opened.Load())
	}
	if got := reads.n.Load() - before; got != 1 {
		t.Errorf("the request after the move read the store %d times, want 1", got)
	}
}
