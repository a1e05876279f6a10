package guard

import (
	"context"

	"io"
	"net/http"
	"strconv"
	"strings"

	proto "github.com/berthhq/berth/pkg/protocol/runner"
	"github.com/berthhq/berth/pkg/rerr"
)

// serveHTTP tunnels one HTTP request to the actor, retrying while the actor moves.
func (g *Gateway) serveHTTP(w http.ResponseWriter, r *http.Request, ray string, t Target) {
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
		ActorID: t.ActorID.String(), Method: r.Method, Path: t.Path, Headers: forwardHeaders(r), Body: body,
	}
	ctx := r.Context()
	var last error
	for attempt := 1; attempt <= MaxAttempts; attempt++ {
		if attempt > 1 {
			if err := sleepCtx(ctx, backoff(attempt)); err != nil {
				return
			}
		}
		rt, err := g.resolve(ctx, t.ActorID)
		if err != nil {
			if ctx.Err() == nil {
				g.fail(w, r, ray, err)
			}
			return
		}
		resp, err := g.exchange(ctx, rt, start)
		if err == nil {
			writeResponse(w, resp)
			return
		}
		if !retryable(err) {
			g.fail(w, r, ray, err)
			return
		}
		last = err
	}
	g.fail(w, r, ray, rerr.New("guard", "retry_attempts_exceeded", "attempts", MaxAttempts, "last_error", errText(last)))
}

func errText(err error) string {
	if e, ok := rerr.As(err); ok {
		return e.Key()
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// response is an actor's complete answer.
type response struct {
	status  int
	headers []proto.Header
	body    []byte
}

// exchange sends the request through the actor's runner and reads the whole response.
func (g *Gateway) exchange(ctx context.Context, rt route, start proto.ToClientRequestStart) (response, error) {
	tun, err := g.o.Tunnels.OpenTunnel(rt.runnerID)
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
			if headerValue(m.Headers, "x-rivet-error") == "runner.actor_not_found" && m.Status == http.StatusServiceUnavailable {
				return response{}, errActorNotHere
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
