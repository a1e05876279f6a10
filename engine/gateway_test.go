package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// echoRunner is a runner that starts every actor, answers HTTP with a JSON echo of the
// request and echoes WebSocket messages, and goes to sleep on request.
type echoRunner struct {
	t  *testing.T
	c  *websocket.Conn
	mu sync.Mutex
	// hibernate: sockets open with canHibernate, are acknowledged, and hibernate when
	// their actor stops; sockets holds the open ones by request, with their actor.
	hibernate bool
	// drop: WebSocket messages are dropped unanswered and unacknowledged, as a runner drops
	// those that reach it as their actor stops.
	drop      bool
	dropped   chan struct{} // one per message dropped
	sockets   map[proto.RequestID]string
	lastIndex map[proto.RequestID]uint16
	gateway   proto.GatewayID
	// next event index by actor generation
	idx    map[proto.ActorCheckpoint]int64
	starts chan proto.ActorCheckpoint
}

func newEchoRunner(t *testing.T, ctx context.Context, e *Engine) *echoRunner {
	c, _ := connectRunner(t, ctx, e.PublicAddr(), "echo-"+id.New(1).String(), "tok")
	r := &echoRunner{t: t, c: c, idx: map[proto.ActorCheckpoint]int64{}, starts: make(chan proto.ActorCheckpoint, 16),
		dropped: make(chan struct{}, 16),
		sockets: map[proto.RequestID]string{}, lastIndex: map[proto.RequestID]uint16{}}
	go r.serve(ctx)
	return r
}

func (r *echoRunner) send(ctx context.Context, m proto.ToServer) {
	b, err := proto.EncodeToServer(m, 7)
	if err != nil {
		r.t.Error(err)
		return
	}
	_ = r.c.Write(ctx, websocket.MessageBinary, b)
}

// event sends the next event of the actor generation cp.
func (r *echoRunner) event(ctx context.Context, cp proto.ActorCheckpoint, ev proto.Event) {
	r.mu.Lock()
	key := proto.ActorCheckpoint{ActorID: cp.ActorID, Generation: cp.Generation}
	cp.Index = r.idx[key]
	r.idx[key]++
	r.mu.Unlock()
	r.send(ctx, proto.ToServerEvents{{Checkpoint: cp, Inner: ev}})
}

func (r *echoRunner) serve(ctx context.Context) {
	for {
		_, b, err := r.c.Read(ctx)
		if err != nil {
			return
		}
		m, err := proto.DecodeToClient(b, 7)
		if err != nil {
			r.t.Error(err)
			return
		}
		switch m := m.(type) {
		case proto.ToClientPing:
			r.send(ctx, proto.ToServerPong{Ts: m.Ts})
		case proto.ToClientCommands:
			for _, c := range m {
				switch cmd := c.Inner.(type) {
				case proto.CommandStartActor:
					r.mu.Lock()
					for _, h := range cmd.HibernatingRequests {
						r.sockets[h.RequestID] = c.Checkpoint.ActorID // restored
					}
					r.mu.Unlock()
					r.event(ctx, c.Checkpoint, proto.EventActorStateUpdate{State: proto.ActorStateRunning{}})
					r.starts <- c.Checkpoint
				case proto.CommandStopActor:
					r.hibernateSockets(ctx, c.Checkpoint.ActorID)
					r.event(ctx, c.Checkpoint, proto.EventActorStateUpdate{State: proto.ActorStateStopped{Code: proto.StopCodeError}})
				}
			}
		case proto.ToClientTunnelMessage:
			r.mu.Lock()
			r.gateway = m.MessageID.GatewayID
			r.mu.Unlock()
			r.tunnel(ctx, m)
		}
	}
}

func (r *echoRunner) tunnel(ctx context.Context, m proto.ToClientTunnelMessage) {
	reply := func(idx uint16, kind proto.ToServerTunnelMessageKind) {
		id := m.MessageID
		id.MessageIndex = idx
		r.send(ctx, proto.ToServerTunnelMessage{MessageID: id, MessageKind: kind})
	}
	switch k := m.MessageKind.(type) {
	case proto.ToClientRequestStart:
		hs := map[string]string{}
		for _, h := range k.Headers {
			hs[h.Name] = h.Value
		}
		body, _ := json.Marshal(map[string]any{"method": k.Method, "path": k.Path, "body": string(k.Body), "headers": hs})
		reply(0, proto.ToServerResponseStart{Status: 200, Headers: []proto.Header{{Name: "x-echo", Value: "1"}}, Body: body})
	case proto.ToClientWebSocketOpen:
		r.mu.Lock()
		r.sockets[m.MessageID.RequestID] = k.ActorID
		r.mu.Unlock()
		reply(0, proto.ToServerWebSocketOpen{CanHibernate: r.hibernate})
	case proto.ToClientWebSocketMessage:
		r.mu.Lock()
		_, open := r.sockets[m.MessageID.RequestID]
		if open && r.drop {
			open = false
			r.dropped <- struct{}{}
		}
		last, seen := r.lastIndex[m.MessageID.RequestID]
		dup := seen && int16(m.MessageID.MessageIndex-last) <= 0
		if open && !dup {
			r.lastIndex[m.MessageID.RequestID] = m.MessageID.MessageIndex
		}
		r.mu.Unlock()
		if !open || dup {
			return // not restored (yet): the gateway sends it again; or seen already, as runner 2.2.1 drops it
		}
		reply(m.MessageID.MessageIndex, proto.ToServerWebSocketMessage{Data: k.Data, Binary: k.Binary})
		if r.hibernate {
			reply(m.MessageID.MessageIndex, proto.ToServerWebSocketMessageAck{Index: m.MessageID.MessageIndex})
		}
	case proto.ToClientWebSocketClose:
		reply(m.MessageID.MessageIndex, proto.ToServerWebSocketClose{Code: k.Code, Reason: k.Reason})
	}
}

// awaitStart returns the next actor start, or fails the test when ctx ends first.
func (r *echoRunner) awaitStart(ctx context.Context) proto.ActorCheckpoint {
	r.t.Helper()
	select {
	case cp := <-r.starts:
		return cp
	case <-ctx.Done():
		r.t.Fatal("no actor start")
		return proto.ActorCheckpoint{}
	}
}

// push sends data to the client of every open socket of the actor aid.
func (r *echoRunner) push(ctx context.Context, aid string, data string) {
	r.mu.Lock()
	var ids []proto.MessageID
	for req, a := range r.sockets {
		if a == aid {
			ids = append(ids, proto.MessageID{GatewayID: r.gateway, RequestID: req})
		}
	}
	r.mu.Unlock()
	for _, id := range ids {
		r.send(ctx, proto.ToServerTunnelMessage{MessageID: id, MessageKind: proto.ToServerWebSocketMessage{Data: []byte(data)}})
	}
}

// hibernateSockets closes the actor's sockets with hibernate, as its runner does when the
// actor goes to sleep with hibernatable connections.
func (r *echoRunner) hibernateSockets(ctx context.Context, aid string) {
	r.mu.Lock()
	var reqs []proto.RequestID
	for req, a := range r.sockets {
		if a == aid {
			reqs = append(reqs, req)
			delete(r.sockets, req)
		}
	}
	r.mu.Unlock()
	for _, req := range reqs {
		id := proto.MessageID{GatewayID: r.gateway, RequestID: req}
		r.send(ctx, proto.ToServerTunnelMessage{MessageID: id, MessageKind: proto.ToServerWebSocketClose{Hibernate: true}})
	}
}

func defaultNS(t *testing.T, e *Engine) id.ID {
	res, err := udb.ReadTransact(context.Background(), e.db, func(r udb.ReadTransaction) (namespace.Namespace, error) {
		return namespace.ResolveByName(context.Background(), r, namespace.ResolveByNameInput{Name: "default"})
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.NamespaceID
}

// The gateway reaches an actor over HTTP and WebSocket through its runner, and wakes it
// when it sleeps.
func TestGateway(t *testing.T) {
	e := startEngine(t, testConfig("tok"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := newEchoRunner(t, ctx, e)
	actors := e.lifecycle.Actors
	a, err := actors.Create(ctx, actor.CreateInput{Namespace: defaultNS(t, e), NamespaceName: "default", Name: "echo",
		Selector: "pool", CrashPolicy: actor.CrashSleep})
	if err != nil {
		t.Fatal(err)
	}
	<-r.starts
	base := "http://" + e.PublicAddr().String() + "/gateway/" + a.ActorID.String()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	post := func(path string) (*http.Response, map[string]any) {
		req, _ := http.NewRequestWithContext(ctx, "POST", base+path, strings.NewReader("ping-body"))
		req.Header.Add("X-Multi", "a")
		req.Header.Add("X-Multi", "b")
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: %d %s", path, res.StatusCode, b)
		}
		return res, out
	}
	res, out := post("/hello/world?x=1&y=a+b")
	if res.StatusCode != 200 || res.Header.Get("X-Echo") != "1" || res.Header.Get("X-Rivet-Ray-Id") == "" ||
		out["method"] != "POST" || out["path"] != "/hello/world?x=1&y=a+b" || out["body"] != "ping-body" {
		t.Fatalf("echo: %d %v %v", res.StatusCode, res.Header, out)
	}
	if hs := out["headers"].(map[string]any); hs["x-multi"] != "a, b" || hs["x-forwarded-for"] == nil {
		t.Fatalf("forwarded headers %v", hs)
	}

	// Asleep, the next request wakes it (a new generation) and is served.
	if err := actors.Sleep(ctx, a.ActorID); err != nil {
		t.Fatal(err)
	}
	awaitAsleep(ctx, t, e, a.ActorID)
	if res, out := post("/again"); res.StatusCode != 200 || out["path"] != "/again" {
		t.Fatalf("after sleep: %d %v", res.StatusCode, out)
	}
	if cp := <-r.starts; cp.Generation != 1 {
		t.Fatalf("woken with generation %d", cp.Generation)
	}

	// WebSocket echo, text and binary; subprotocol rivet only when offered.
	ws, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws", &websocket.DialOptions{Subprotocols: []string{"rivet"}})
	if err != nil {
		var b []byte
		if resp != nil && resp.Body != nil {
			b, _ = io.ReadAll(resp.Body)
		}
		t.Fatalf("%v: %s", err, b)
	}
	if resp.Header.Get("Sec-WebSocket-Protocol") != "rivet" {
		t.Fatalf("subprotocol %q", resp.Header.Get("Sec-WebSocket-Protocol"))
	}
	for _, m := range []struct {
		typ  websocket.MessageType
		data []byte
	}{{websocket.MessageText, []byte("hi-text")}, {websocket.MessageBinary, []byte{1, 2, 3}}} {
		if err := ws.Write(ctx, m.typ, m.data); err != nil {
			t.Fatal(err)
		}
		typ, data, err := ws.Read(ctx)
		if err != nil || typ != m.typ || !bytes.Equal(data, m.data) {
			t.Fatalf("echo of %q: %v %q %v", m.data, typ, data, err)
		}
	}
	_ = ws.Close(websocket.StatusNormalClosure, "bye")
	plain, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Sec-WebSocket-Protocol") != "" {
		t.Fatal("subprotocol answered though none was offered")
	}
	_ = plain.Close(websocket.StatusNormalClosure, "")

	// Bad input.
	for _, tc := range []struct {
		path   string
		status int
		errKey string
	}{
		{"/gateway/not-an-id/x", 400, "api.bad_request"},
		{"/gateway/" + id.New(1).String() + "/x", 404, "actor.not_found"},
	} {
		res, err := client.Get("http://" + e.PublicAddr().String() + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.status || res.Header.Get("X-Rivet-Error") != tc.errKey {
			t.Errorf("%s: %d %q, want %d %s", tc.path, res.StatusCode, res.Header.Get("X-Rivet-Error"), tc.status, tc.errKey)
		}
	}
}

// awaitAsleep waits for the actor to be recorded asleep.
func awaitAsleep(ctx context.Context, t *testing.T, e *Engine, aid id.ID) {
	t.Helper()
	for {
		changed := e.lifecycle.Actors.Watch(aid)
		st, _, err := stateOf(e, aid)
		if err == nil && st.Phase == keys.PhaseSleeping {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("actor did not sleep: %s", st.Phase)
		}
	}
}

// awaitRecord returns once key is present in the store, waiting on a watch of it.
func awaitRecord(ctx context.Context, t *testing.T, e *Engine, key []byte) {
	t.Helper()
	for {
		var w udb.Watch
		found, err := udb.Transact(ctx, e.db, func(tx udb.Transaction) (bool, error) {
			v, err := tx.Get(ctx, key)
			if err != nil || v != nil {
				return v != nil, err
			}
			w = tx.Watch(key)
			return false, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if found {
			return
		}
		if err := w.Wait(ctx); err != nil {
			t.Fatalf("waiting for the record: %v", err)
		}
	}
}

func stateOf(e *Engine, aid id.ID) (keys.ActorState, bool, error) {
	var st keys.ActorState
	var found bool
	err := udb.View(context.Background(), e.db, func(r udb.ReadTransaction) error {
		var err error
		st, found, err = keys.Get(context.Background(), r.Snapshot(), keys.ActorStateKey{ActorID: aid})
		return err
	})
	return st, found, err
}

// A hibernatable WebSocket outlives its actor's sleep: the client stays connected, its next
// message wakes the actor (whose start restores the socket) and is answered.
func TestGatewayHibernation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, r, aid, ws := hibernatingSocket(t, ctx)
	echo := func(msg string) {
		t.Helper()
		if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, data, err := ws.Read(ctx)
		if err != nil || string(data) != msg {
			t.Fatalf("echo of %q: %q %v", msg, data, err)
		}
	}
	if err := e.lifecycle.Actors.Sleep(ctx, aid); err != nil {
		t.Fatal(err)
	}
	awaitAsleep(ctx, t, e, aid)
	echo("after") // wakes the actor; the socket was restored from the start command
	if cp := r.awaitStart(ctx); cp.Generation != 1 {
		t.Fatalf("woken with generation %d", cp.Generation)
	}
	echo("again")
}

// hibernatingSocket starts an engine with a hibernating echo runner, an actor and a client
// socket to it that has echoed one message.
func hibernatingSocket(t *testing.T, ctx context.Context) (*Engine, *echoRunner, id.ID, *websocket.Conn) {
	e := startEngine(t, testConfig("tok"))
	r := newEchoRunner(t, ctx, e)
	r.mu.Lock()
	r.hibernate = true
	r.mu.Unlock()
	a, err := e.lifecycle.Actors.Create(ctx, actor.CreateInput{Namespace: defaultNS(t, e), NamespaceName: "default",
		Name: "echo", Selector: "pool", CrashPolicy: actor.CrashSleep})
	if err != nil {
		t.Fatal(err)
	}
	<-r.starts
	ws, _, err := websocket.Dial(ctx, "ws://"+e.PublicAddr().String()+"/gateway/"+a.ActorID.String()+"/conn", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	if err := ws.Write(ctx, websocket.MessageText, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if _, data, err := ws.Read(ctx); err != nil || string(data) != "first" {
		t.Fatalf("echo: %q %v", data, err)
	}
	return e, r, a.ActorID, ws
}

// A client message that reached the runner as its actor stopped (dropped, never
// acknowledged) wakes the actor at once and is delivered, without waiting for the
// client's next message, as on Rivet.
func TestGatewayHibernationResendsDropped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, r, aid, ws := hibernatingSocket(t, ctx)
	r.mu.Lock()
	r.drop = true
	r.mu.Unlock()
	if err := ws.Write(ctx, websocket.MessageText, []byte("dropped")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.dropped:
	case <-ctx.Done():
		t.Fatal("the message never reached the runner")
	}
	r.mu.Lock()
	r.drop = false
	r.mu.Unlock()
	if err := e.lifecycle.Actors.Sleep(ctx, aid); err != nil {
		t.Fatal(err)
	}
	if cp := r.awaitStart(ctx); cp.Generation != 1 {
		t.Fatalf("woken with generation %d", cp.Generation)
	}
	if _, data, err := ws.Read(ctx); err != nil || string(data) != "dropped" {
		t.Fatalf("the dropped message after the wake: %q %v", data, err)
	}
}

// A hibernating socket whose actor is woken by something else (here an HTTP request)
// resumes at once, so that what the actor sends reaches the client.
func TestGatewayHibernationResumesOnWake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, r, aid, ws := hibernatingSocket(t, ctx)
	r.mu.Lock()
	record := keys.HibernatingRequestKey{ActorID: aid, GatewayID: r.gateway}
	for req, a := range r.sockets {
		if a == aid.String() {
			record.RequestID = req
		}
	}
	r.mu.Unlock()
	if err := e.lifecycle.Actors.Sleep(ctx, aid); err != nil {
		t.Fatal(err)
	}
	awaitAsleep(ctx, t, e, aid)
	// The wake comes after the gateway recorded the hibernating socket, so that the start
	// restores it. (A wake committed in between starts the actor without it: the session
	// then waits for the next wake: docs/protocol.md, hibernation.)
	awaitRecord(ctx, t, e, record.Pack())
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+e.PublicAddr().String()+"/gateway/"+aid.String()+"/wake", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if cp := r.awaitStart(ctx); cp.Generation != 1 {
		t.Fatalf("woken with generation %d", cp.Generation)
	}
	// The gateway resumes the socket on its own; the runner's push goes out until then.
	got := make(chan string, 1)
	go func() {
		_, data, _ := ws.Read(ctx)
		got <- string(data)
	}()
	for {
		r.push(ctx, aid.String(), "pushed")
		select {
		case data := <-got:
			if data != "pushed" {
				t.Fatalf("the client read %q", data)
			}
			return
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("the actor's message never reached the client: the socket did not resume")
		}
	}
}
