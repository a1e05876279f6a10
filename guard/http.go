package guard

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/berthhq/berth/guard/core"
	"github.com/berthhq/berth/pkg/rerr"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// serveHTTP tunnels one HTTP request to the actor, retrying while the actor moves: the first
// attempt may use a cached route, every retry resolves it again. A body above StreamBody is
// streamed (stream.go); such a request is retried only while nothing past the first
// StreamBody bytes was read from the client.
func (g *Gateway) serveHTTP(w http.ResponseWriter, r *http.Request, ray string, req actorRequest) {
	body, streamed, err := g.readBody(w, r)
	if err != nil {
		g.fail(w, r, ray, err)
		return
	}
	start := proto.ToClientRequestStart{
		ActorID: req.ActorID.String(), Method: r.Method, Path: req.Path, Headers: forwardHeaders(r, ray), Body: body,
		Stream: streamed != nil,
	}
	ctx := r.Context()
	var resp response
	err = g.o.Retry.Do(ctx, retryableHTTP, func(attempt int) error {
		g.retried("http", attempt)
		rt, err := g.routeFor(ctx, req, attempt)
		if err != nil {
			return err
		}
		start, body := start, streamed
		if streamed != nil && !rt.host.IsEnvoy() {
			// Runners get the body whole: runner 2.2.1 forgets a streamed request at its
			// finishing chunk and drops its response (so Rivet never streams to runners).
			whole, err := streamed.whole(g.o.MaxBody)
			if err != nil {
				return routeError{err}
			}
			start.Stream, start.Body, body = false, whole, nil
		}
		resp, err = g.tunnelHTTP(ctx, rt, start, body)
		if err != nil && streamed != nil && !streamed.replayable() {
			return core.Unreplayable(err)
		}
		return err
	})
	var ex *core.Exhausted
	switch {
	case err == nil && resp.live != nil:
		g.writeStreamed(ctx, w, resp)
	case err == nil:
		writeResponse(w, resp)
	case ctx.Err() != nil:
		// The client went away.
	case errors.As(err, &ex):
		g.fail(w, r, ray, core.AttemptsExceeded(ex, "actor"))
	case errors.Is(err, core.ErrStaleRoute):
		// A streamed request the actor refused once its body had gone: not retried.
		g.fail(w, r, ray, rerr.GuardServiceUnavailable().WithCause(err))
	default:
		g.fail(w, r, ray, unwrapRoute(err))
	}
}

// readBody reads a request body that goes in one message (nil when empty), or returns the
// streamed body of a larger one: Content-Length above StreamBody, or no Content-Length and
// more than StreamBody bytes.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *streamedBody, error) {
	limit := g.o.MaxBody
	mayStream := g.o.StreamBody >= 0 && (r.ContentLength < 0 || r.ContentLength > g.o.StreamBody)
	if mayStream {
		limit = g.o.StreamBody
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, nil, rerr.GuardInvalidRequestBody().WithCause(err)
	}
	if mayStream && int64(len(body)) > limit {
		return nil, &streamedBody{prefix: body, rest: r.Body, rc: http.NewResponseController(w)}, nil
	}
	if int64(len(body)) > g.o.MaxBody {
		return nil, nil, rerr.GuardInvalidRequestBody()
	}
	if len(body) == 0 {
		body = nil
	}
	return body, nil, nil
}

// response is an actor's answer: complete, or (live set) its status and headers with the body
// still to come.
type response struct {
	status  int
	headers []proto.Header
	body    []byte
	live    *liveResponse
}

// exchange sends the request through the actor's runner and reads the response: whole, or
// its start when the actor streams it (then resp.live holds the tunnel, and the request
// body's pump, until writeStreamed is done). A runner's 503 runner.actor_not_found is
// core.ErrStaleRoute; an actor's 503/504 with a retryable guard code is that guard error
// (both retried). A streamed request body is pumped to the actor while the response is
// awaited.
func (g *Gateway) exchange(ctx context.Context, rt route, start proto.ToClientRequestStart, body *streamedBody) (resp response, err error) {
	tun, err := g.openTunnel(rt)
	if rerr.Is(err, rerr.CodeGuardHostOverloaded) {
		return response{}, routeError{err} // the host is full: answered at once, not retried
	}
	if err != nil {
		return response{}, rerr.GuardServiceUnavailable().WithCause(err)
	}
	// sctx is the request's for as long as the tunnel is used; a failed body read ends it.
	sctx, scancel := context.WithCancelCause(ctx)
	var p *pump
	defer func() {
		if resp.live == nil {
			scancel(nil)
			tun.Close() // first: it ends a pump waiting for the host's credit
			p.stop()
		}
	}()
	if err := tun.Send(start); err != nil {
		return response{}, rerr.GuardTunnelResponseClosed("pre_request").WithCause(err)
	}
	if body != nil {
		p = body.pump(sctx, scancel, tun)
	}
	wctx, cancel := context.WithTimeoutCause(sctx, g.o.ResponseStartTimeout,
		rerr.GuardGatewayResponseStartTimeout("waiting_for_response_start"))
	defer cancel()
	wctx, release := g.untilStopped(wctx, rt)
	defer release()
	for {
		m, err := tun.Recv(wctx)
		if err != nil {
			if wctx.Err() != nil {
				_ = tun.Send(proto.ToClientRequestAbort{})
				return response{}, context.Cause(wctx)
			}
			return response{}, rerr.GuardTunnelResponseClosed("waiting_for_response_start").WithCause(err)
		}
		switch m := m.(type) {
		case proto.ToServerResponseStart:
			resp = response{status: int(m.Status), headers: m.Headers, body: m.Body}
			xerr := headerValue(m.Headers, "x-rivet-error")
			if m.Status == http.StatusServiceUnavailable && rerr.ParseCode(xerr) == rerr.CodeRunnerActorNotFound {
				return response{}, core.ErrStaleRoute
			}
			if core.RetryableResponse(int(m.Status), xerr) {
				group, code, _ := strings.Cut(xerr, ".")
				return response{}, rerr.FromWire(group, code)
			}
			if !m.Stream {
				return resp, nil
			}
			resp.live = &liveResponse{ctx: sctx, cancel: scancel, tun: tun, pump: p}
			return resp, nil
		case proto.ToServerResponseAbort:
			return response{}, rerr.GuardTunnelRequestAborted("waiting_for_response_start")
		}
	}
}

func headerValue(hs []proto.Header, name string) string {
	for _, h := range hs {
		if strings.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return ""
}

// writeResponse writes the actor's response; content-length is recomputed. The response is
// flushed at once, so that the client does not wait for the request's clean-up and the
// middleware's bookkeeping, which net/http's own flush would follow.
func writeResponse(w http.ResponseWriter, resp response) {
	h := w.Header()
	for _, hd := range resp.headers {
		switch strings.ToLower(hd.Name) {
		case "content-length", "transfer-encoding", "connection":
			continue
		}
		h.Set(hd.Name, hd.Value)
	}
	h.Set("Content-Length", strconv.Itoa(len(resp.body)))
	status := resp.status
	if status < 100 || status > 999 {
		status = http.StatusBadGateway
	}
	w.WriteHeader(status)
	_, _ = w.Write(resp.body)
	_ = http.NewResponseController(w).Flush()
}
