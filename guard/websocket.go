package guard

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/guard/core"
	"github.com/berthhq/berth/pkg/rerr"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// MaxWebSocketMessage bounds a client's WebSocket message (32 MiB).
const MaxWebSocketMessage = core.MaxWebSocketMessage

func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") && headerHasToken(r.Header, "Connection", "upgrade")
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// accept upgrades the client, answering subprotocol rivet only when it was offered.
func accept(w http.ResponseWriter, r *http.Request) (*websocket.Conn, error) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"rivet"}, OriginPatterns: []string{"*"}})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(MaxWebSocketMessage)
	return c, nil
}

// closeWithError upgrades the client and closes it with the error, as Rivet's guard does
// for a WebSocket it cannot route: 1011 (1000 for ws.eviction) and "group.code#ray".
func closeWithError(w http.ResponseWriter, r *http.Request, ray string, e *rerr.Error) {
	c, err := accept(w, r)
	if err != nil {
		return
	}
	_ = c.Close(websocket.StatusCode(rerr.CloseCode(e)), rerr.CloseReason(e, ray))
}

// serveWebSocket tunnels a client WebSocket to the actor, retrying the open while the actor
// moves (only guard.websocket_service_unavailable and stale routes, as Rivet).
func (g *Gateway) serveWebSocket(w http.ResponseWriter, r *http.Request, ray string, req actorRequest) {
	client, err := accept(w, r)
	if err != nil {
		return // Accept answered the request
	}
	defer client.CloseNow()
	ctx := r.Context()
	open := proto.ToClientWebSocketOpen{ActorID: req.ActorID.String(), Path: req.Path, Headers: wsHeaders(r, ray)}
	var tun Tunnel
	var canHibernate bool
	err = g.o.Retry.Do(ctx, retryableWebSocket, func(attempt int) error {
		var err error
		g.retried("websocket", attempt)
		tun, canHibernate, err = g.openWebSocketTraced(ctx, req, attempt, open)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		var ex *core.Exhausted
		if errors.As(err, &ex) {
			err = ex.Last
		}
		e, ok := rerr.As(unwrapRoute(err))
		if !ok {
			e = rerr.GuardWebSocketServiceUnavailable().WithCause(err)
		}
		_ = client.Close(websocket.StatusCode(rerr.CloseCode(e)), rerr.CloseReason(e, ray))
		return
	}
	s := &session{g: g, client: client, actorID: req.ActorID, tun: tun, canHibernate: canHibernate && g.resumable(tun), handled: make(chan struct{}, 1)}
	s.run(ctx)
}

// openWebSocket resolves the actor and opens the socket on its runner.
// canHibernate is the runner's answer: whether the socket may outlive the actor's sleep.
func (g *Gateway) openWebSocket(ctx context.Context, req actorRequest, attempt int, open proto.ToClientWebSocketOpen) (_ Tunnel, canHibernate bool, _ error) {
	rt, err := g.routeFor(ctx, req, attempt)
	if err != nil {
		return nil, false, err
	}
	tun, err := g.openTunnel(rt)
	if rerr.Is(err, rerr.CodeGuardHostOverloaded) {
		return nil, false, routeError{err} // the host is full: not retried
	}
	if err != nil {
		return nil, false, rerr.GuardWebSocketServiceUnavailable().WithCause(err)
	}
	if err := tun.Send(open); err != nil {
		tun.Close()
		return nil, false, rerr.GuardWebSocketServiceUnavailable().WithCause(err)
	}
	wctx, cancel := context.WithTimeoutCause(ctx, g.o.WebSocketOpenTimeout,
		rerr.GuardWebSocketOpenTimeout("waiting_for_websocket_open"))
	defer cancel()
	for {
		m, err := tun.Recv(wctx)
		if err != nil {
			tun.Close()
			if wctx.Err() != nil {
				return nil, false, context.Cause(wctx)
			}
			return nil, false, rerr.GuardWebSocketServiceUnavailable().WithCause(err)
		}
		switch m := m.(type) {
		case proto.ToServerWebSocketOpen:
			return tun, m.CanHibernate, nil
		case proto.ToServerWebSocketClose:
			// Refused before open: the runner does not host the actor (it moved), retry.
			tun.Close()
			return nil, false, core.ErrStaleRoute
		}
	}
}

// wsHeaders are the headers the actor sees for a WebSocket: forwardHeaders plus the
// client's subprotocols (rivetkit passes its encoding and connection params there).
func wsHeaders(r *http.Request, ray string) []proto.Header {
	hs := forwardHeaders(r, ray)
	if p := r.Header.Values("Sec-WebSocket-Protocol"); len(p) > 0 {
		hs = append(hs, proto.Header{Name: "sec-websocket-protocol", Value: strings.Join(p, ", ")})
	}
	return hs
}

// closeOf is the code and reason of a client's close, if it sent one.
func closeOf(err error) (*uint16, *string) {
	var ce websocket.CloseError
	if !errors.As(err, &ce) {
		return nil, nil
	}
	code := uint16(ce.Code)
	return &code, &ce.Reason
}
