package hostsock_test

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthhq/berth/engine/hostsock/hostsocktest"
	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/guard"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/envoy"
	rp "github.com/berthhq/berth/sdk/protocol/runner"
)

// createOn creates an actor of pool (the envoy's) through the server's lifecycle.
func createOn(t *testing.T, e *envoyEnv) id.ID {
	t.Helper()
	a, err := e.node.Lifecycle.Actors.Create(context.Background(), actor.CreateInput{
		Namespace: e.ns, NamespaceName: "default", Name: "counter", Selector: pool, CrashPolicy: actor.CrashSleep,
	})
	if err != nil {
		t.Fatal(err)
	}
	return a.ActorID
}

// The start command of an actor placed on the envoy goes to its socket; until the envoy
// reports it running, a new socket of the envoy gets it again; once acknowledged and
// running, it is not replayed. Events are acknowledged; KV works for the envoy's actor and
// is refused for another actor.
func TestEnvoyCommandsEventsKV(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{})
	s, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	aid := createOn(t, e)
	startEnvoys := func(s *sock) proto.ActorCheckpoint {
		t.Helper()
		cmds := nextSkippingAcks[proto.ToEnvoyCommands](t, s)
		if _, ok := cmds[0].Inner.(proto.CommandStartActor); len(cmds) != 1 || !ok || cmds[0].Checkpoint.ActorID != aid.String() {
			t.Fatalf("commands %+v; want the start of %s", cmds, aid)
		}
		return cmds[0].Checkpoint
	}
	cp := startEnvoys(s)

	// A reconnect before Running: the start is replayed on the new socket.
	s2, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	if got := startEnvoys(s2); got != cp {
		t.Fatalf("replayed %+v, want %+v", got, cp)
	}
	s2.send(proto.ToRivetAckCommands{LastCommandCheckpoints: []proto.ActorCheckpoint{cp}})
	s2.send(proto.ToRivetEvents{{Checkpoint: proto.ActorCheckpoint{ActorID: cp.ActorID, Generation: cp.Generation}, Inner: proto.EventActorStateUpdate{State: proto.ActorStateRunning{}}}})
	if acks := nextEnvoy[proto.ToEnvoyAckEvents](s2); len(acks.LastEventCheckpoints) != 1 || acks.LastEventCheckpoints[0].ActorID != aid.String() {
		t.Fatalf("acks %+v", acks)
	}

	s2.send(proto.ToRivetKvRequest{ActorID: aid.String(), RequestID: 1, Data: proto.KvPutRequest{Keys: [][]byte{[]byte("k")}, Values: [][]byte{[]byte("v")}}})
	if r := nextEnvoy[proto.ToEnvoyKvResponse](s2); r.RequestID != 1 {
		t.Fatalf("put answered %+v", r)
	} else if _, ok := r.Data.(proto.KvPutResponse); !ok {
		t.Fatalf("put answered %+v", r.Data)
	}
	s2.send(proto.ToRivetKvRequest{ActorID: aid.String(), RequestID: 2, Data: proto.KvGetRequest{Keys: [][]byte{[]byte("k")}}})
	if r := nextEnvoy[proto.ToEnvoyKvResponse](s2); r.RequestID != 2 {
		t.Fatalf("get answered %+v", r)
	} else if g, ok := r.Data.(proto.KvGetResponse); !ok || len(g.Values) != 1 || string(g.Values[0]) != "v" {
		t.Fatalf("get answered %+v", r.Data)
	}
	other := createOn(t, e) // placed on envoy-1 too, but read from a socket of envoy-2
	s3, _ := connectEnvoy(t, e, e.hs, "envoy-2")
	s3.send(proto.ToRivetKvRequest{ActorID: other.String(), RequestID: 3, Data: proto.KvGetRequest{Keys: [][]byte{[]byte("k")}}})
	if r := nextEnvoy[proto.ToEnvoyKvResponse](s3); r.Data != (proto.KvErrorResponse{Message: "actor does not belong to envoy"}) {
		t.Fatalf("another envoy's actor: %+v", r.Data)
	}

	// Running and acknowledged: a reconnect replays nothing of this actor.
	s4, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	if cmds := nextSkippingAcks[proto.ToEnvoyCommands](t, s4); len(cmds) != 1 || cmds[0].Checkpoint.ActorID != other.String() {
		t.Fatalf("replay after running %+v; want only the other actor's start", cmds)
	}
}

// An acknowledgement of commands is committed off the socket's read loop: while its commit
// is held, the envoy's next request (here a KV read) is still answered; once it is let go,
// the acknowledged start is cleared from the store.
func TestEnvoyAckDoesNotHoldTheSocket(t *testing.T) {
	db, err := udb.Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	gate := &heldClears{Database: db, release: make(chan struct{}), committed: make(chan struct{}, 1)}
	var let sync.Once
	letGo := func() { let.Do(func() { close(gate.release) }) }
	e := startEnvoysOn(t, gate, hostsocktest.Config{})
	s, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	t.Cleanup(letGo) // before the server's and the store's cleanups, which wait for it
	aid := createOn(t, e)
	cmds := nextSkippingAcks[proto.ToEnvoyCommands](t, s)
	cp := cmds[0].Checkpoint
	begin, end := keys.EnvoyCommandsUpTo(e.ns, "envoy-1", aid, cp.Generation, cp.Index)
	gate.hold.Store(&keyRange{begin, end})

	s.send(proto.ToRivetAckCommands{LastCommandCheckpoints: []proto.ActorCheckpoint{cp}})
	s.send(proto.ToRivetKvRequest{ActorID: aid.String(), RequestID: 1, Data: proto.KvGetRequest{Keys: [][]byte{[]byte("k")}}})
	for deadline := time.Now().Add(10 * time.Second); ; {
		m, err := s.recv()
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("the KV read is not answered while the acknowledgement's commit is held (%v)", err)
		}
		if r, ok := m.(proto.ToEnvoyKvResponse); ok && r.RequestID == 1 {
			break
		}
	}
	if n := storedCommands(t, db, begin, end); n != 1 {
		t.Fatalf("%d stored commands while the acknowledgement is held, want 1", n)
	}
	letGo()
	for storedCommands(t, db, begin, end) != 0 {
		select {
		case <-gate.committed:
		case <-time.After(10 * time.Second):
			t.Fatal("the acknowledged start is still stored")
		}
	}
}

// heldClears is a store whose transactions that clear exactly the range hold wait for
// release before they commit.
type heldClears struct {
	udb.Database
	hold      atomic.Pointer[keyRange]
	release   chan struct{}
	committed chan struct{} // gets a value after each held transaction commits
}

type keyRange struct{ begin, end []byte }

func (d *heldClears) Transact(ctx context.Context, f func(udb.Transaction) (any, error)) (any, error) {
	held := false
	v, err := d.Database.Transact(ctx, func(tx udb.Transaction) (any, error) {
		rec := &clearRecorder{Transaction: tx, hold: d.hold.Load()}
		v, err := f(rec)
		if rec.matched {
			held = true
			<-d.release
		}
		return v, err
	})
	if held {
		select {
		case d.committed <- struct{}{}:
		default:
		}
	}
	return v, err
}

type clearRecorder struct {
	udb.Transaction
	hold    *keyRange
	matched bool
}

func (t *clearRecorder) ClearRange(begin, end []byte) {
	if t.hold != nil && bytes.Equal(begin, t.hold.begin) && bytes.Equal(end, t.hold.end) {
		t.matched = true
	}
	t.Transaction.ClearRange(begin, end)
}

// storedCommands counts the keys in [begin, end).
func storedCommands(t *testing.T, db udb.Database, begin, end []byte) int {
	t.Helper()
	kvs, err := udb.ReadTransact(context.Background(), db, func(r udb.ReadTransaction) ([]udb.KeyValue, error) {
		return r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{}).All(context.Background())
	})
	if err != nil {
		t.Fatal(err)
	}
	return len(kvs)
}

// A gateway tunnel to an actor on the envoy carries the request as ToEnvoyTunnelMessage and
// returns the envoy's ToRivetTunnelMessage in the runner protocol's shape.
func TestEnvoyTunnel(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{})
	s, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	if _, err := e.node.Registry.OpenTunnel(actor.EnvoyHost(e.ns, "envoy-2"), e.node.Registry.GatewayID(), nil, 0); err != wsconn.ErrNoSocket {
		t.Fatalf("tunnel to an envoy not here: %v", err)
	}
	tun, err := e.node.Registry.OpenTunnel(actor.EnvoyHost(e.ns, "envoy-1"), e.node.Registry.GatewayID(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tun.Close()
	if err := tun.Send(rp.ToClientRequestStart{ActorID: "a", Method: "GET", Path: "/x", Headers: []rp.Header{{Name: "h", Value: "v"}}}); err != nil {
		t.Fatal(err)
	}
	m := nextEnvoy[proto.ToEnvoyTunnelMessage](s)
	req, ok := m.MessageKind.(proto.ToEnvoyRequestStart)
	if !ok || req.Method != "GET" || req.Path != "/x" || len(req.Headers) != 1 || m.MessageID.MessageIndex != 0 {
		t.Fatalf("tunnel message %+v", m)
	}
	s.send(proto.ToRivetTunnelMessage{MessageID: m.MessageID, MessageKind: proto.ToRivetResponseStart{Status: 204}})
	got, err := tun.Recv(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := got.(rp.ToServerResponseStart); !ok || r.Status != 204 {
		t.Fatalf("response %+v", got)
	}

	// The socket's end closes the tunnels still open on it, and no new one opens.
	waiting, err := e.node.Registry.OpenTunnel(actor.EnvoyHost(e.ns, "envoy-1"), e.node.Registry.GatewayID(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.c.CloseNow()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := waiting.Recv(ctx); err != wsconn.ErrTunnelClosed {
		t.Fatalf("Recv on a tunnel of a closed socket: %v", err)
	}
	if _, err := e.node.Registry.OpenTunnel(actor.EnvoyHost(e.ns, "envoy-1"), e.node.Registry.GatewayID(), nil, 0); err != wsconn.ErrNoSocket {
		t.Fatalf("tunnel to a closed socket: %v", err)
	}
}

// A socket carries at most MaxTunnels tunnels: one more is 503 guard.host_overloaded at
// once, and a closed tunnel frees its place.
func TestTunnelsPerHost(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{MaxTunnels: 2})
	connectEnvoy(t, e, e.hs, "envoy-1")
	h := actor.EnvoyHost(e.ns, "envoy-1")
	var open []guard.ResumableTunnel
	for range 2 {
		tun, err := e.node.Registry.OpenTunnel(h, e.node.Registry.GatewayID(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, tun)
	}
	if _, err := e.node.Registry.OpenTunnel(h, e.node.Registry.GatewayID(), nil, 0); !rerr.Is(err, rerr.CodeGuardHostOverloaded) {
		t.Fatalf("a third tunnel: %v, want guard.host_overloaded", err)
	}
	open[0].Close()
	tun, err := e.node.Registry.OpenTunnel(h, e.node.Registry.GatewayID(), nil, 0)
	if err != nil {
		t.Fatalf("a tunnel after one closed: %v", err)
	}
	tun.Close()
	open[1].Close()
}
