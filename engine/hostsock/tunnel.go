package hostsock

import (
	"context"
	"sync"

	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/guard/core"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// The tunnel: a gateway request to an actor travels over its host's socket, matched by
// its gateway and request id, in the runner protocol's shapes (the gateway's, translated by
// the envoy adapter). A request of this node's gateway carries the registry's gateway id;
// one another node relays here (engine/cluster) carries that node's, so that a hibernated
// WebSocket can resume wherever its actor runs next.
//
// Windowed protocols (envoy v8) stream bodies under flow control: every request start
// asks for a streamed response, and each direction has a window of bodyWindowSize bytes sent
// and not yet consumed, returned by cumulative window updates. A Tunnel keeps the request
// body's window itself: Send of a ToClientRequestChunk splits it into frames of at most
// core.BodyChunk bytes and waits for credit before each; once the host cancelled the body it
// returns core.ErrRequestBodyCancelled. For the response, ConsumedResponseBody counts what
// the client took and returns it to the host every windowUpdateEvery bytes.

// tunnelBuffer bounds the host's messages waiting for a tunnel's reader; a reader that
// falls further behind loses its tunnel.
const tunnelBuffer = 1024

// bodyWindowSize is the envoy protocol's initial body window, in each direction.
const bodyWindowSize = 1 << 20

// windowUpdateEvery is how many response bytes the client consumes between two window
// updates: a quarter of the window, so the host never waits while the client keeps up.
const windowUpdateEvery = bodyWindowSize / 4

// tunnelKey names a request: the gateway that opened it and its id there.
type tunnelKey struct {
	gateway proto.GatewayID
	request proto.RequestID
}

// Tunnel is one gateway request to an actor through its host's socket (guard.Tunnel).
// Send and Recv may be used from different goroutines; Close ends it.
type Tunnel struct {
	c   *conn
	key tunnelKey
	*wsconn.Inbox[proto.ToServerTunnelMessageKind]

	sendMu sync.Mutex
	next   uint16 // index of the next message sent

	window *bodyWindow // windowed protocols only
}

// RequestID is the request's id on the tunnel.
func (t *Tunnel) RequestID() proto.RequestID { return t.key.request }

// Resumable reports whether the host restores the request's hibernated WebSocket
// (guard.ResumableTunnel).
func (t *Tunnel) Resumable() bool { return t.c.p.info().resumable }

// NextIndex is the index the next message sent will carry.
func (t *Tunnel) NextIndex() uint16 {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	return t.next
}

// Send sends one message of the request, with the next message index. On a windowed
// protocol a request-body chunk waits for the host's credit, and fails with
// core.ErrRequestBodyCancelled once the host wants no more of the body.
func (t *Tunnel) Send(kind proto.ToClientTunnelMessageKind) error {
	if c, ok := kind.(proto.ToClientRequestChunk); ok && t.window != nil {
		return t.sendChunk(c)
	}
	_, err := t.SendIndexed(kind)
	return err
}

// SendIndexed is Send that also returns the index the message carried.
func (t *Tunnel) SendIndexed(kind proto.ToClientTunnelMessageKind) (uint16, error) {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	idx := t.next
	sent, err := t.send(idx, kind)
	if err != nil {
		return 0, err
	}
	if sent {
		t.next++
	}
	return idx, nil
}

// Resend sends again a message sent before under index idx (the replay of a hibernated
// WebSocket's unacknowledged messages); the next index does not move.
func (t *Tunnel) Resend(idx uint16, kind proto.ToClientTunnelMessageKind) error {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	_, err := t.send(idx, kind)
	return err
}

// send writes one message under idx; sent is false for a kind the protocol does not carry.
func (t *Tunnel) send(idx uint16, kind proto.ToClientTunnelMessageKind) (sent bool, err error) {
	select {
	case <-t.Done():
		return false, wsconn.ErrTunnelClosed
	default:
	}
	m := tunnelMsg{id: proto.MessageID{GatewayID: t.key.gateway, RequestID: t.key.request, MessageIndex: idx}, kind: kind}
	b, err := t.c.p.encode(t.c, m)
	if err != nil || b == nil {
		return false, err
	}
	if err := t.c.write(b); err != nil {
		t.c.fail(nil)
		return false, wsconn.ErrTunnelClosed
	}
	return true, nil
}

// sendChunk sends a request-body chunk in frames of at most core.BodyChunk bytes, each once
// the host's window has room for it.
func (t *Tunnel) sendChunk(c proto.ToClientRequestChunk) error {
	body := c.Body
	for {
		n := min(len(body), core.BodyChunk)
		if err := t.window.reserve(uint64(n), t.Done()); err != nil {
			return err
		}
		last := n == len(body)
		if _, err := t.SendIndexed(proto.ToClientRequestChunk{Body: body[:n], Finish: c.Finish && last}); err != nil {
			return err
		}
		if last {
			return nil
		}
		body = body[n:]
	}
}

// ConsumedResponseBody counts n more response-body bytes written to the client and, on a
// windowed protocol, returns them to the host every windowUpdateEvery bytes
// (guard.ResponseBodyConsumer).
func (t *Tunnel) ConsumedResponseBody(n int) error {
	if t.window == nil {
		return nil
	}
	t.sendMu.Lock() // so that the counts the host gets never go back
	defer t.sendMu.Unlock()
	total, due := t.window.consumed(uint64(n))
	if !due {
		return nil
	}
	select {
	case <-t.Done():
		return wsconn.ErrTunnelClosed
	default:
	}
	m := bodyConsumed{id: proto.MessageID{GatewayID: t.key.gateway, RequestID: t.key.request, MessageIndex: t.next}, consumed: total}
	if err := t.c.send(m); err != nil {
		t.c.fail(nil)
		return wsconn.ErrTunnelClosed
	}
	t.next++
	return nil
}

// Recv returns the host's next message for the request.
func (t *Tunnel) Recv(ctx context.Context) (proto.ToServerTunnelMessageKind, error) {
	return t.Inbox.Recv(ctx, wsconn.ErrTunnelClosed)
}

// Close (the Inbox's) ends the tunnel; later host messages for it are dropped.

// tunnelMessage routes a host's tunnel message to its request; one for a request nobody
// here waits for (of a previous process, or closed) is dropped.
func (c *conn) tunnelMessage(id proto.MessageID, kind proto.ToServerTunnelMessageKind) {
	if t := c.s.reg.tunnel(c, tunnelKey{id.GatewayID, id.RequestID}); t != nil {
		t.Deliver(kind)
	}
}

// requestBodyConsumed and requestBodyCancelled take a windowed host's flow control of a
// request's body.
func (c *conn) requestBodyConsumed(id proto.MessageID, total uint64) {
	if t := c.s.reg.tunnel(c, tunnelKey{id.GatewayID, id.RequestID}); t != nil && t.window != nil {
		t.window.requestConsumed(total)
	}
}

func (c *conn) requestBodyCancelled(id proto.MessageID) {
	if t := c.s.reg.tunnel(c, tunnelKey{id.GatewayID, id.RequestID}); t != nil && t.window != nil {
		t.window.cancel()
	}
}

// bodyWindow is a windowed tunnel's flow control: the request body's window, whose credit
// channel has a token when it may have grown, and the response body's consumption.
type bodyWindow struct {
	credit chan struct{}

	mu           sync.Mutex
	sent, taken  uint64 // request-body bytes sent, and consumed by the host
	cancelled    bool   // the host wants no more of the request body
	respConsumed uint64 // response-body bytes the client consumed
	respReturned uint64 // of which returned to the host
}

func newBodyWindow() *bodyWindow { return &bodyWindow{credit: make(chan struct{}, 1)} }

// reserve waits until n more request-body bytes fit in the host's window and counts them
// sent, or until done closes.
func (w *bodyWindow) reserve(n uint64, done <-chan struct{}) error {
	for {
		w.mu.Lock()
		switch {
		case w.cancelled:
			w.mu.Unlock()
			return core.ErrRequestBodyCancelled
		case w.sent-w.taken+n <= bodyWindowSize:
			w.sent += n
			w.mu.Unlock()
			return nil
		}
		w.mu.Unlock()
		select {
		case <-w.credit:
		case <-done:
			return wsconn.ErrTunnelClosed
		}
	}
}

// requestConsumed takes the host's cumulative count of request-body bytes consumed; a
// count that goes back or past what was sent is ignored.
func (w *bodyWindow) requestConsumed(total uint64) {
	w.mu.Lock()
	ok := total > w.taken && total <= w.sent
	if ok {
		w.taken = total
	}
	w.mu.Unlock()
	if ok {
		w.notify()
	}
}

func (w *bodyWindow) cancel() {
	w.mu.Lock()
	w.cancelled = true
	w.mu.Unlock()
	w.notify()
}

func (w *bodyWindow) notify() {
	select {
	case w.credit <- struct{}{}:
	default:
	}
}

// consumed counts n more response-body bytes written to the client; due says the total is
// to be returned to the host now.
func (w *bodyWindow) consumed(n uint64) (total uint64, due bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.respConsumed += n
	if w.respConsumed-w.respReturned < windowUpdateEvery {
		return w.respConsumed, false
	}
	w.respReturned = w.respConsumed
	return w.respConsumed, true
}
