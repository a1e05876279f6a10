package guard

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/berthhq/berth/guard/core"
	proto "github.com/berthhq/berth/pkg/protocol/runner"
	"github.com/berthhq/berth/pkg/rerr"
)

// serveHTTP tunnels one HTTP request to the actor, retrying while the actor moves: the first
// attempt may use a cached route, every retry resolves it again.
func (g *Gateway) serveHTTP(w http.ResponseWriter, r *http.Request, ray string, req actorRequest) {
	body, err := io.ReadAll(io.LimitReader(r.Body, g.o.MaxBody+1))
	if err != nil {
		g.fail(w, r, ray, rerr.New("guard", "invalid_request_body"))
		return
	}
	if int64(len(body)) > g.o.MaxBody {
		g.fail(w, r, ray, rerr.New("guard", "request_body_too_large"))
		return
	}
	if len(body) == 0 {
		body = nil
	}
	start := proto.ToClientRequestStart{
		ActorID: req.ActorID.String(), Method: r.Method, Path: req.Path, Headers: forwardHeaders(r), Body: body,
	}
	ctx := r.Context()
	var resp response
	err = g.o.Retry.Do(ctx, retryableHTTP, func(attempt int) error {
		g.retried("http", attempt)
		rt, err := g.routeFor(ctx, req, attempt)
		if err != nil {
			return err
		}
		resp, err = g.tunnelHTTP(ctx, rt, start)
		return err
	})
	var ex *core.Exhausted
	switch {
	case err == nil:
		writeResponse(w, resp)
	case ctx.Err() != nil:
		// The client went away.
	case errors.As(err, &ex):
		g.fail(w, r, ray, core.AttemptsExceeded(ex, "actor"))
	default:
		g.fail(w, r, ray, unwrapRoute(err))
	}
}

// response is an actor's complete answer.
type response struct {
	status  int
	headers []proto.Header
	body    []byte
}

// exchange sends the request through the actor's runner and reads the whole response. A
// runner's 503 runner.actor_not_found is core.ErrStaleRoute; an actor's 503/504 with a
// retryable guard code is that guard error (both retried).
func (g *Gateway) exchange(ctx context.Context, rt route, start proto.ToClientRequestStart) (response, error) {
	tun, err := g.openTunnel(rt)
	if err != nil {
		return response{}, rerr.New("guard", "service_unavailable").WithCause(err)
	}
	defer tun.Close()
	if err := tun.Send(start); err != nil {
		return response{}, rerr.New("guard", "tunnel_response_closed", "phase", "pre_request").WithCause(err)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, g.o.ResponseStartTimeout,
		rerr.New("guard", "gateway_response_start_timeout", "phase", "waiting_for_response_start"))
	defer cancel()
	var resp response
	for {
		m, err := tun.Recv(ctx)
		if err != nil {
			if ctx.Err() != nil {
				_ = tun.Send(proto.ToClientRequestAbort{})
				return response{}, context.Cause(ctx)
			}
			return response{}, rerr.New("guard", "tunnel_response_closed", "phase", "waiting_for_response_start").WithCause(err)
		}
		switch m := m.(type) {
		case proto.ToServerResponseStart:
			resp = response{status: int(m.Status), headers: m.Headers, body: m.Body}
			xerr := headerValue(m.Headers, "x-rivet-error")
			if m.Status == http.StatusServiceUnavailable && xerr == "runner.actor_not_found" {
				return response{}, core.ErrStaleRoute
			}
			if core.RetryableResponse(int(m.Status), xerr) {
				_, code, _ := strings.Cut(xerr, ".")
				return response{}, rerr.New("guard", code)
			}
			if !m.Stream {
				return resp, nil
			}
		case proto.ToServerResponseChunk:
			resp.body = append(resp.body, m.Body...)
			if m.Finish {
				return resp, nil
			}
		case proto.ToServerResponseAbort:
			return response{}, rerr.New("guard", "tunnel_request_aborted", "phase", "waiting_for_response_start")
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

// writeResponse writes the actor's response; content-length is recomputed.
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
}
