package guard

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
)

// Routing headers and WebSocket subprotocols (docs/gateway.md, "Header routing").
const (
	headerTarget        = "X-Rivet-Target"
	headerActor         = "X-Rivet-Actor"
	headerToken         = "X-Rivet-Token"
	headerSkipReadyWait = "X-Rivet-Skip-Ready-Wait"

	protocolTarget        = "rivet_target."
	protocolActor         = "rivet_actor."
	protocolToken         = "rivet_token."
	protocolSkipReadyWait = "rivet_skip_ready_wait"
)

// Wrap routes the guard port in Rivet's order (docs/gateway.md) in front of next, which
// serves the runner and envoy sockets and the public API:
//
//  1. the /gateway path forms (query, then direct) → the actor;
//  2. the /runners/connect and /envoys/connect paths → next;
//  3. the target, from the first rivet_target.<t> subprotocol of a WebSocket or the
//     x-rivet-target header of HTTP: actor → header routing (HTTP only for /request paths),
//     runner, envoy and api-public → next, anything else → 404 guard.no_route;
//  4. no target → next (the public API, whose own 404 api.not_found answers unknown paths,
//     as Rivet's api-public does).
//
// An actor-target HTTP request for another path matches nothing: guard.no_route.
func (g *Gateway) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, query := rawTarget(r)
		if g.servePath(w, r, path, query) {
			return
		}
		if isSocketPath(path) {
			next.ServeHTTP(w, r)
			return
		}
		target, has := routingTarget(r)
		switch {
		case !has, target == "runner", target == "envoy", target == "api-public":
			next.ServeHTTP(w, r)
		case target == "actor" && (r.Method == http.MethodOptions || isWebSocket(r) || isActorRequestPath(path)):
			g.serveTarget(w, r)
		default:
			g.fail(w, r, g.ray(w), rerr.GuardNoRoute())
		}
	})
}

// rawTarget is the request's path and query as the client sent them (the request-target of
// an origin-form request; else the URL's escaped path), without a #fragment.
func rawTarget(r *http.Request) (path, query string) {
	raw := r.RequestURI
	if !strings.HasPrefix(raw, "/") {
		raw = r.URL.EscapedPath()
		if r.URL.RawQuery != "" || r.URL.ForceQuery {
			raw += "?" + r.URL.RawQuery
		}
	}
	path, query, _ = splitTarget(raw)
	return path, query
}

func isSocketPath(path string) bool {
	switch path {
	case "/runners/connect", "/runners/connect/", "/envoys/connect", "/envoys/connect/":
		return true
	}
	return false
}

// isActorRequestPath reports whether header routing serves this HTTP path: /request,
// /request/... or /request?....
func isActorRequestPath(path string) bool {
	rest, ok := strings.CutPrefix(path, "/request")
	return ok && (rest == "" || rest[0] == '/')
}

// offered is the client's WebSocket subprotocols, trimmed, in order.
func offered(r *http.Request) []string {
	var out []string
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(h, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// routingTarget is the request's target: for a WebSocket the first rivet_target.<t>
// subprotocol, for HTTP the x-rivet-target header.
func routingTarget(r *http.Request) (string, bool) {
	if isWebSocket(r) {
		for _, p := range offered(r) {
			if t, ok := strings.CutPrefix(p, protocolTarget); ok {
				return t, true
			}
		}
		return "", false
	}
	if v := r.Header.Values(headerTarget); len(v) > 0 {
		return v[0], true
	}
	return "", false
}

// serveTarget serves an actor-target request: the actor from x-rivet-actor (HTTP) or the
// rivet_actor.<url-encoded id> subprotocol (WebSocket); the path is forwarded unchanged.
func (g *Gateway) serveTarget(w http.ResponseWriter, r *http.Request) {
	ray := g.ray(w)
	cors(w.Header(), r)
	if r.Method == http.MethodOptions {
		preflight(w, r)
		return
	}
	req, err := targetRequest(r)
	if err != nil {
		g.fail(w, r, ray, err)
		return
	}
	g.serveActor(w, r, ray, req)
}

func targetRequest(r *http.Request) (actorRequest, error) {
	path, query := rawTarget(r)
	if query != "" {
		path += "?" + query
	}
	var raw, field string
	var skip bool
	if isWebSocket(r) {
		field = "rivet_actor"
		var has bool
		for _, p := range offered(r) {
			if v, ok := strings.CutPrefix(p, protocolActor); ok && !has {
				raw, has = v, true
			}
			if p == protocolSkipReadyWait {
				skip = true
			}
		}
		if !has {
			return actorRequest{}, rerr.GuardMissingHeader("`rivet_actor.*` protocol in sec-websocket-protocol")
		}
		dec, ok := percentDecode(raw)
		if !ok {
			return actorRequest{}, rerr.BadRequest(field, "invalid percent-encoding")
		}
		raw = dec
	} else {
		field = "x-rivet-actor"
		vals := r.Header.Values(headerActor)
		if len(vals) == 0 {
			return actorRequest{}, rerr.GuardMissingHeader("x-rivet-actor")
		}
		raw = vals[0]
		var err error
		if skip, err = headerSkipReadyWaitValue(r); err != nil {
			return actorRequest{}, err
		}
	}
	aid, err := id.Parse(raw)
	if err != nil {
		return actorRequest{}, rerr.BadRequest(field, err.Error())
	}
	return actorRequest{ActorID: aid, Path: path, SkipReadyWait: skip}, nil
}

// pathSkipReadyWait is the skip-ready-wait flag of a direct /gateway request: the
// rivet_skip_ready_wait subprotocol of a WebSocket, the x-rivet-skip-ready-wait header of HTTP.
func pathSkipReadyWait(r *http.Request) (bool, error) {
	if isWebSocket(r) {
		for _, p := range offered(r) {
			if p == protocolSkipReadyWait {
				return true, nil
			}
		}
		return false, nil
	}
	return headerSkipReadyWaitValue(r)
}

// headerSkipReadyWaitValue reads x-rivet-skip-ready-wait: true|false|1|0, else
// guard.invalid_header; absent is false.
func headerSkipReadyWaitValue(r *http.Request) (bool, error) {
	vals := r.Header.Values(headerSkipReadyWait)
	if len(vals) == 0 {
		return false, nil
	}
	switch vals[0] {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, rerr.GuardInvalidHeader("x-rivet-skip-ready-wait", "expected true, false, 1, or 0")
}

// resolveQuery finds the actor a query names, bounded by ResolveQueryTimeout
// (pegboard.route_resolve_query_timeout): get → the live actor holding the key, wherever it
// lives (actor.not_found); getOrCreate → in the region's datacenter (dc set when it is another:
// the request goes there whole), else the live actor holding the key or a new one, created
// where the engine places it (docs/api.md, POST /actors).
func (g *Gateway) resolveQuery(ctx context.Context, q Query) (aid id.ID, dc *apihttp.Datacenter, err error) {
	err = phaseResolveQuery.run(ctx, g.o.ResolveQueryTimeout, func(ctx context.Context) error {
		aid, dc, err = g.resolveQueryInner(ctx, q)
		return err
	})
	return aid, dc, err
}

func (g *Gateway) resolveQueryInner(ctx context.Context, q Query) (id.ID, *apihttp.Datacenter, error) {
	if q.Method == MethodGetOrCreate && q.Region != "" {
		dc, ok := g.o.Topology.ByName(q.Region)
		if !ok {
			return id.ID{}, nil, rerr.DatacenterNotFound(q.Region)
		}
		if dc.Label != g.o.Topology.Local {
			return id.ID{}, &dc, nil
		}
	}
	if g.o.ResolveNamespace == nil {
		return id.ID{}, nil, rerr.Internal(errNoQueries)
	}
	key := q.SerializedKey()
	held := heldKey{namespace: q.Namespace, name: q.Name, key: key}
	if aid, ok := g.holders.Get(held); ok {
		if _, live := g.routes.Get(aid); live {
			return aid, nil, nil
		}
	}
	ns, err := g.o.ResolveNamespace(ctx, q.Namespace)
	if err != nil {
		return id.ID{}, nil, err
	}
	local := g.o.Topology.LocalDatacenter().Name
	var a actor.Actor
	if q.Method == MethodGet {
		var found bool
		if a, found, err = g.o.Actors.GetByKey(ctx, ns.NamespaceID, q.Name, key); err != nil {
			return id.ID{}, nil, err
		}
		if !found {
			return id.ID{}, nil, rerr.ActorNotFound("")
		}
	} else if a, _, err = g.o.Actors.GetOrCreate(ctx, actor.CreateInput{
		Namespace: ns.NamespaceID, NamespaceName: ns.Name, Name: q.Name, Key: &key,
		Input: q.Input, Selector: q.Pool, CrashPolicy: q.CrashPolicy, Datacenter: local, Pinned: q.Region != "",
	}); err != nil {
		return id.ID{}, nil, err
	}
	if a.ActorID.Label() == g.o.Topology.Local {
		g.holders.Put(held, a.ActorID, nil)
	}
	return a.ActorID, nil, nil
}

// heldKey is the key a query names. The gateway remembers which actor of its datacenter
// holds it (Gateway.holders) and trusts that only while the actor's route is cached
// (Gateway.routes): a key is given up only when its actor is destroyed, a change that drops
// the route, so a request by key to a running actor reads nothing from the store, as one by
// id does.
type heldKey struct{ namespace, name, key string }

var errNoQueries = errors.New("guard: query routing has no namespace resolver (Options.ResolveNamespace)")
