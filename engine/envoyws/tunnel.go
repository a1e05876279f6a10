package envoyws

import (
	"context"
	"errors"
	"sync"

	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/guard/core"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/protocol/bridge"
	proto "github.com/berthhq/berth/pkg/protocol/envoy"
	rp "github.com/berthhq/berth/pkg/protocol/runner"
)

// The tunnel: gateway requests to actors hosted on envoys travel over the envoy's socket as
// ToEnvoyTunnelMessage and come back as ToRivetTunnelMessage, matched by request id. A
// Tunnel speaks the runner protocol's tunnel shapes, which the gateway (guard) uses for
// every host, and translates at the socket (pkg/protocol/bridge). Hibernated requests are
// not resumed through envoys.
//
// Streamed bodies (envoy v8 flow control): every request start says responseStream, so the
// envoy may stream its response. Each direction has a window of bodyWindow bytes sent and
// not yet consumed, returned by cumulative window updates. A Tunnel keeps the request body's
// window itself: Send of a ToClientRequestChunk splits it into frames of at most
// core.BodyChunk bytes and waits for credit (ToRivetRequestBodyWindowUpdate) before each; once
// the envoy cancelled the body (ToRivetRequestBodyCancel) it returns
// core.ErrRequestBodyCancelled. For the response, ConsumedResponseBody counts what the client
// took and returns it in ToEnvoyResponseBodyWindowUpdate every windowUpdateEvery bytes.

// ErrNoEnvoySocket: this server holds no socket of the envoy.
var ErrNoEnvoySocket = errors.New("envoyws: no socket of that envoy here")

// ErrTunnelClosed: the envoy's socket ended, or the tunnel was closed.
var ErrTunnelClosed = errors.New("envoyws: tunnel closed")

// bodyWindow is the envoy protocol's initial body window, in each direction
// (HTTP_STREAM_INITIAL_WINDOW_BYTES of the reference engine).
const bodyWindow = 1 << 20

// windowUpdateEvery is how many response bytes the client consumes between two window
// updates: a quarter of the window, so the envoy never waits while the client keeps up.
const windowUpdateEvery = bodyWindow / 4

// tunnelBuffer bounds the envoy messages waiting for a tunnel's reader; a reader that falls
// further behind loses its tunnel.
const tunnelBuffer = 1024

// Tunnel is one gateway request to an actor through its envoy's socket. Send and Recv may be
// used from different goroutines; Close ends it.
type Tunnel struct {
	c   *conn
	rid proto.RequestID
	*wsconn.Inbox[rp.ToServerTunnelMessageKind]

	sendMu sync.Mutex
	next   uint16 // index of the next message sent

	// req is the request body's window; credit has a token when it may have grown.
	req struct {
		sync.Mutex
		sent, consumed uint64
		cancelled      bool
	}
	credit chan struct{}

	// resp is the response body's consumption (ConsumedResponseBody's caller only).
	resp struct {
		sync.Mutex
		consumed, returned uint64
	}
}

// OpenEnvoyTunnel starts a request to an actor on envoy (ns, envoyKey), or fails with
// ErrNoEnvoySocket.
func (s *Server) OpenEnvoyTunnel(ns id.ID, envoyKey string) (*Tunnel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.byEnvoy[envoyRef{ns, envoyKey}]
	if c == nil {
		return nil, ErrNoEnvoySocket
	}
	t := &Tunnel{c: c, credit: make(chan struct{}, 1)}
	t.rid = wsconn.NewRequestID(func(id [4]byte) bool { _, taken := s.tunnels[id]; return taken })
	t.Inbox = wsconn.NewInbox[rp.ToServerTunnelMessageKind](tunnelBuffer, func() {
		s.mu.Lock()
		if s.tunnels[t.rid] == t {
			delete(s.tunnels, t.rid)
		}
		s.mu.Unlock()
		c.open.Remove(t)
	})
	if !c.open.Add(t) { // the socket is closing
		return nil, ErrNoEnvoySocket
	}
	s.tunnels[t.rid] = t
	return t, nil
}

// Send sends one message of the request, with the next message index. A request-body chunk
// waits for the envoy's credit (see above); it fails with core.ErrRequestBodyCancelled once
// the envoy wants no more of the body.
func (t *Tunnel) Send(kind rp.ToClientTunnelMessageKind) error {
	if c, ok := kind.(rp.ToClientRequestChunk); ok {
		return t.sendChunk(c)
	}
	k := bridge.ToEnvoyTunnel(kind)
	if k == nil {
		return nil // nothing the envoy protocol carries
	}
	if start, ok := k.(proto.ToEnvoyRequestStart); ok {
		start.ResponseStream = true // the gateway takes streamed responses
		k = start
	}
	return t.sendEnvoy(k)
}

func (t *Tunnel) sendEnvoy(k proto.ToEnvoyTunnelMessageKind) error {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	select {
	case <-t.Done():
		return ErrTunnelClosed
	default:
	}
	m := proto.ToEnvoyTunnelMessage{
		MessageID:   proto.MessageID{GatewayID: t.c.s.gateway, RequestID: t.rid, MessageIndex: t.next},
		MessageKind: k,
	}
	if err := t.c.write(m); err != nil {
		t.c.fail(nil)
		return ErrTunnelClosed
	}
	t.next++
	return nil
}

// sendChunk sends a request-body chunk in frames of at most core.BodyChunk bytes, each once
// the envoy's window has room for it.
func (t *Tunnel) sendChunk(c rp.ToClientRequestChunk) error {
	body := c.Body
	for {
		n := min(len(body), core.BodyChunk)
		if err := t.reserve(uint64(n)); err != nil {
			return err
		}
		last := n == len(body)
		if err := t.sendEnvoy(proto.ToEnvoyRequestChunk{Body: body[:n], Finish: c.Finish && last}); err != nil {
			return err
		}
		if last {
			return nil
		}
		body = body[n:]
	}
}

// reserve waits until n more request-body bytes fit in the envoy's window and counts them sent.
func (t *Tunnel) reserve(n uint64) error {
	for {
		t.req.Lock()
		switch {
		case t.req.cancelled:
			t.req.Unlock()
			return core.ErrRequestBodyCancelled
		case t.req.sent-t.req.consumed+n <= bodyWindow:
			t.req.sent += n
			t.req.Unlock()
			return nil
		}
		t.req.Unlock()
		select {
		case <-t.credit:
		case <-t.Done():
			return ErrTunnelClosed
		}
	}
}

// requestBodyConsumed takes the envoy's cumulative count of request-body bytes consumed; a
// count that goes back or past what was sent is ignored.
func (t *Tunnel) requestBodyConsumed(total uint64) {
	t.req.Lock()
	ok := total > t.req.consumed && total <= t.req.sent
	if ok {
		t.req.consumed = total
	}
	t.req.Unlock()
	if ok {
		notify(t.credit)
	}
}

func (t *Tunnel) requestBodyCancelled() {
	t.req.Lock()
	t.req.cancelled = true
	t.req.Unlock()
	notify(t.credit)
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// ConsumedResponseBody counts n more response-body bytes written to the client and returns
// them to the envoy every windowUpdateEvery bytes (guard.ResponseBodyConsumer).
func (t *Tunnel) ConsumedResponseBody(n int) error {
	t.resp.Lock()
	defer t.resp.Unlock()
	t.resp.consumed += uint64(n)
	if t.resp.consumed-t.resp.returned < windowUpdateEvery {
		return nil
	}
	t.resp.returned = t.resp.consumed
	return t.sendEnvoy(proto.ToEnvoyResponseBodyWindowUpdate{ConsumedBytes: t.resp.consumed})
}

// Recv returns the envoy's next message for the request.
func (t *Tunnel) Recv(ctx context.Context) (rp.ToServerTunnelMessageKind, error) {
	return t.Inbox.Recv(ctx, ErrTunnelClosed)
}

// tunnelMessage routes an envoy's tunnel message to its request; the request body's window
// updates and cancel stay with the Tunnel.
func (c *conn) tunnelMessage(m proto.ToRivetTunnelMessage) {
	if m.MessageID.GatewayID != c.s.gateway {
		return // for another gateway (a previous process): nobody waits for it here
	}
	c.s.mu.Lock()
	t := c.s.tunnels[m.MessageID.RequestID]
	c.s.mu.Unlock()
	if t == nil || t.c != c {
		return
	}
	switch k := m.MessageKind.(type) {
	case proto.ToRivetRequestBodyWindowUpdate:
		t.requestBodyConsumed(k.ConsumedBytes)
		return
	case proto.ToRivetRequestBodyCancel:
		t.requestBodyCancelled()
		return
	}
	if kind := bridge.ToServerTunnel(m.MessageKind); kind != nil {
		t.Deliver(kind)
	}
}
