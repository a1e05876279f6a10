package runner_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coder/websocket"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
	"github.com/berthhq/berth/sdk/runner"
	"github.com/berthhq/berth/sdk/runner/runnertest"
)

// KV against the scripted engine: the request frames, their ids, and what happens across a
// reconnect. The semantics against the real engine are in engine_actors_test.go.

func TestKVRequestsScripted(t *testing.T) {
	p := runnertest.NewProbe()
	f, _, s := hostRunner(t, p, func(c *runner.Config) { c.KVTimeout = runnertest.Wait })
	s.send(proto.ToClientCommands{startCmd("a1", "probe", 0)})
	ac := runnertest.Next(t, p.Starts, "Start")
	expectEvent(s, "a1", 0, 0, running)
	kv := ac.KV()
	ctx := context.Background()

	errc := make(chan error, 4)
	go func() { errc <- kv.Put(ctx, []byte("k"), []byte("v")) }()
	req := expect[proto.ToServerKvRequest](s)
	if put, ok := req.Data.(proto.KvPutRequest); req.ActorID != "a1" || req.RequestID != 0 || !ok ||
		len(put.Keys) != 1 || string(put.Keys[0]) != "k" || string(put.Values[0]) != "v" {
		t.Fatalf("request %+v", req)
	}
	s.send(proto.ToClientKvResponse{RequestID: 0, Data: proto.KvPutResponse{}})
	if err := runnertest.Next(t, errc, "Put"); err != nil {
		t.Fatal(err)
	}

	// Get returns the found keys in the order asked, whatever the engine's order.
	type getRes struct {
		es  []runner.Entry
		err error
	}
	gets := make(chan getRes, 1)
	go func() {
		es, err := kv.GetMany(ctx, [][]byte{[]byte("x"), []byte("missing"), []byte("y")})
		gets <- getRes{es, err}
	}()
	req = expect[proto.ToServerKvRequest](s)
	if req.RequestID != 1 {
		t.Fatalf("request id %d, want 1", req.RequestID)
	}
	md := proto.KvMetadata{Version: []byte("v1"), UpdateTs: 1700000000000}
	s.send(proto.ToClientKvResponse{RequestID: 1, Data: proto.KvGetResponse{
		Keys: [][]byte{[]byte("y"), []byte("x")}, Values: [][]byte{[]byte("Y"), []byte("X")}, Metadata: []proto.KvMetadata{md, md}}})
	g := runnertest.Next(t, gets, "GetMany")
	if g.err != nil || len(g.es) != 2 || string(g.es[0].Key) != "x" || string(g.es[0].Value) != "X" ||
		string(g.es[1].Value) != "Y" || string(g.es[1].Version) != "v1" || g.es[1].UpdatedAt.UnixMilli() != md.UpdateTs {
		t.Fatalf("GetMany: %+v %v", g.es, g.err)
	}

	// The engine refuses: *KVError with its message.
	go func() { errc <- kv.Delete(ctx, []byte("k")) }()
	expect[proto.ToServerKvRequest](s)
	s.send(proto.ToClientKvResponse{RequestID: 2, Data: proto.KvErrorResponse{Message: "actor does not belong to runner"}})
	var ke *runner.KVError
	if err := runnertest.Next(t, errc, "Delete"); !errors.As(err, &ke) || ke.Message != "actor does not belong to runner" {
		t.Fatalf("Delete: %v", err)
	}

	// One request sent but unanswered when the socket drops, one made while disconnected:
	// after the next init both go out, in order, before the unacked events.
	go func() { errc <- kv.Put(ctx, []byte("a"), []byte("1")) }()
	if req := expect[proto.ToServerKvRequest](s); req.RequestID != 3 {
		t.Fatalf("request id %d", req.RequestID)
	}
	f.refuse.Store(true)
	s.closeWith(websocket.StatusInternalError, "ws.going_away#x")
	<-f.refused // the runner is disconnected
	go func() { errc <- kv.Drop(ctx) }()
	f.refuse.Store(false)
	s2 := f.accept()
	s2.initRunner("runner-1", 0)
	// The Drop may be queued before the init (then it is resent right after request 3) or
	// made after it (then it follows the resent events); request 3 comes first either way.
	var ids []uint32
	events := 0
	for len(ids) < 2 || events < 1 {
		m, err := s2.recv()
		if err != nil {
			t.Fatal(err)
		}
		switch m := m.(type) {
		case proto.ToServerKvRequest:
			ids = append(ids, m.RequestID)
		case proto.ToServerEvents:
			if len(ids) == 0 {
				t.Fatal("events resent before the unanswered KV request")
			}
			events++
		default:
			t.Fatalf("unexpected %T", m)
		}
	}
	if ids[0] != 3 || ids[1] != 4 {
		t.Fatalf("request ids %v, want [3 4]", ids)
	}
	s2.send(proto.ToClientKvResponse{RequestID: 3, Data: proto.KvPutResponse{}})
	s2.send(proto.ToClientKvResponse{RequestID: 4, Data: proto.KvDropResponse{}})
	for range 2 {
		if err := runnertest.Next(t, errc, "the resent requests"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestKVTimeoutAndVersion(t *testing.T) {
	p := runnertest.NewProbe()
	_, _, s := hostRunner(t, p, func(c *runner.Config) {
		c.KVTimeout = 50 * time.Millisecond
		c.ProtocolVersion = 6
	})
	s.send(proto.ToClientCommands{startCmd("a1", "probe", 0)})
	ac := runnertest.Next(t, p.Starts, "Start")
	expectEvent(s, "a1", 0, 0, running)
	if _, _, err := ac.KV().Get(context.Background(), []byte("k")); !errors.Is(err, runner.ErrKVTimeout) {
		t.Fatalf("Get without answer: %v", err)
	}
	expect[proto.ToServerKvRequest](s)
	// v6 has no delete range: refused before anything is sent.
	if err := ac.KV().DeleteRange(context.Background(), []byte("a"), []byte("b")); err == nil {
		t.Fatal("DeleteRange over v6 succeeded")
	}
	// A late answer is ignored.
	s.send(proto.ToClientKvResponse{RequestID: 0, Data: proto.KvGetResponse{}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ac.KV().Put(ctx, []byte("k"), []byte("v")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with an ended context: %v", err)
	}
}
