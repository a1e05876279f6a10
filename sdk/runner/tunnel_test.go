package runner_test

import (
	"slices"
	"strings"
	"testing"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
	"github.com/berthhq/berth/sdk/runner/runnertest"
)

// The tunnel against the scripted engine: the gateway's side is a test that sends
// ToClientTunnelMessage and reads ToServerTunnelMessage.

var gw = proto.GatewayID{0xde, 0xad, 0xbe, 0xef}

func reqID(n byte) proto.RequestID { return proto.RequestID{1, 2, 3, n} }

func tunnelTo(req byte, idx uint16, kind proto.ToClientTunnelMessageKind) proto.ToClientTunnelMessage {
	return proto.ToClientTunnelMessage{MessageID: proto.MessageID{GatewayID: gw, RequestID: reqID(req), MessageIndex: idx}, MessageKind: kind}
}

// expectTunnel reads the next message, a tunnel message of request req with index idx and
// kind T.
func expectTunnel[T proto.ToServerTunnelMessageKind](s *fakeSock, req byte, idx uint16) T {
	s.t.Helper()
	m := expect[proto.ToServerTunnelMessage](s)
	if want := (proto.MessageID{GatewayID: gw, RequestID: reqID(req), MessageIndex: idx}); m.MessageID != want {
		s.t.Fatalf("tunnel message %+v with id %+v, want id %+v", m.MessageKind, m.MessageID, want)
	}
	k, ok := m.MessageKind.(T)
	if !ok {
		s.t.Fatalf("tunnel message %#v, want %T", m.MessageKind, *new(T))
	}
	return k
}

func header(hs []proto.Header, name string) (string, bool) {
	i := slices.IndexFunc(hs, func(h proto.Header) bool { return h.Name == name })
	if i < 0 {
		return "", false
	}
	return hs[i].Value, true
}

func u16(v uint16) *uint16 { return &v }
func str(v string) *string { return &v }

// runningProbe hosts p and starts actor "a1" (probe) and "p1" (plain) on it.
func runningProbe(t *testing.T, p *runnertest.Probe) *fakeSock {
	t.Helper()
	_, _, s := hostRunner(t, p, nil)
	s.send(proto.ToClientCommands{startCmd("a1", "probe", 0)})
	runnertest.Next(t, p.Starts, "Start")
	expectEvent(s, "a1", 0, 0, running)
	s.send(proto.ToClientCommands{startCmd("p1", "plain", 0)})
	expectEvent(s, "p1", 0, 0, running)
	return s
}

func TestTunnelHTTP(t *testing.T) {
	p := runnertest.NewProbe()
	s := runningProbe(t, p)

	s.send(tunnelTo(1, 0, proto.ToClientRequestStart{ActorID: "a1", Method: "GET", Path: "/hello?q=x",
		Headers: []proto.Header{{Name: "x-client", Value: "c1"}}}))
	res := expectTunnel[proto.ToServerResponseStart](s, 1, 0)
	if res.Status != 200 || res.Stream || string(res.Body) != "hello a1 from c1" {
		t.Fatalf("response %d %q stream %v", res.Status, res.Body, res.Stream)
	}
	for name, want := range map[string]string{"x-query": "x", "x-multi": "a, b", "content-length": "16", "content-type": "text/plain; charset=utf-8"} {
		if got, _ := header(res.Headers, name); got != want {
			t.Errorf("header %s = %q, want %q (all: %+v)", name, got, want, res.Headers)
		}
	}

	s.send(tunnelTo(2, 0, proto.ToClientRequestStart{ActorID: "a1", Method: "POST", Path: "/echo", Body: []byte("ping")}))
	if res := expectTunnel[proto.ToServerResponseStart](s, 2, 0); res.Status != 201 || string(res.Body) != "ping" {
		t.Fatalf("echo: %d %q", res.Status, res.Body)
	}

	// A streamed body, in chunks.
	s.send(tunnelTo(3, 0, proto.ToClientRequestStart{ActorID: "a1", Method: "POST", Path: "/echo", Stream: true}))
	s.send(tunnelTo(3, 1, proto.ToClientRequestChunk{Body: []byte("ab")}))
	s.send(tunnelTo(3, 2, proto.ToClientRequestChunk{Body: []byte("cd"), Finish: true}))
	if res := expectTunnel[proto.ToServerResponseStart](s, 3, 0); res.Status != 201 || string(res.Body) != "abcd" {
		t.Fatalf("streamed echo: %d %q", res.Status, res.Body)
	}

	// A handler that flushes streams: the start at the flush with what was written, then
	// chunks of at most 64 KiB, then the finish when it returns.
	s.send(tunnelTo(9, 0, proto.ToClientRequestStart{ActorID: "a1", Method: "GET", Path: "/stream"}))
	if res := expectTunnel[proto.ToServerResponseStart](s, 9, 0); res.Status != 200 || !res.Stream || res.Body != nil {
		t.Fatalf("streamed start: %d stream %v body %q", res.Status, res.Stream, res.Body)
	}
	var streamed []byte
	for idx := uint16(1); ; idx++ {
		c := expectTunnel[proto.ToServerResponseChunk](s, 9, idx)
		if len(c.Body) > 64<<10 {
			t.Fatalf("chunk of %d bytes", len(c.Body))
		}
		streamed = append(streamed, c.Body...)
		if c.Finish {
			break
		}
	}
	if string(streamed) != "head"+strings.Repeat("x", 100<<10) {
		t.Fatalf("streamed %d bytes", len(streamed))
	}

	// A panic is a 500; the actor keeps serving.
	s.send(tunnelTo(4, 0, proto.ToClientRequestStart{ActorID: "a1", Method: "GET", Path: "/panic"}))
	if res := expectTunnel[proto.ToServerResponseStart](s, 4, 0); res.Status != 500 || string(res.Body) != "Internal Server Error" {
		t.Fatalf("panic: %d %q", res.Status, res.Body)
	}

	// An actor not on this runner: 503 runner.actor_not_found, which the gateway retries.
	s.send(tunnelTo(5, 0, proto.ToClientRequestStart{ActorID: "nobody", Method: "GET", Path: "/"}))
	res = expectTunnel[proto.ToServerResponseStart](s, 5, 0)
	if e, _ := header(res.Headers, "x-rivet-error"); res.Status != 503 || e != "runner.actor_not_found" {
		t.Fatalf("unknown actor: %d %+v", res.Status, res.Headers)
	}

	// An actor without ServeHTTP: 501.
	s.send(tunnelTo(6, 0, proto.ToClientRequestStart{ActorID: "p1", Method: "GET", Path: "/"}))
	if res := expectTunnel[proto.ToServerResponseStart](s, 6, 0); res.Status != 501 {
		t.Fatalf("plain actor: %d", res.Status)
	}

	// An aborted request's context ends and it gets no response: the next message is the
	// answer to the request after it.
	s.send(tunnelTo(7, 0, proto.ToClientRequestStart{ActorID: "a1", Method: "GET", Path: "/wait"}))
	runnertest.Next(t, p.Waiting, "the request to reach the handler")
	s.send(tunnelTo(7, 1, proto.ToClientRequestAbort{}))
	runnertest.Next(t, p.Waited, "the aborted request's context to end")
	s.send(tunnelTo(8, 0, proto.ToClientRequestStart{ActorID: "a1", Method: "GET", Path: "/nope"}))
	if res := expectTunnel[proto.ToServerResponseStart](s, 8, 0); res.Status != 404 {
		t.Fatalf("not found: %d", res.Status)
	}
}

func TestTunnelHTTPWaitsForStartAndEndsAtStop(t *testing.T) {
	p := runnertest.NewProbe()
	p.Hold = make(chan struct{})
	_, _, s := hostRunner(t, p, nil)
	s.send(proto.ToClientCommands{startCmd("a1", "probe", 0)})
	runnertest.Next(t, p.Starts, "Start")
	// A request while Start runs waits for it (the gateway may send before Running).
	s.send(tunnelTo(1, 0, proto.ToClientRequestStart{ActorID: "a1", Method: "GET", Path: "/hello"}))
	close(p.Hold)
	expectEvent(s, "a1", 0, 0, running)
	if res := expectTunnel[proto.ToServerResponseStart](s, 1, 0); res.Status != 200 {
		t.Fatalf("status %d", res.Status)
	}

	// A request in flight when the actor stops: its context ends after Stop, no response is
	// sent (the gateway closes it), and the actor is reported Stopped.
	s.send(tunnelTo(2, 0, proto.ToClientRequestStart{ActorID: "a1", Method: "GET", Path: "/wait"}))
	runnertest.Next(t, p.Waiting, "the request to reach the handler")
	s.send(proto.ToClientCommands{stopCmd("a1", 0, 1)})
	runnertest.Next(t, p.Waited, "the in-flight request's context to end")
	expectEvent(s, "a1", 0, 1, stoppedER)
	// Now the actor is gone: 503.
	s.send(tunnelTo(4, 0, proto.ToClientRequestStart{ActorID: "a1", Method: "GET", Path: "/hello"}))
	if res := expectTunnel[proto.ToServerResponseStart](s, 4, 0); res.Status != 503 {
		t.Fatalf("after stop: %d", res.Status)
	}
}

func TestTunnelWebSocket(t *testing.T) {
	p := runnertest.NewProbe()
	s := runningProbe(t, p)

	s.send(tunnelTo(1, 0, proto.ToClientWebSocketOpen{ActorID: "a1", Path: "/ws?suffix=!", Headers: []proto.Header{{Name: "x-client", Value: "c1"}}}))
	if open := expectTunnel[proto.ToServerWebSocketOpen](s, 1, 0); open.CanHibernate {
		t.Fatal("canHibernate: the runner does not hibernate sockets")
	}
	s.send(tunnelTo(1, 1, proto.ToClientWebSocketMessage{Data: []byte("hi"), Binary: false}))
	if m := expectTunnel[proto.ToServerWebSocketMessage](s, 1, 1); m.Binary || string(m.Data) != "HI!" {
		t.Fatalf("text echo %+v", m)
	}
	s.send(tunnelTo(1, 2, proto.ToClientWebSocketMessage{Data: []byte{1, 2, 3}, Binary: true}))
	if m := expectTunnel[proto.ToServerWebSocketMessage](s, 1, 2); !m.Binary || string(m.Data) != "\x01\x02\x03" {
		t.Fatalf("binary echo %+v", m)
	}
	// The client closes: the close is echoed, as a WebSocket close handshake.
	s.send(tunnelTo(1, 3, proto.ToClientWebSocketClose{Code: u16(1000), Reason: str("bye")}))
	if c := expectTunnel[proto.ToServerWebSocketClose](s, 1, 3); c.Code == nil || *c.Code != 1000 || c.Reason == nil || *c.Reason != "bye" || c.Hibernate {
		t.Fatalf("close %+v", c)
	}

	// The actor closes.
	s.send(tunnelTo(2, 0, proto.ToClientWebSocketOpen{ActorID: "a1", Path: "/ws"}))
	expectTunnel[proto.ToServerWebSocketOpen](s, 2, 0)
	s.send(tunnelTo(2, 1, proto.ToClientWebSocketMessage{Data: []byte("close")}))
	if c := expectTunnel[proto.ToServerWebSocketClose](s, 2, 1); *c.Code != 4000 || *c.Reason != "asked" {
		t.Fatalf("close %+v", c)
	}

	// Not here: closed before open, which the gateway retries.
	s.send(tunnelTo(3, 0, proto.ToClientWebSocketOpen{ActorID: "nobody", Path: "/ws"}))
	if c := expectTunnel[proto.ToServerWebSocketClose](s, 3, 0); *c.Code != 1011 || *c.Reason != "Actor not found" {
		t.Fatalf("close %+v", c)
	}
	// No ServeWebSocket: opened, then closed 1011.
	s.send(tunnelTo(4, 0, proto.ToClientWebSocketOpen{ActorID: "p1", Path: "/ws"}))
	expectTunnel[proto.ToServerWebSocketOpen](s, 4, 0)
	if c := expectTunnel[proto.ToServerWebSocketClose](s, 4, 1); *c.Code != 1011 {
		t.Fatalf("close %+v", c)
	}

	// A socket open when the actor stops is closed with 1000 actor.stopped before Stopped.
	s.send(tunnelTo(5, 0, proto.ToClientWebSocketOpen{ActorID: "a1", Path: "/ws"}))
	expectTunnel[proto.ToServerWebSocketOpen](s, 5, 0)
	s.send(proto.ToClientCommands{stopCmd("a1", 0, 1)})
	runnertest.Next(t, p.Stops, "Stop")
	if c := expectTunnel[proto.ToServerWebSocketClose](s, 5, 1); *c.Code != 1000 || *c.Reason != "actor.stopped" {
		t.Fatalf("close %+v", c)
	}
	expectEvent(s, "a1", 0, 1, stoppedER)
}
