package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// MessageType is the kind of a WebSocket message.
type MessageType int

const (
	MessageText   MessageType = iota + 1 // UTF-8 text
	MessageBinary                        // bytes
)

// ErrWebSocketClosed is returned by Read and Write once the actor closed the socket.
var ErrWebSocketClosed = errors.New("runner: websocket closed")

// WebSocketCloseError is returned by Read once the client (through the gateway) closed the
// socket, with its close code (0 when none was given) and reason.
type WebSocketCloseError struct {
	Code   int
	Reason string
}

func (e *WebSocketCloseError) Error() string {
	return fmt.Sprintf("runner: websocket closed by the client: %d %q", e.Code, e.Reason)
}

// WebSocket is one client WebSocket of an actor, carried over the runner's tunnel. Read
// returns the client's messages in order; Write and Close send to it. Its methods are safe
// for concurrent use, but Read must be called from one goroutine at a time.
type WebSocket struct {
	t    *tunnel
	req  *http.Request
	wake chan struct{} // capacity 1: a message or the close came

	mu     sync.Mutex
	queue  []proto.ToClientWebSocketMessage
	peer   *WebSocketCloseError // the client closed
	closed bool                 // the actor closed (or the close was echoed)
}

func newWebSocket(t *tunnel, open proto.ToClientWebSocketOpen) *WebSocket {
	req, _ := http.NewRequestWithContext(t.ctx, http.MethodGet, "http://actor/", http.NoBody)
	if u, err := req.URL.Parse(open.Path); err == nil && len(open.Path) > 0 && open.Path[0] == '/' {
		req.URL = u
		req.RequestURI = open.Path
	}
	for _, h := range open.Headers {
		req.Header.Add(h.Name, h.Value)
	}
	if host := req.Header.Get("Host"); host != "" {
		req.Host = host
		req.Header.Del("Host")
	}
	return &WebSocket{t: t, req: req, wake: make(chan struct{}, 1)}
}

// Request is the client's upgrade request as the gateway forwarded it: its path (with the
// query) and headers.
func (ws *WebSocket) Request() *http.Request { return ws.req }

// Read returns the next message. After the client closed the socket it returns a
// *WebSocketCloseError once the messages before the close are read; after the actor closed
// it, ErrWebSocketClosed; when the actor stops, the context's error.
func (ws *WebSocket) Read(ctx context.Context) (MessageType, []byte, error) {
	for {
		ws.mu.Lock()
		switch {
		case len(ws.queue) > 0:
			m := ws.queue[0]
			ws.queue = ws.queue[1:]
			ws.mu.Unlock()
			if m.Binary {
				return MessageBinary, m.Data, nil
			}
			return MessageText, m.Data, nil
		case ws.peer != nil:
			err := ws.peer
			ws.mu.Unlock()
			return 0, nil, err
		case ws.closed:
			ws.mu.Unlock()
			return 0, nil, ErrWebSocketClosed
		}
		ws.mu.Unlock()
		select {
		case <-ws.wake:
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		case <-ws.t.ctx.Done():
			return 0, nil, ws.t.ctx.Err()
		}
	}
}

// Write sends one message. It queues the message and returns; messages are sent in order.
func (ws *WebSocket) Write(ctx context.Context, typ MessageType, data []byte) error {
	if typ != MessageText && typ != MessageBinary {
		return fmt.Errorf("runner: websocket: unknown message type %d", typ)
	}
	if len(data) > maxResponseBody {
		return fmt.Errorf("runner: websocket: message of %d bytes, larger than %d", len(data), maxResponseBody)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	switch {
	case ws.peer != nil:
		return ws.peer
	case ws.closed:
		return ErrWebSocketClosed
	}
	if data == nil {
		data = []byte{}
	}
	ws.t.send(proto.ToServerWebSocketMessage{Data: data, Binary: typ == MessageBinary})
	return nil
}

// Close closes the socket with code and reason; later calls do nothing.
func (ws *WebSocket) Close(code int, reason string) error {
	if code < 0 || code > 0xffff {
		return fmt.Errorf("runner: websocket: close code %d out of range", code)
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.closeLocked(code, reason)
	return nil
}

func (ws *WebSocket) closeLocked(code int, reason string) {
	if ws.closed {
		return
	}
	ws.closed = true
	c := uint16(code)
	ws.t.send(proto.ToServerWebSocketClose{Code: &c, Reason: &reason})
	notify(ws.wake)
}

// push queues a message from the client.
func (ws *WebSocket) push(m proto.ToClientWebSocketMessage) {
	ws.mu.Lock()
	if ws.peer == nil {
		ws.queue = append(ws.queue, m)
	}
	ws.mu.Unlock()
	notify(ws.wake)
}

// peerClose records the client's close and echoes it, as a WebSocket close handshake.
func (ws *WebSocket) peerClose(m proto.ToClientWebSocketClose) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.peer != nil {
		return
	}
	e := &WebSocketCloseError{}
	if m.Code != nil {
		e.Code = int(*m.Code)
	}
	if m.Reason != nil {
		e.Reason = *m.Reason
	}
	ws.peer = e
	if !ws.closed {
		ws.closed = true
		ws.t.send(proto.ToServerWebSocketClose{Code: m.Code, Reason: m.Reason})
	}
	notify(ws.wake)
}

func (t *tunnel) serveWebSocket() {
	defer t.done()
	in := t.in
	if in == nil || !in.ready(t.ctx) || !in.addSocket(t) {
		// Closed before open: the gateway retries, as for the reference client.
		code, reason := uint16(1011), "Actor not found"
		t.send(proto.ToServerWebSocketClose{Code: &code, Reason: &reason})
		return
	}
	defer in.removeSocket(t)
	handler, ok := in.impl.(WebSocketHandler)
	t.send(proto.ToServerWebSocketOpen{CanHibernate: false})
	if !ok {
		_ = t.ws.Close(1011, "websocket not supported")
		return
	}
	if !t.callHandler(func() { handler.ServeWebSocket(t.ctx, t.ws) }) {
		_ = t.ws.Close(1011, "Internal Server Error")
		return
	}
	_ = t.ws.Close(1000, "")
}

// addSocket records an open socket of the instance, for closeSockets; false once the
// instance's requests have ended.
func (in *instance) addSocket(t *tunnel) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.mu.socketsClosed {
		return false
	}
	in.mu.sockets[t] = struct{}{}
	return true
}

func (in *instance) removeSocket(t *tunnel) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.mu.sockets, t)
}

// closeSockets closes the instance's open sockets with 1000 actor.stopped, and refuses new
// ones.
func (in *instance) closeSockets() {
	in.mu.Lock()
	in.mu.socketsClosed = true
	socks := make([]*tunnel, 0, len(in.mu.sockets))
	for t := range in.mu.sockets {
		socks = append(socks, t)
	}
	clear(in.mu.sockets)
	in.mu.Unlock()
	for _, t := range socks {
		_ = t.ws.Close(1000, "actor.stopped")
	}
}
