package hostsock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/hostsock/hostsocktest"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// fake is a runner socket driven by the test: it answers pings by itself and hands every
// other message to the test.
type fake struct {
	t    *testing.T
	c    *websocket.Conn
	rid  id.ID
	msgs chan proto.ToClient
	done chan error
}

func newFake(t *testing.T, e *env, key string) *fake {
	t.Helper()
	c, ci := connect(t, e, "pool", key)
	f := &fake{t: t, c: c, rid: id.MustParse(ci.RunnerID), msgs: make(chan proto.ToClient, 64), done: make(chan error, 1)}
	go func() {
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				f.done <- err
				close(f.msgs)
				return
			}
			m, err := proto.DecodeToClient(b, 7)
			if err != nil {
				f.done <- err
				close(f.msgs)
				return
			}
			if p, ok := m.(proto.ToClientPing); ok {
				pong, _ := proto.EncodeToServer(proto.ToServerPong{Ts: p.Ts}, 7)
				_ = c.Write(context.Background(), websocket.MessageBinary, pong)
				continue
			}
			f.msgs <- m
		}
	}()
	t.Cleanup(func() {
		_ = c.CloseNow()
		for range f.msgs {
		}
	})
	return f
}

// next returns the next message of type T, skipping event acks unless T is one.
func next[T proto.ToClient](f *fake) T {
	f.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-f.msgs:
			if !ok {
				f.t.Fatalf("socket ended waiting for %T: %v", *new(T), <-f.done)
			}
			if v, ok := m.(T); ok {
				return v
			}
			if _, ack := m.(proto.ToClientAckEvents); ack {
				continue
			}
			f.t.Fatalf("got %T, want %T", m, *new(T))
		case <-timeout:
			f.t.Fatalf("timed out waiting for %T", *new(T))
		}
	}
}

// closedWith waits for the socket to end and checks it closed with code and reason prefix.
func (f *fake) closedWith(code websocket.StatusCode, prefix string) {
	f.t.Helper()
	for range f.msgs {
	}
	err := <-f.done
	f.done <- err
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != code || !strings.HasPrefix(ce.Reason, prefix+"#") {
		f.t.Fatalf("socket ended with %v, want %d %s", err, code, prefix)
	}
}

// acked waits for the acknowledgement of the event at cp's generation and index idx.
func (f *fake) acked(cp proto.ActorCheckpoint, idx int64) {
	f.t.Helper()
	for {
		ack := next[proto.ToClientAckEvents](f)
		for _, a := range ack.LastEventCheckpoints {
			if a.ActorID == cp.ActorID && a.Generation == cp.Generation && a.Index >= idx {
				return
			}
		}
	}
}

func (f *fake) events(evs ...proto.EventWrapper) {
	f.t.Helper()
	send(f.t, f.c, proto.ToServerEvents(evs))
}

func event(cp proto.ActorCheckpoint, idx int64, e proto.Event) proto.EventWrapper {
	cp.Index = idx
	return proto.EventWrapper{Checkpoint: cp, Inner: e}
}

var (
	evRunning   = proto.EventActorStateUpdate{State: proto.ActorStateRunning{}}
	evStoppedOK = proto.EventActorStateUpdate{State: proto.ActorStateStopped{Code: proto.StopCodeOK}}
	evSleep     = proto.EventActorIntent{Intent: proto.ActorIntentSleep{}}
	evStopped   = proto.EventActorStateUpdate{State: proto.ActorStateStopped{Code: proto.StopCodeError}}
)

func createActor(t *testing.T, e *env, policy string) actor.Actor {
	t.Helper()
	a, err := e.node.Lifecycle.Actors.Create(context.Background(), actor.CreateInput{
		Namespace: defaultNamespace(t, e), NamespaceName: "default", Name: "counter", Input: []byte("hi"),
		Selector: "pool", CrashPolicy: policy,
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func actorState(t *testing.T, e *env, aid id.ID) keys.ActorState {
	t.Helper()
	res, err := udb.ReadTransact(context.Background(), e.db, func(r udb.ReadTransaction) (keys.ActorState, error) {
		st, _, err := keys.Get(context.Background(), r.Snapshot(), keys.ActorStateKey{ActorID: aid})
		return st, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The whole lifecycle over a real socket: create → start command → Running (acked) → sleep
// intent → stop command → Stopped → sleeping → wake → start of generation 1 → destroy.
func TestActorLifecycleOverSocket(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	r := newFake(t, e, "k")
	a := createActor(t, e, actor.CrashSleep)
	cmds := next[proto.ToClientCommands](r)
	start, ok := cmds[0].Inner.(proto.CommandStartActor)
	if len(cmds) != 1 || !ok || cmds[0].Checkpoint.ActorID != a.ActorID.String() || string(start.Config.Input) != "hi" {
		t.Fatalf("commands %+v", cmds)
	}
	cp := cmds[0].Checkpoint
	r.events(event(cp, 0, evRunning))
	ack := next[proto.ToClientAckEvents](r)
	if len(ack.LastEventCheckpoints) != 1 || ack.LastEventCheckpoints[0].Index != 0 {
		t.Fatalf("ack %+v", ack)
	}
	if st := actorState(t, e, a.ActorID); st.Phase != keys.PhaseRunning {
		t.Fatalf("after Running: %s", st.Phase)
	}
	r.events(event(cp, 1, evSleep))
	stop := next[proto.ToClientCommands](r)
	if _, ok := stop[0].Inner.(proto.CommandStopActor); !ok || stop[0].Checkpoint.Index != 1 {
		t.Fatalf("sleep answered with %+v", stop)
	}
	r.events(event(cp, 2, evStopped))
	r.acked(cp, 2)
	if st := actorState(t, e, a.ActorID); st.Phase != keys.PhaseSleeping {
		t.Fatalf("after the sleep stop: %s", st.Phase)
	}
	if err := e.node.Lifecycle.Actors.Wake(context.Background(), a.ActorID); err != nil {
		t.Fatal(err)
	}
	wake := next[proto.ToClientCommands](r)
	if wake[0].Checkpoint.Generation != 1 {
		t.Fatalf("wake %+v, want generation 1", wake)
	}
	r.events(event(wake[0].Checkpoint, 0, evRunning))
	r.acked(wake[0].Checkpoint, 0)
	destroyed := make(chan error, 1)
	go func() { destroyed <- e.node.Lifecycle.Actors.Destroy(context.Background(), a.ActorID, true) }()
	bye := next[proto.ToClientCommands](r)
	r.events(event(bye[0].Checkpoint, 1, evStopped))
	if err := <-destroyed; err != nil {
		t.Fatal(err)
	}
	if st := actorState(t, e, a.ActorID); st.Phase != keys.PhaseDestroyed {
		t.Fatalf("after destroy: %s", st.Phase)
	}
}

// A runner that reconnects gets the start of an actor it never confirmed again, after its
// init; an actor it confirmed is not started twice.
func TestReplayAfterReconnect(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	r := newFake(t, e, "k")
	confirmed := createActor(t, e, actor.CrashSleep)
	c1 := next[proto.ToClientCommands](r)
	r.events(event(c1[0].Checkpoint, 0, evRunning))
	r.acked(c1[0].Checkpoint, 0)
	unconfirmed := createActor(t, e, actor.CrashSleep)
	next[proto.ToClientCommands](r)
	_ = r.c.CloseNow()

	r2 := newFake(t, e, "k")
	if r2.rid != r.rid {
		t.Fatal("runner id changed on reconnect")
	}
	replay := next[proto.ToClientCommands](r2)
	if len(replay) != 1 || replay[0].Checkpoint.ActorID != unconfirmed.ActorID.String() {
		t.Fatalf("replayed %+v; want only the unconfirmed start (not %s)", replay, confirmed.ActorID)
	}
}

// Without capacity an actor waits; a runner connecting takes it. A drained runner's actor
// moves to another runner, and the drained runner stops once it has left.
func TestQueueAndDrainMove(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	// The pool's config comes with its first runner; create one that drains away at once.
	first := newFake(t, e, "first")
	send(t, first.c, proto.ToServerStopping{})
	first.closedWith(websocket.StatusNormalClosure, "ws.eviction") // its reader has the socket

	a := createActor(t, e, actor.CrashRestart)
	if st := actorState(t, e, a.ActorID); st.Phase != keys.PhasePending {
		t.Fatalf("with no runner: %s", st.Phase)
	}
	r1 := newFake(t, e, "r1")
	c := next[proto.ToClientCommands](r1)
	r1.events(event(c[0].Checkpoint, 0, evRunning))
	r1.acked(c[0].Checkpoint, 0)

	r2 := newFake(t, e, "r2")
	if err := e.node.Lifecycle.Runners.Drain(context.Background(), r1.rid, id.ID{}); err != nil {
		t.Fatal(err)
	}
	stop := next[proto.ToClientCommands](r1)
	r1.events(event(stop[0].Checkpoint, 1, evStoppedOK))
	moved := next[proto.ToClientCommands](r2)
	if moved[0].Checkpoint.ActorID != a.ActorID.String() || moved[0].Checkpoint.Generation != 1 {
		t.Fatalf("on r2: %+v", moved)
	}
	r1.closedWith(websocket.StatusNormalClosure, "ws.eviction")
}
