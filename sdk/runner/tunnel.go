package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"

	envoyproto "github.com/berthhq/berth/sdk/protocol/envoy"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// The tunnel (docs/protocol.md, "Tunnels and message ids"): the gateway sends HTTP
// requests and WebSockets for an actor over the runner's socket, each identified by
// (gateway id, request id), and the runner answers on the same ids, numbering its own
// messages of each request from 0.
//
// HTTP: each ToClientRequestStart is served by the actor's ServeHTTP on a goroutine of its
// own, once Start has returned; the response is sent whole in one ToServerResponseStart
// (stream false, content-length added), as runner 2.2.1 does, unless the handler flushes
// (http.Flusher): then it is streamed, ToServerResponseStart{stream: true} at the first
// Flush and ToServerResponseChunk messages of at most 64 KiB, the last (finish) when the
// handler returns; as an envoy, within the engine's 1 MiB response window, which the engine
// returns as its client reads (ToEnvoyResponseBodyWindowUpdate). A streamed request body
// (stream true, ToClientRequestChunk) is read as it comes; as an envoy (Config.Envoy) the
// runner returns the engine's credit for it (envoy v8 flow control: the engine sends at most
// 1 MiB the actor has not read) with ToRivetRequestBodyWindowUpdate every 256 KiB read.
// ToClientRequestAbort cancels the request's context and no response is sent. A panic in
// the handler answers 500.
//
// WebSocket: ToClientWebSocketOpen is answered ToServerWebSocketOpen{canHibernate: false}
// and served by the actor's ServeWebSocket. The engine's ToClientWebSocketClose is echoed,
// as the close handshake of a WebSocket. Sockets still open when the actor has stopped are
// closed with 1000 actor.stopped before the runner reports Stopped.
//
// Messages sent while the runner is disconnected are kept and sent after the next
// ToClientInit, as the reference client does.

// maxResponseBody is the largest body the runner sends (the engine's 20 MiB payload limit).
const maxResponseBody = 20 << 20

type tunnelKey struct {
	gw  proto.GatewayID
	req proto.RequestID
}

// tunnel is one HTTP request or WebSocket in flight.
type tunnel struct {
	h   *host
	key tunnelKey
	in  *instance // nil: the actor is not here

	// ctx is the request's: it ends at an abort, or when the actor has stopped.
	ctx    context.Context
	cancel context.CancelFunc

	body *streamBody // a streamed request body, or nil
	ws   *WebSocket  // a WebSocket, or nil

	mu      sync.Mutex
	next    uint16 // index of the next message the runner sends for this request
	aborted bool
	read    uint64 // request-body bytes the handler read, and returned to the engine (envoy)
	granted uint64

	// The response window (envoys): bytes of a streamed response sent, and consumed by the
	// engine's client; credit has a token when consumed may have grown.
	respSent, respConsumed uint64
	credit                 chan struct{}
}

// Streamed responses.
const (
	responseChunk  = 64 << 10 // the largest response chunk (the engine's frame)
	responseWindow = 1 << 20  // the envoy protocol's response window
)

// responseWindow takes the engine's count of a streamed response's bytes its client
// consumed (envoys).
func (r *Runner) responseWindow(id proto.MessageID, consumed uint64) {
	if r.host == nil {
		return
	}
	t := r.host.tunnelFor(tunnelKey{id.GatewayID, id.RequestID})
	if t == nil {
		return
	}
	t.mu.Lock()
	if consumed > t.respConsumed && consumed <= t.respSent {
		t.respConsumed = consumed
	}
	t.mu.Unlock()
	notify(t.credit)
}

// reserve waits until n more response bytes fit in the engine's window (envoys; a runner's
// socket has none) and counts them sent.
func (t *tunnel) reserve(n int) error {
	if !t.h.r.cfg.Envoy {
		return nil
	}
	for {
		t.mu.Lock()
		if t.respSent-t.respConsumed+uint64(n) <= responseWindow {
			t.respSent += uint64(n)
			t.mu.Unlock()
			return nil
		}
		t.mu.Unlock()
		select {
		case <-t.credit:
		case <-t.ctx.Done():
			return t.ctx.Err()
		}
	}
}

// sendBody sends b as response chunks, each within the window; an error once the request
// was aborted.
func (t *tunnel) sendBody(b []byte) error {
	for len(b) > 0 {
		n := min(len(b), responseChunk)
		if err := t.reserve(n); err != nil {
			return err
		}
		if !t.send(proto.ToServerResponseChunk{Body: bytes.Clone(b[:n])}) {
			return context.Canceled
		}
		b = b[n:]
	}
	return nil
}

// windowUpdateEvery is how many request-body bytes an envoy reads between two window
// updates: a quarter of the engine's 1 MiB window.
const windowUpdateEvery = 256 << 10

// bodyConsumed counts n more request-body bytes read by the handler and, every
// windowUpdateEvery bytes, returns them to the engine (envoys only).
func (t *tunnel) bodyConsumed(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.read += uint64(n)
	if t.aborted || t.read-t.granted < windowUpdateEvery {
		return
	}
	t.granted = t.read
	id := envoyproto.MessageID{GatewayID: envoyproto.GatewayID(t.key.gw), RequestID: envoyproto.RequestID(t.key.req), MessageIndex: t.next}
	t.next++
	t.h.r.sendEnvoy(envoyproto.ToRivetTunnelMessage{MessageID: id, MessageKind: envoyproto.ToRivetRequestBodyWindowUpdate{ConsumedBytes: t.granted}})
}

// tunnelMessage routes one message from the gateway. It never blocks: handlers run on
// goroutines of their own.
func (h *host) tunnelMessage(m proto.ToClientTunnelMessage) {
	key := tunnelKey{m.MessageID.GatewayID, m.MessageID.RequestID}
	switch k := m.MessageKind.(type) {
	case proto.ToClientRequestStart:
		t := h.openTunnel(key, k.ActorID)
		if t == nil {
			return
		}
		if k.Stream {
			t.body = newStreamBody(t.ctx)
			if h.r.cfg.Envoy {
				t.body.consumed = t.bodyConsumed
			}
		}
		go t.serveHTTP(k)
	case proto.ToClientWebSocketOpen:
		t := h.openTunnel(key, k.ActorID)
		if t == nil {
			return
		}
		t.ws = newWebSocket(t, k)
		go t.serveWebSocket()
	case proto.ToClientRequestChunk:
		if t := h.tunnelFor(key); t != nil && t.body != nil {
			t.body.push(k.Body, k.Finish)
		}
	case proto.ToClientRequestAbort:
		if t := h.tunnelFor(key); t != nil {
			t.abort()
		}
	case proto.ToClientWebSocketMessage:
		if t := h.tunnelFor(key); t != nil && t.ws != nil {
			t.ws.push(k)
		}
	case proto.ToClientWebSocketClose:
		if t := h.tunnelFor(key); t != nil && t.ws != nil {
			t.ws.peerClose(k)
		}
	}
}

// openTunnel registers a new request of the actor; nil when the host is closed.
func (h *host) openTunnel(key tunnelKey, actorID string) *tunnel {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.closed {
		return nil
	}
	if old := h.mu.tunnel[key]; old != nil {
		// A repeated open for the same ids (a retransmit): the new one wins.
		old.abort()
	}
	t := &tunnel{h: h, key: key, in: h.mu.actors[actorID], credit: make(chan struct{}, 1)}
	parent := h.ctx
	if t.in != nil {
		parent = t.in.serving
	}
	t.ctx, t.cancel = context.WithCancel(parent)
	h.mu.tunnel[key] = t
	h.wg.Add(1)
	return t
}

func (h *host) tunnelFor(key tunnelKey) *tunnel {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.tunnel[key]
}

// done forgets t and ends its goroutine's count.
func (t *tunnel) done() {
	t.cancel()
	t.h.mu.Lock()
	if t.h.mu.tunnel[t.key] == t {
		delete(t.h.mu.tunnel, t.key)
	}
	t.h.mu.Unlock()
	t.h.wg.Done()
}

func (t *tunnel) abort() {
	t.mu.Lock()
	t.aborted = true
	t.mu.Unlock()
	t.cancel()
	if t.body != nil {
		t.body.fail(errors.New("runner: request aborted by the gateway"))
	}
}

// send sends one message of this request with the next index; false after an abort.
func (t *tunnel) send(kind proto.ToServerTunnelMessageKind) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.aborted {
		return false
	}
	id := proto.MessageID{GatewayID: t.key.gw, RequestID: t.key.req, MessageIndex: t.next}
	t.next++
	t.h.r.sendTunnel(proto.ToServerTunnelMessage{MessageID: id, MessageKind: kind})
	return true
}

// respond sends a whole response.
func (t *tunnel) respond(status int, h http.Header, body []byte) {
	headers, hasLen := headersOf(h)
	var b []byte
	if len(body) > 0 {
		b = body
		if !hasLen {
			headers = append(headers, proto.Header{Name: "content-length", Value: strconv.Itoa(len(body))})
		}
	}
	t.send(proto.ToServerResponseStart{Status: uint16(status), Headers: mergeHeaders(headers), Body: b})
}

// headersOf is h for the wire: lowercase names, sorted, repeated values joined; hasLen
// reports a content-length among them.
func headersOf(h http.Header) (headers []proto.Header, hasLen bool) {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	sort.Strings(names)
	headers = make([]proto.Header, 0, len(names)+1)
	for _, name := range names {
		lower := strings.ToLower(name)
		hasLen = hasLen || lower == "content-length"
		headers = append(headers, proto.Header{Name: lower, Value: strings.Join(h[name], ", ")})
	}
	return headers, hasLen
}

// mergeHeaders joins names that differ only in case (http.Header keys are canonical, but a
// handler may set the map directly).
func mergeHeaders(hs []proto.Header) []proto.Header {
	out := hs[:0]
	for _, h := range hs {
		if i := indexHeader(out, h.Name); i >= 0 {
			out[i].Value += ", " + h.Value
			continue
		}
		out = append(out, h)
	}
	return out
}

func indexHeader(hs []proto.Header, name string) int {
	for i, h := range hs {
		if h.Name == name {
			return i
		}
	}
	return -1
}

// notFound is the answer for an actor that is not running here, which the gateway retries
// (the reference client's, and what Rivet's guard looks for).
func (t *tunnel) notFound() {
	t.respond(http.StatusServiceUnavailable, http.Header{
		"X-Rivet-Error": {"runner.actor_not_found"},
		"Content-Type":  {"text/plain; charset=utf-8"},
	}, []byte("Actor not found"))
}

func (t *tunnel) serveHTTP(start proto.ToClientRequestStart) {
	defer t.done()
	in := t.in
	if in == nil || !in.ready(t.ctx) {
		t.notFound() // unless aborted: send drops it
		return
	}
	handler, ok := in.impl.(http.Handler)
	if !ok {
		t.respond(http.StatusNotImplemented, http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, []byte("Not Implemented"))
		return
	}
	req, err := t.request(start)
	if err != nil {
		t.respond(http.StatusBadRequest, http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, []byte(err.Error()))
		return
	}
	w := &responseBuffer{header: http.Header{}, t: t}
	if !t.callHandler(func() { handler.ServeHTTP(w, req) }) {
		if w.streaming {
			t.send(proto.ToServerResponseAbort{})
			return
		}
		t.respond(http.StatusInternalServerError, http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, []byte("Internal Server Error"))
		return
	}
	if w.streaming {
		if t.ctx.Err() == nil && w.err == nil {
			t.send(proto.ToServerResponseChunk{Finish: true})
		}
		return
	}
	switch {
	case t.ctx.Err() != nil && w.status == 0 && w.body.Len() == 0:
		// Aborted by the gateway, or the actor stopped before the handler answered. An
		// answer the handler did write goes even when the actor has stopped meanwhile (a
		// handler that asks the actor to sleep, then answers): the gateway still waits for
		// it, and send drops it after an abort.
		return
	case w.tooLarge:
		in.log.Error("runner: response body larger than the engine takes; answering 500", "limit", maxResponseBody)
		t.respond(http.StatusInternalServerError, http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, []byte("Internal Server Error"))
		return
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if _, ok := w.header["Content-Type"]; !ok && w.body.Len() > 0 {
		w.header.Set("Content-Type", http.DetectContentType(w.body.Bytes())) // as net/http does
	}
	t.respond(w.status, w.header, w.body.Bytes())
}

// callHandler runs f, reporting false if it panicked.
func (t *tunnel) callHandler(f func()) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				t.in.log.Error("runner: actor handler panicked", "panic", p, "stack", string(debug.Stack()))
			}
			ok = false
		}
	}()
	f()
	return true
}

// request builds the actor's *http.Request from the gateway's.
func (t *tunnel) request(start proto.ToClientRequestStart) (*http.Request, error) {
	if !strings.HasPrefix(start.Path, "/") {
		return nil, fmt.Errorf("path %q does not start with /", start.Path)
	}
	var body io.Reader = http.NoBody
	size := int64(0)
	switch {
	case t.body != nil:
		body, size = t.body, -1
	case len(start.Body) > 0:
		body, size = bytes.NewReader(start.Body), int64(len(start.Body))
	}
	req, err := http.NewRequestWithContext(t.ctx, start.Method, "http://actor"+start.Path, body)
	if err != nil {
		return nil, err
	}
	req.RequestURI = start.Path
	req.ContentLength = size
	for _, h := range start.Headers {
		if strings.EqualFold(h.Name, "host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	return req, nil
}

// responseBuffer collects a handler's whole response, or streams it from the first Flush.
type responseBuffer struct {
	header    http.Header
	status    int
	body      bytes.Buffer
	tooLarge  bool
	t         *tunnel
	streaming bool
	err       error // a streamed write failed (the request was aborted)
}

// Flush starts streaming the response: its start goes now, with what was written so far.
func (w *responseBuffer) Flush() {
	if w.streaming || w.err != nil {
		return
	}
	w.streaming = true
	if w.status == 0 {
		w.status = http.StatusOK
	}
	headers, _ := headersOf(w.header)
	w.t.send(proto.ToServerResponseStart{Status: uint16(w.status), Headers: mergeHeaders(headers), Stream: true})
	if w.body.Len() > 0 {
		w.err = w.t.sendBody(w.body.Bytes())
		w.body = bytes.Buffer{}
	}
}

func (w *responseBuffer) Header() http.Header { return w.header }

func (w *responseBuffer) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *responseBuffer) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.streaming {
		if w.err == nil {
			w.err = w.t.sendBody(b)
		}
		if w.err != nil {
			return 0, w.err
		}
		return len(b), nil
	}
	if w.body.Len()+len(b) > maxResponseBody {
		w.tooLarge = true
		return 0, fmt.Errorf("runner: response body larger than %d bytes", maxResponseBody)
	}
	return w.body.Write(b)
}

// streamBody is a request body that arrives in chunks.
type streamBody struct {
	ctx      context.Context
	wake     chan struct{} // capacity 1
	consumed func(n int)   // called with the bytes of each read, or nil

	mu     sync.Mutex
	chunks [][]byte
	eof    bool
	err    error
}

func newStreamBody(ctx context.Context) *streamBody {
	return &streamBody{ctx: ctx, wake: make(chan struct{}, 1)}
}

func (b *streamBody) push(chunk []byte, finish bool) {
	b.mu.Lock()
	if len(chunk) > 0 {
		b.chunks = append(b.chunks, chunk)
	}
	b.eof = b.eof || finish
	b.mu.Unlock()
	notify(b.wake)
}

func (b *streamBody) fail(err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.mu.Unlock()
	notify(b.wake)
}

func (b *streamBody) Read(p []byte) (int, error) {
	for {
		b.mu.Lock()
		switch {
		case b.err != nil:
			b.mu.Unlock()
			return 0, b.err
		case len(b.chunks) > 0:
			n := copy(p, b.chunks[0])
			if b.chunks[0] = b.chunks[0][n:]; len(b.chunks[0]) == 0 {
				b.chunks = b.chunks[1:]
			}
			b.mu.Unlock()
			if b.consumed != nil {
				b.consumed(n)
			}
			return n, nil
		case b.eof:
			b.mu.Unlock()
			return 0, io.EOF
		}
		b.mu.Unlock()
		select {
		case <-b.wake:
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
	}
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// sendTunnel sends m, or keeps it for the next socket while disconnected.
func (r *Runner) sendTunnel(m proto.ToServerTunnelMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.mu.stopped:
	case r.mu.conn != nil:
		r.mu.conn.send(m)
	default:
		r.mu.tunnelOut = append(r.mu.tunnelOut, m)
	}
}

// sendEnvoy sends an envoy-only message; dropped while disconnected (the engine ends the
// socket's requests with it).
func (r *Runner) sendEnvoy(m envoyproto.ToRivet) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.mu.stopped && r.mu.conn != nil {
		r.mu.conn.push(outMsg{envoy: m})
	}
}

// tunnelMessage hands a gateway message to the host.
func (r *Runner) tunnelMessage(m proto.ToClientTunnelMessage) {
	if r.host == nil {
		r.log.Debug("runner: ignoring a tunnel message: no Config.Actors")
		return
	}
	r.host.tunnelMessage(m)
}
