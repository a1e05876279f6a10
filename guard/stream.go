package guard

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berthhq/berth/guard/core"
	"github.com/berthhq/berth/pkg/rerr"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// Streamed bodies (docs/protocol.md, "Tunnels and message ids"; envoy v8 flow control):
//
// A request body above Options.StreamBody goes to an envoy as ToClientRequestStart{stream:
// true} and then ToClientRequestChunk messages of at most core.BodyChunk bytes, the last with
// finish, sent by a pump while the response is awaited. The gateway holds one chunk at a
// time, plus the first StreamBody bytes, kept so that an attempt that failed before anything
// past them was read can be retried; after that the request is not replayable
// (core.Unreplayable). The envoy's window paces the chunks (engine/hostsock). When the actor
// cancels the body (core.ErrRequestBodyCancelled) the pump stops reading and the response
// goes on. A runner (protocol v7) gets the body whole, up to MaxBody, as before: runner 2.2.1
// forgets a streamed request when its body finishes and drops the response, which is why
// Rivet's gateway never streams to runners.
//
// A response the actor streams (ToServerResponseStart{stream: true}, then
// ToServerResponseChunk … finish) is written to the client chunk by chunk, each flushed;
// a tunnel that paces its host by the client's consumption (ResponseBodyConsumer, an envoy's
// window updates) is told the bytes written. The response has started once its status is
// written, so a failure after that (ToServerResponseAbort, the tunnel closing) breaks the
// client's connection rather than answering an error. A client that goes away, before or
// during the response, gets the actor a ToClientRequestAbort.

// ResponseBodyConsumer is a Tunnel whose host paces a streamed response by what the client
// consumed: ConsumedResponseBody reports n more bytes written to the client.
type ResponseBodyConsumer interface {
	ConsumedResponseBody(n int) error
}

// streamedBody is a request body too large to send in one message: prefix, read already,
// then rest, which can be read once.
type streamedBody struct {
	prefix []byte
	rest   io.Reader
	rc     *http.ResponseController // ends a blocked read of rest
	// pastPrefix is set before the first read of rest: from then on the body cannot be sent
	// again, unless full holds it whole (whole).
	pastPrefix atomic.Bool
	full       []byte
}

// replayable reports whether the body can be sent again from its start.
func (b *streamedBody) replayable() bool { return b.full != nil || !b.pastPrefix.Load() }

// whole reads the rest of the body, at most max bytes in all (else 413
// guard.invalid_request_body), for a host that takes bodies in one message. Not
// concurrent with a pump.
func (b *streamedBody) whole(max int64) ([]byte, error) {
	if b.full != nil {
		return b.full, nil
	}
	if b.pastPrefix.Load() {
		return nil, rerr.New("guard", "service_unavailable").WithCause(errors.New("the body was partly streamed already"))
	}
	b.pastPrefix.Store(true)
	rest, err := io.ReadAll(io.LimitReader(b.rest, max-int64(len(b.prefix))+1))
	if err != nil {
		return nil, rerr.New("guard", "invalid_request_body").WithCause(err)
	}
	if int64(len(b.prefix)+len(rest)) > max {
		return nil, rerr.New("guard", "invalid_request_body")
	}
	b.full = append(b.prefix, rest...)
	return b.full, nil
}

// pump sends the body to tun, from its start, on a goroutine; a failed read of the client's
// body cancels ctx with guard.invalid_request_body.
func (b *streamedBody) pump(ctx context.Context, cancel context.CancelCauseFunc, tun Tunnel) *pump {
	p := &pump{b: b, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.run(ctx, cancel, tun)
	}()
	return p
}

// pump is one attempt's sending of a streamed request body.
type pump struct {
	b    *streamedBody
	done chan struct{}

	mu      sync.Mutex
	reading bool // blocked in a read of the client's body
	stopped bool
}

func (p *pump) run(ctx context.Context, cancel context.CancelCauseFunc, tun Tunnel) {
	src := io.MultiReader(bytes.NewReader(p.b.prefix), p.restReader())
	if p.b.full != nil { // read whole for a runner by an earlier attempt
		src = bytes.NewReader(p.b.full)
	}
	buf := make([]byte, core.BodyChunk)
	for ctx.Err() == nil {
		n, err := src.Read(buf)
		last := err == io.EOF
		if err != nil && !last {
			if ctx.Err() == nil {
				cancel(rerr.New("guard", "invalid_request_body").WithCause(err))
			}
			return
		}
		if n == 0 && !last {
			continue
		}
		// Cloned: a tunnel may keep the message (a relay to another node).
		err = tun.Send(proto.ToClientRequestChunk{Body: bytes.Clone(buf[:n]), Finish: last})
		if err != nil || last {
			return // a closed tunnel is the response's error; a cancelled body is not one
		}
	}
}

// restReader reads the client's body past the prefix, marking the body not replayable and
// letting stop end a blocked read.
func (p *pump) restReader() io.Reader {
	return readerFunc(func(b []byte) (int, error) {
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			return 0, context.Canceled
		}
		p.reading = true
		p.mu.Unlock()
		p.b.pastPrefix.Store(true)
		n, err := p.b.rest.Read(b)
		p.mu.Lock()
		p.reading = false
		p.mu.Unlock()
		return n, err
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(b []byte) (int, error) { return f(b) }

// stop ends the pump and waits for it; its context must be cancelled and its tunnel closed
// first. A read of the
// client's body under way is cut by a past read deadline (the client's connection is then
// not reused). A nil pump is stopped.
func (p *pump) stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.stopped = true
	if p.reading {
		_ = p.b.rc.SetReadDeadline(time.Now())
	}
	p.mu.Unlock()
	<-p.done
}

// liveResponse is a streamed response whose body is still to come.
type liveResponse struct {
	ctx    context.Context // the request's, cancelled by a failed body read
	cancel context.CancelCauseFunc
	tun    Tunnel
	pump   *pump
}

func (l *liveResponse) close() {
	l.cancel(nil)
	l.tun.Close() // first: it ends a pump waiting for the host's credit
	l.pump.stop()
}

// writeStreamed writes a streamed response: status and headers at once, then each chunk as
// it comes, flushed. A failure once the status is written aborts the client's connection.
func (g *Gateway) writeStreamed(ctx context.Context, w http.ResponseWriter, resp response) {
	l := resp.live
	defer l.close()
	h := w.Header()
	for _, hd := range resp.headers {
		switch strings.ToLower(hd.Name) {
		case "transfer-encoding", "connection":
			continue
		case "content-length":
			if n, err := strconv.ParseInt(hd.Value, 10, 64); err != nil || n < 0 {
				continue
			}
		}
		h.Set(hd.Name, hd.Value)
	}
	status := resp.status
	if status < 100 || status > 999 {
		status = http.StatusBadGateway
	}
	w.WriteHeader(status)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	consumer, _ := l.tun.(ResponseBodyConsumer)
	if len(resp.body) > 0 && !g.writeChunk(w, rc, consumer, resp.body) {
		_ = l.tun.Send(proto.ToClientRequestAbort{})
		panic(http.ErrAbortHandler)
	}
	for {
		m, err := l.tun.Recv(l.ctx)
		if err != nil {
			if ctx.Err() != nil || l.ctx.Err() != nil {
				_ = l.tun.Send(proto.ToClientRequestAbort{})
			}
			g.o.Log.Debug("gateway: streamed response cut", "error", errors.Join(err, context.Cause(l.ctx)))
			panic(http.ErrAbortHandler)
		}
		switch m := m.(type) {
		case proto.ToServerResponseChunk:
			if len(m.Body) > 0 && !g.writeChunk(w, rc, consumer, m.Body) {
				_ = l.tun.Send(proto.ToClientRequestAbort{})
				panic(http.ErrAbortHandler)
			}
			if m.Finish {
				return
			}
		case proto.ToServerResponseAbort:
			g.o.Log.Debug("gateway: the actor aborted its streamed response")
			panic(http.ErrAbortHandler)
		}
	}
}

// writeChunk writes and flushes one chunk of a streamed response and reports it consumed;
// false when the client is gone.
func (g *Gateway) writeChunk(w http.ResponseWriter, rc *http.ResponseController, consumer ResponseBodyConsumer, b []byte) bool {
	if _, err := w.Write(b); err != nil {
		return false
	}
	if err := rc.Flush(); err != nil {
		return false
	}
	if consumer != nil {
		_ = consumer.ConsumedResponseBody(len(b))
	}
	return true
}
