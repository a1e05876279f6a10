package guard

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	proto "github.com/berthhq/berth/pkg/protocol/runner"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Tunnel is one request's channel to an actor through its runner's socket.
type Tunnel interface {
	Send(proto.ToClientTunnelMessageKind) error
	Recv(ctx context.Context) (proto.ToServerTunnelMessageKind, error)
	Close()
}

// Tunnels opens tunnels to runners whose socket this node holds.
type Tunnels interface {
	OpenTunnel(runnerID id.ID) (Tunnel, error)
}

// Actors wakes actors and reports their changes (engine/pegboard.Actors).
type Actors interface {
	Wake(ctx context.Context, aid id.ID) error
	Watch(aid id.ID) <-chan struct{}
}

// Options configures a Gateway. Zero durations mean Rivet's defaults.
type Options struct {
	DB       udb.Database
	Tunnels  Tunnels
	Actors   Actors
	Topology apihttp.Topology
	Log      *slog.Logger
	// ActorReadyTimeout bounds the wait for an actor to become connectable (30 s).
	ActorReadyTimeout time.Duration
	// ResponseStartTimeout bounds the wait for an actor's response (5 min).
	ResponseStartTimeout time.Duration
	// WebSocketOpenTimeout bounds the wait for an actor to accept a WebSocket (15 s).
	WebSocketOpenTimeout time.Duration
	// MaxBody bounds a request body (20 MiB).
	MaxBody int64
}

// Retry schedule (guard-core): up to MaxAttempts, waiting 150 ms·2^(n−1) before retry n.
const (
	MaxAttempts     = 7
	initialInterval = 150 * time.Millisecond
	maxWakes        = 8
)

// Gateway serves the /gateway/ paths.
type Gateway struct {
	o Options
}

// New returns a Gateway.
func New(o Options) *Gateway {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.ActorReadyTimeout <= 0 {
		o.ActorReadyTimeout = 30 * time.Second
	}
	if o.ResponseStartTimeout <= 0 {
		o.ResponseStartTimeout = 5 * time.Minute
	}
	if o.WebSocketOpenTimeout <= 0 {
		o.WebSocketOpenTimeout = 15 * time.Second
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 20 << 20
	}
	return &Gateway{o: o}
}

// Wrap serves the gateway paths in front of next, which gets every other request.
func (g *Gateway) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !IsGatewayPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		g.ServeHTTP(w, r)
	})
}

// ServeHTTP serves one gateway request.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ray := id.New(g.o.Topology.Local).String()
	w.Header().Set(apihttp.HeaderRayID, ray)
	cors(w.Header(), r)
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		preflight(w, r)
		return
	}
	t, ok, err := ParseDirect(r.URL.EscapedPath(), r.URL.RawQuery)
	if !ok {
		g.fail(w, r, ray, rerr.New("guard", "no_route"))
		return
	}
	if err != nil {
		g.fail(w, r, ray, err)
		return
	}
	if t.ActorID.Label() != g.o.Topology.Local {
		g.proxyToDatacenter(w, r, ray, t.ActorID)
		return
	}
	if isWebSocket(r) {
		g.serveWebSocket(w, r, ray, t)
		return
	}
	g.serveHTTP(w, r, ray, t)
}

// fail answers err: a JSON error with x-rivet-error, or a close frame on a WebSocket.
func (g *Gateway) fail(w http.ResponseWriter, r *http.Request, ray string, err error) {
	e, ok := rerr.As(err)
	if !ok {
		g.o.Log.Error("gateway: internal error", "ray_id", ray, "path", r.URL.Path, "error", err)
		e = rerr.Internal(err)
	}
	if isWebSocket(r) {
		closeWithError(w, r, ray, e)
		return
	}
	writeError(w, e)
}

func writeError(w http.ResponseWriter, e *rerr.Error) {
	b, _ := json.Marshal(e)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Rivet-Error", e.Key())
	w.WriteHeader(rerr.HTTPStatus(e))
	_, _ = w.Write(b)
}

// cors sets the gateway's CORS headers (rivet-engine.md §5.10).
func cors(h http.Header, r *http.Request) {
	origin := r.Header.Get("Origin")
	if origin == "" {
		origin = "*"
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Access-Control-Expose-Headers", "*")
	h.Add("Vary", "Origin")
}

func preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS, PATCH")
	if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
		h.Set("Access-Control-Allow-Headers", req)
	}
	h.Set("Access-Control-Max-Age", "86400")
	w.WriteHeader(http.StatusNoContent)
}

// proxyToDatacenter sends the request, unchanged, to the gateway of the datacenter the
// actor id names.
func (g *Gateway) proxyToDatacenter(w http.ResponseWriter, r *http.Request, ray string, aid id.ID) {
	dc, ok := g.o.Topology.ByLabel(aid.Label())
	if !ok {
		g.fail(w, r, ray, rerr.ActorNotFound(aid.String()))
		return
	}
	u, err := url.Parse(dc.ProxyURL)
	if err != nil {
		g.fail(w, r, ray, rerr.Internal(err))
		return
	}
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.URL.Path, pr.Out.URL.RawPath = r.URL.Path, r.URL.RawPath
			pr.SetXForwarded()
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeError(w, rerr.DatacenterUnreachable(dc.Name, err))
		},
	}
	p.ServeHTTP(w, r)
}

// route is where a request goes: the actor's runner.
type route struct {
	runnerID id.ID
}

// resolve waits until the actor is connectable and returns its runner: a sleeping actor is
// woken (at most maxWakes times if it keeps stopping), bounded by ActorReadyTimeout.
func (g *Gateway) resolve(ctx context.Context, aid id.ID) (route, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, g.o.ActorReadyTimeout, rerr.New("guard", "actor_ready_timeout"))
	defer cancel()
	wakes := 0
	for {
		changed := g.o.Actors.Watch(aid)
		st, found, err := g.state(ctx, aid)
		if err != nil {
			return route{}, err
		}
		if !found || st.Phase == keys.PhaseDestroyed {
			return route{}, rerr.ActorNotFound(aid.String())
		}
		switch st.Phase {
		case keys.PhaseRunning:
			return route{runnerID: *st.RunnerID}, nil
		case keys.PhaseSleeping, keys.PhaseRescheduling:
			if wakes == maxWakes {
				return route{}, rerr.New("guard", "actor_wake_retries_exceeded")
			}
			wakes++
			if err := g.o.Actors.Wake(ctx, aid); err != nil {
				return route{}, ctxCause(ctx, err)
			}
			continue
		}
		select {
		case <-changed:
		case <-time.After(250 * time.Millisecond):
			// The change may have been made by another node: read again.
		case <-ctx.Done():
			return route{}, context.Cause(ctx)
		}
	}
}

func (g *Gateway) state(ctx context.Context, aid id.ID) (keys.ActorState, bool, error) {
	var st keys.ActorState
	var found bool
	_, err := g.o.DB.ReadTransact(ctx, func(r udb.ReadTransaction) (any, error) {
		var err error
		st, found, err = actor.State(ctx, r, aid)
		return nil, err
	})
	return st, found, ctxCause(ctx, err)
}

// ctxCause returns the context's cause when err came from its end.
func ctxCause(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// retryable reports whether a failed attempt may be retried after re-resolving.
func retryable(err error) bool {
	if errors.Is(err, errActorNotHere) {
		return true
	}
	e, ok := rerr.As(err)
	if !ok {
		return false
	}
	switch e.Key() {
	case "guard.service_unavailable", "guard.actor_stopped_while_waiting", "guard.tunnel_request_aborted",
		"guard.tunnel_message_timeout", "guard.tunnel_response_closed", "guard.websocket_service_unavailable":
		return true
	}
	return false
}

// errActorNotHere: the runner answered that it does not host the actor (it moved).
var errActorNotHere = errors.New("guard: the runner does not host the actor")

// backoff is the wait before attempt n (n ≥ 2).
func backoff(n int) time.Duration { return initialInterval << (n - 2) }

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// forwardHeaders are the request's headers for the actor: lowercase unique names (repeated
// values joined with ", "), hop-by-hop and berth's routing headers left out,
// x-forwarded-for added.
func forwardHeaders(r *http.Request) []proto.Header {
	out := make([]proto.Header, 0, len(r.Header)+1)
	for name, vals := range r.Header {
		lower := strings.ToLower(name)
		switch lower {
		case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer",
			"x-rivet-target", "x-rivet-actor", "x-rivet-token", "x-forwarded-for":
			continue
		}
		if strings.HasPrefix(lower, "sec-websocket-") {
			continue
		}
		out = append(out, proto.Header{Name: lower, Value: strings.Join(vals, ", ")})
	}
	xff := r.Header.Get("X-Forwarded-For")
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if xff != "" {
			xff += ", "
		}
		xff += host
	}
	if xff != "" {
		out = append(out, proto.Header{Name: "x-forwarded-for", Value: xff})
	}
	if r.Host != "" && r.Header.Get("Host") == "" {
		out = append(out, proto.Header{Name: "host", Value: r.Host})
	}
	return out
}
