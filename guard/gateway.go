package guard

import (
	"cmp"
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

	"github.com/berthhq/berth/guard/core"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// Tunnel is one request's channel to an actor through its runner's socket.
type Tunnel interface {
	Send(proto.ToClientTunnelMessageKind) error
	Recv(ctx context.Context) (proto.ToServerTunnelMessageKind, error)
	Close()
}

// Hosts reaches the hosts' sockets held in this datacenter (engine/cluster.Node): on this
// node, or relayed through the node that holds one.
type Hosts interface {
	// OpenTunnel starts a request to an actor on h.
	OpenTunnel(h actor.Host) (Tunnel, error)
	// ResumeTunnel continues hibernated request req of this node's gateway on runner rid,
	// its next message numbered next.
	ResumeTunnel(rid id.ID, req proto.RequestID, next uint16) (Tunnel, error)
	// GatewayID is this node's gateway id, which hibernating requests are recorded under.
	GatewayID() proto.GatewayID
	// Connected reports whether h's socket is held by a node of the datacenter: a running
	// actor whose host's is not is unreachable until its host reconnects or the actor
	// moves (its host lost).
	Connected(ctx context.Context, h actor.Host) (bool, error)
}

// Actors is the actor lifecycle of this datacenter (engine/pegboard.Actors): it wakes actors,
// reports their changes, and gets or creates the actors of query routing.
type Actors interface {
	Wake(ctx context.Context, aid id.ID) error
	Watch(aid id.ID) <-chan struct{}
	// OnChange calls f once, on a goroutine of its own, at the actor's next change; stop
	// cancels the call.
	OnChange(aid id.ID, f func()) (stop func())
	GetOrCreate(ctx context.Context, in actor.CreateInput) (actor.Actor, bool, error)
	// GetByKey returns the live actor holding a key, wherever it lives.
	GetByKey(ctx context.Context, ns id.ID, name, key string) (actor.Actor, bool, error)
}

// Options configures a Gateway. Zero durations and limits mean Rivet's defaults.
type Options struct {
	DB       udb.Database
	Hosts    Hosts
	Actors   Actors
	Topology apihttp.Topology
	Log      *slog.Logger
	// ResolveNamespace returns the namespace named name (namespace.not_found), for query
	// routing (api-peer's Server.ResolveNamespace: the leader owns namespaces).
	ResolveNamespace func(ctx context.Context, name string) (namespace.Namespace, error)
	// ActorReadyTimeout bounds the wait for an actor to become connectable (30 s).
	ActorReadyTimeout time.Duration
	// ResponseStartTimeout bounds the wait for an actor's response (5 min).
	ResponseStartTimeout time.Duration
	// WebSocketOpenTimeout bounds the wait for an actor to accept a WebSocket (15 s).
	WebSocketOpenTimeout time.Duration
	// ResolveQueryTimeout bounds query routing's actor lookup or creation (15 s).
	ResolveQueryTimeout time.Duration
	// FetchActorTimeout bounds each read of the actor's state while routing (5 s).
	FetchActorTimeout time.Duration
	// WakeSignalTimeout bounds each wake of a sleeping actor while routing (5 s).
	WakeSignalTimeout time.Duration
	// MaxBody bounds a request body sent to the actor in one message (20 MiB).
	MaxBody int64
	// StreamBody is the body size above which a request body is streamed to the actor in
	// chunks (1 MiB, core.StreamRequestBody); negative never streams (every body is read
	// whole, up to MaxBody). A streamed body has no total size limit.
	StreamBody int64
	// Retry is the retry schedule (7 attempts, 150 ms·2^(n−1)).
	Retry core.Policy
	// RateLimit is the per-client-IP admission of actor traffic (10,000 requests per 60 s,
	// 2,000 in flight).
	RateLimit core.RateLimit
	// MaxRequestsPerActor bounds the HTTP requests in flight to one actor through this
	// gateway (429 guard.actor_overloaded); 0 means no bound.
	MaxRequestsPerActor int
	// Transport carries requests proxied to other datacenters' gateways (their TLS settings);
	// nil means http.DefaultTransport.
	Transport http.RoundTripper
	// TrustedProxies may name the client in X-Forwarded-For (core.ClientIP); nobody by default.
	TrustedProxies core.Trusted
	// RouteCacheTTL is how long a resolved route is reused by first attempts (10 min, as
	// Rivet's route_cache_ttl); negative turns the cache off.
	RouteCacheTTL time.Duration
	// Telemetry is where spans and measurements go (telemetry.go); zero reports nothing.
	Telemetry Telemetry
}

// maxWakes bounds how often a request re-wakes an actor that keeps stopping (Rivet: 8).
const maxWakes = 8

// Gateway routes the guard port's traffic (Wrap) and serves actor requests.
type Gateway struct {
	o        Options
	limiter  *core.Limiter
	routes   *core.RouteCache[id.ID, route]
	holders  *core.RouteCache[heldKey, id.ID] // the actors of keys resolved here (heldKey)
	perActor *core.Slots[id.ID]               // HTTP requests in flight per actor
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
		o.MaxBody = core.MaxRequestBody
	}
	if o.StreamBody == 0 {
		o.StreamBody = core.StreamRequestBody
	}
	if o.Retry.MaxAttempts <= 0 {
		o.Retry.MaxAttempts = core.DefaultPolicy.MaxAttempts
	}
	if o.Retry.Initial <= 0 {
		o.Retry.Initial = core.DefaultPolicy.Initial
	}
	if o.RouteCacheTTL == 0 {
		o.RouteCacheTTL = 10 * time.Minute
	}
	return &Gateway{o: o, limiter: core.NewLimiter(o.RateLimit, nil), routes: core.NewRouteCache[id.ID, route](o.RouteCacheTTL, 0, nil),
		holders: core.NewRouteCache[heldKey, id.ID](o.RouteCacheTTL, 0, nil), perActor: core.NewSlots[id.ID](o.MaxRequestsPerActor)}
}

// actorRequest is a request routed to one actor: by path, query or target headers.
type actorRequest struct {
	ActorID id.ID
	// Path is what the actor sees: path and query, byte-exact.
	Path          string
	SkipReadyWait bool
}

// ServeHTTP serves a request already known to be for the gateway: a /gateway path, else
// guard.no_route.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, query := rawTarget(r)
	if !g.servePath(w, r, path, query) {
		g.fail(w, r, g.ray(w), rerr.GuardNoRoute())
	}
}

func (g *Gateway) ray(w http.ResponseWriter) string {
	ray := id.New(g.o.Topology.Local).String()
	w.Header().Set(apihttp.HeaderRayID, ray)
	return ray
}

// servePath serves the /gateway path forms; false when path is not one (then routing
// continues, as Rivet lets a malformed direct path fall through).
func (g *Gateway) servePath(w http.ResponseWriter, r *http.Request, path, query string) bool {
	if !isGatewayBase(path) {
		return false
	}
	if r.Method == http.MethodOptions {
		g.ray(w)
		cors(w.Header(), r)
		preflight(w, r)
		return true
	}
	q, isQuery, qerr := ParseQuery(path, query)
	var t Target
	var ok bool
	var err error
	if !isQuery {
		if t, ok, err = ParseDirect(path, query); !ok {
			return false
		}
	}
	ray := g.ray(w)
	cors(w.Header(), r)
	switch {
	case isQuery && qerr != nil:
		g.fail(w, r, ray, qerr)
	case isQuery:
		g.serveQuery(w, r, ray, q)
	case err != nil:
		g.fail(w, r, ray, err)
	default:
		skip, err := pathSkipReadyWait(r)
		if err != nil {
			g.fail(w, r, ray, err)
			return true
		}
		g.serveActor(w, r, ray, actorRequest{ActorID: t.ActorID, Path: t.Path, SkipReadyWait: skip})
	}
	return true
}

// serveQuery resolves a query-routed request to its actor and serves it; a getOrCreate for
// another datacenter's region, or whose key's actor lives in another datacenter, goes there
// whole.
func (g *Gateway) serveQuery(w http.ResponseWriter, r *http.Request, ray string, q Query) {
	release, err := g.limiter.Acquire(core.ClientIP(r, g.o.TrustedProxies))
	if err != nil {
		g.fail(w, r, ray, err)
		return
	}
	defer release()
	aid, dc, err := g.resolveQuery(r.Context(), q)
	switch {
	case err != nil:
		g.fail(w, r, ray, err)
	case dc != nil:
		g.proxyTo(w, r, ray, *dc)
	case aid.Label() != g.o.Topology.Local:
		// A key held in another datacenter (keys are unique across datacenters): the query
		// goes there whole, where the same lookup finds the actor in its own index.
		if other, ok := g.o.Topology.ByLabel(aid.Label()); ok {
			g.proxyTo(w, r, ray, other)
		} else {
			g.fail(w, r, ray, rerr.ActorNotFound(aid.String()))
		}
	default:
		g.serveResolved(w, r, ray, actorRequest{ActorID: aid, Path: q.Path, SkipReadyWait: q.SkipReadyWait})
	}
}

// serveActor serves a request for a known actor id: proxied whole to the actor's
// datacenter when it is another, else tunnelled to the actor.
func (g *Gateway) serveActor(w http.ResponseWriter, r *http.Request, ray string, req actorRequest) {
	if req.ActorID.Label() != g.o.Topology.Local {
		dc, ok := g.o.Topology.ByLabel(req.ActorID.Label())
		if !ok {
			g.fail(w, r, ray, rerr.ActorNotFound(req.ActorID.String()))
			return
		}
		g.proxyTo(w, r, ray, dc)
		return
	}
	release, err := g.limiter.Acquire(core.ClientIP(r, g.o.TrustedProxies))
	if err != nil {
		g.fail(w, r, ray, err)
		return
	}
	defer release()
	g.serveResolved(w, r, ray, req)
}

// serveResolved serves a request for an actor of this datacenter: a WebSocket, or an HTTP
// request within the actor's bound of requests in flight (before its body is read).
func (g *Gateway) serveResolved(w http.ResponseWriter, r *http.Request, ray string, req actorRequest) {
	w, done := g.observed(w, r, req)
	defer done()
	if isWebSocket(r) {
		g.serveWebSocket(w, r, ray, req)
		return
	}
	release, ok := g.perActor.Acquire(req.ActorID)
	if !ok {
		g.fail(w, r, ray, rerr.GuardActorOverloaded(g.o.MaxRequestsPerActor))
		return
	}
	defer release()
	g.serveHTTP(w, r, ray, req)
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

// corsHeaders are the headers cors sets.
var corsHeaders = []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Access-Control-Expose-Headers", "Vary"}

// cors sets the gateway's CORS headers (docs/gateway.md, "CORS").
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

// preflight answers an OPTIONS request for an actor without looking the actor up.
func preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS, PATCH")
	if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
		h.Set("Access-Control-Allow-Headers", req)
	}
	h.Set("Access-Control-Max-Age", "86400")
	w.WriteHeader(http.StatusNoContent)
}

// proxyTo sends the request, unchanged, to the gateway of datacenter dc, whose answer
// (CORS and ray id included) is the answer.
func (g *Gateway) proxyTo(w http.ResponseWriter, r *http.Request, ray string, dc apihttp.Datacenter) {
	u, err := url.Parse(dc.ProxyURL)
	if err != nil || dc.ProxyURL == "" {
		g.fail(w, r, ray, rerr.Internal(errors.New("guard: datacenter "+dc.Name+" has no valid proxy_url")))
		return
	}
	for _, h := range corsHeaders {
		w.Header().Del(h)
	}
	w.Header().Del(apihttp.HeaderRayID)
	p := &httputil.ReverseProxy{
		Transport: g.o.Transport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.URL.Path, pr.Out.URL.RawPath = r.URL.Path, r.URL.RawPath
			pr.SetXForwarded()
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.Header().Set(apihttp.HeaderRayID, ray)
			cors(w.Header(), r)
			writeError(w, rerr.DatacenterUnreachable(dc.Name, err))
		},
	}
	p.ServeHTTP(w, r)
}

// route is where a request goes: the actor and its host (a runner or an envoy).
type route struct {
	actor id.ID
	host  actor.Host
	// changed closes at the actor's first change after the read that found the route
	// (Actors.Watch): once it is closed, the route may be stale.
	changed <-chan struct{}
}

// openTunnel opens a tunnel to the route's host.
func (g *Gateway) openTunnel(rt route) (Tunnel, error) { return g.o.Hosts.OpenTunnel(rt.host) }

// routeError marks an error of route resolution: never retried (as in Rivet, where the
// resolution's error ends the request), whatever its code.
type routeError struct{ err error }

func (e routeError) Error() string { return e.err.Error() }
func (e routeError) Unwrap() error { return e.err }

// unwrapRoute returns the error a routeError carries.
func unwrapRoute(err error) error {
	var re routeError
	if errors.As(err, &re) {
		return re.err
	}
	return err
}

func retryableHTTP(err error) bool {
	var re routeError
	return !errors.As(err, &re) && core.RetryableHTTP(err)
}

func retryableWebSocket(err error) bool {
	var re routeError
	return !errors.As(err, &re) && core.RetryableWebSocket(err)
}

// routeFor returns the actor's route: on the first attempt a cached one if there is one,
// else (and on every retry) freshly resolved, which refreshes the cache.
func (g *Gateway) routeFor(ctx context.Context, req actorRequest, attempt int) (route, error) {
	if attempt == 1 {
		if rt, ok := g.routes.Get(req.ActorID); ok {
			return rt, nil
		}
	}
	rt, changed, connectable, err := g.resolveTraced(ctx, req.ActorID, req.SkipReadyWait)
	if err != nil {
		g.routes.Delete(req.ActorID)
		return route{}, routeError{err}
	}
	rt.changed = changed
	if connectable {
		g.routes.Put(req.ActorID, rt, changed)
	}
	return rt, nil
}

// resolve waits until the actor is connectable and returns its runner: a sleeping actor is
// woken (at most maxWakes times if it keeps stopping), bounded by ActorReadyTimeout. With
// skipReadyWait it returns as soon as the actor's runner is known (placed, not yet running).
// A running actor whose host's socket is gone (a killed runner, before it is declared lost)
// is waited for too, as on Rivet: its host reconnects, or is lost and the actor moves.
// changed closes at the actor's next change after the read that found the route.
func (g *Gateway) resolve(ctx context.Context, aid id.ID, skipReadyWait bool) (rt route, changed <-chan struct{}, connectable bool, err error) {
	ctx, cancel := context.WithTimeoutCause(ctx, g.o.ActorReadyTimeout, rerr.GuardActorReadyTimeout(aid.String()))
	defer cancel()
	wakes := 0
	began := time.Now()
	for {
		changed = g.o.Actors.Watch(aid)
		st, found, err := g.state(ctx, aid)
		if err != nil {
			return route{}, nil, false, err
		}
		if !found || st.Phase == actor.PhaseDestroyed {
			return route{}, nil, false, rerr.ActorNotFound(aid.String())
		}
		switch st.Phase {
		case actor.PhaseRunning:
			if st.Placed {
				up, err := g.connected(ctx, st.Host)
				if err != nil {
					return route{}, nil, false, err
				}
				if up {
					return route{actor: aid, host: st.Host}, changed, true, nil
				}
			}
		case actor.PhaseStarting:
			if st.Placed && skipReadyWait {
				return route{actor: aid, host: st.Host}, changed, false, nil
			}
		case actor.PhasePending:
			// Waiting for a runner its serverless pool's endpoint fails to start: given up
			// after a second, as on Rivet (docs/serverless.md § 5.4).
			if time.Since(began) >= runnerFailedAfter {
				if failing, err := g.poolFailing(ctx, aid); err != nil || failing {
					return route{}, nil, false, cmp.Or(err, error(rerr.GuardActorRunnerFailed(aid.String())))
				}
			}
		case actor.PhaseSleeping, actor.PhaseRescheduling:
			if wakes == maxWakes {
				return route{}, nil, false, rerr.GuardActorWakeRetriesExceeded()
			}
			wakes++
			if err := g.wake(ctx, aid); err != nil {
				return route{}, nil, false, ctxCause(ctx, err)
			}
			continue
		}
		select {
		case <-changed:
		case <-time.After(250 * time.Millisecond):
			// The change may have been made by another node: read again.
		case <-ctx.Done():
			return route{}, nil, false, context.Cause(ctx)
		}
	}
}

// runnerFailedAfter is how long a request waits for an actor of a failing pool.
const runnerFailedAfter = time.Second

// poolFailing reports whether the pending actor aid's pool has an error, bounded as a read
// of the actor's state.
func (g *Gateway) poolFailing(ctx context.Context, aid id.ID) (bool, error) {
	var failing bool
	err := phaseFetchActor.run(ctx, g.o.FetchActorTimeout, func(ctx context.Context) error {
		return udb.View(ctx, g.o.DB, func(r udb.ReadTransaction) error {
			var err error
			failing, err = actor.PoolFailing(ctx, r, aid)
			return err
		})
	})
	return failing, ctxCause(ctx, err)
}

// connected reports whether h's socket is held in this datacenter, bounded as a read of
// the actor's state.
func (g *Gateway) connected(ctx context.Context, h actor.Host) (bool, error) {
	var up bool
	err := phaseFetchActor.run(ctx, g.o.FetchActorTimeout, func(ctx context.Context) error {
		var err error
		up, err = g.o.Hosts.Connected(ctx, h)
		return err
	})
	return up, ctxCause(ctx, err)
}

// state reads the actor's lifecycle status, bounded by FetchActorTimeout
// (pegboard.route_fetch_actor_timeout).
func (g *Gateway) state(ctx context.Context, aid id.ID) (actor.Status, bool, error) {
	var st actor.Status
	var found bool
	err := phaseFetchActor.run(ctx, g.o.FetchActorTimeout, func(ctx context.Context) error {
		return udb.View(ctx, g.o.DB, func(r udb.ReadTransaction) error {
			var err error
			st, found, err = actor.Lookup(ctx, r, aid)
			return err
		})
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

// forwardHeaders are the request's headers for the actor: lowercase unique names (repeated
// values joined with ", "), hop-by-hop and berth's routing headers left out,
// x-forwarded-for and the request's ray id (x-rivet-ray-id, as Rivet sends it) added.
func forwardHeaders(r *http.Request, ray string) []proto.Header {
	out := make([]proto.Header, 0, len(r.Header)+2)
	for name, vals := range r.Header {
		lower := strings.ToLower(name)
		switch lower {
		case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer",
			"x-rivet-target", "x-rivet-actor", "x-rivet-token", "x-forwarded-for", apihttp.HeaderRayID:
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
	return append(out, proto.Header{Name: apihttp.HeaderRayID, Value: ray})
}
