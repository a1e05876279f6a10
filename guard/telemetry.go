package guard

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// Telemetry is how the gateway reports. The zero value reports nothing and costs nothing.
type Telemetry struct {
	// Tracer, when set, records the gateway's phases as spans under the request's span
	// (engine/telemetry starts it from the client's traceparent): "pegboard.resolve_route"
	// (and "pegboard.wake" inside it), then "runner.tunnel" for an HTTP exchange or
	// "runner.tunnel.websocket_open" for a WebSocket open. The tunnel span's W3C context
	// reaches the actor as the traceparent (and tracestate) request header, replacing the
	// client's. Without a Tracer the client's headers are forwarded unchanged.
	Tracer     trace.Tracer
	Propagator propagation.TextMapPropagator
	// Retry, when set, is called for each attempt after the first: "http" or "websocket".
	Retry func(protocol string)
	// Phase, when set, receives each phase's duration: "resolve" (finding the actor's
	// runner, waking it if needed), "response" (the tunnel round trip to the actor's whole
	// response), "websocket_open" (resolve and open, until the actor accepted).
	Phase func(phase string, d time.Duration)
	// Requests, when set, is told of the HTTP requests served to the actors it watches
	// (the inspector's live request log); for others it costs one Watching call.
	Requests RequestObserver
}

// RequestObserver watches the HTTP requests the gateway serves to some actors.
type RequestObserver interface {
	Watching(aid id.ID) bool
	// Served reports a request to actor aid: its method, the path the actor saw, the
	// status answered and how long it took.
	Served(aid id.ID, method, path string, status int, d time.Duration)
}

// observed returns w wrapped to report the request to Telemetry.Requests when it watches
// the actor, and the func to call when the request is done (a WebSocket's, status 101,
// when the socket ends).
func (g *Gateway) observed(w http.ResponseWriter, r *http.Request, req actorRequest) (http.ResponseWriter, func()) {
	obs := g.o.Telemetry.Requests
	if obs == nil || !obs.Watching(req.ActorID) {
		return w, func() {}
	}
	sw := &apihttp.StatusRecorder{ResponseWriter: w}
	start := time.Now()
	return sw, func() {
		status := sw.Status()
		if status == 0 {
			status = http.StatusOK
		}
		obs.Served(req.ActorID, r.Method, req.Path, status, time.Since(start))
	}
}

// span starts a child span when tracing is on; end records err and ends it.
func (g *Gateway) span(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func(error)) {
	t := g.o.Telemetry.Tracer
	if t == nil {
		return ctx, func(error) {}
	}
	ctx, s := t.Start(ctx, name, trace.WithAttributes(attrs...))
	return ctx, func(err error) {
		if err != nil {
			s.RecordError(err)
			s.SetStatus(codes.Error, err.Error())
		}
		s.End()
	}
}

func (g *Gateway) phase(name string, start time.Time) {
	if f := g.o.Telemetry.Phase; f != nil {
		f(name, time.Since(start))
	}
}

// retried reports attempt n of protocol when it is a retry.
func (g *Gateway) retried(protocol string, n int) {
	if f := g.o.Telemetry.Retry; n > 1 && f != nil {
		f(protocol)
	}
}

// resolveTraced is resolve in a "pegboard.resolve_route" span, timed as phase "resolve".
func (g *Gateway) resolveTraced(ctx context.Context, aid id.ID, skipReadyWait bool) (rt route, changed <-chan struct{}, connectable bool, err error) {
	start := time.Now()
	ctx, end := g.span(ctx, "pegboard.resolve_route", attribute.String("berth.actor_id", aid.String()))
	rt, changed, connectable, err = g.resolve(ctx, aid, skipReadyWait)
	if err == nil {
		g.phase("resolve", start)
	}
	end(err)
	return rt, changed, connectable, err
}

// wake is Actors.Wake in a "pegboard.wake" span.
func (g *Gateway) wake(ctx context.Context, aid id.ID) error {
	ctx, end := g.span(ctx, "pegboard.wake", attribute.String("berth.actor_id", aid.String()))
	err := phaseWakeSignal.run(ctx, g.o.WakeSignalTimeout, func(ctx context.Context) error { return g.o.Actors.Wake(ctx, aid) })
	end(err)
	return err
}

// tunnelHTTP is exchange in a "runner.tunnel" span whose context the actor receives,
// timed as phase "response".
func (g *Gateway) tunnelHTTP(ctx context.Context, rt route, start proto.ToClientRequestStart, body *streamedBody) (response, error) {
	t0 := time.Now()
	ctx, end := g.span(ctx, "runner.tunnel", rt.attribute(),
		attribute.String("http.request.method", start.Method))
	start.Headers = g.withTraceContext(ctx, start.Headers)
	resp, err := g.exchange(ctx, rt, start, body)
	if err == nil {
		g.phase("response", t0)
	}
	end(err)
	return resp, err
}

// openWebSocketTraced is openWebSocket in a "runner.tunnel.websocket_open" span whose
// context the actor receives, timed as phase "websocket_open".
func (g *Gateway) openWebSocketTraced(ctx context.Context, req actorRequest, attempt int, open proto.ToClientWebSocketOpen) (Tunnel, bool, error) {
	t0 := time.Now()
	ctx, end := g.span(ctx, "runner.tunnel.websocket_open", attribute.String("berth.actor_id", req.ActorID.String()))
	open.Headers = g.withTraceContext(ctx, open.Headers)
	tun, canHibernate, err := g.openWebSocket(ctx, req, attempt, open)
	if err == nil {
		g.phase("websocket_open", t0)
	}
	end(err)
	return tun, canHibernate, err
}

// withTraceContext returns hs with ctx's W3C trace context in place of any the client
// sent; hs itself is not modified. Without tracing it returns hs.
func (g *Gateway) withTraceContext(ctx context.Context, hs []proto.Header) []proto.Header {
	tm := g.o.Telemetry
	if tm.Tracer == nil || tm.Propagator == nil {
		return hs
	}
	carrier := propagation.MapCarrier{}
	tm.Propagator.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return hs
	}
	out := make([]proto.Header, 0, len(hs)+len(carrier))
	for _, h := range hs {
		if _, replaced := carrier[h.Name]; !replaced {
			out = append(out, h)
		}
	}
	for _, name := range []string{"traceparent", "tracestate"} {
		if v, ok := carrier[name]; ok {
			out = append(out, proto.Header{Name: name, Value: v})
		}
	}
	return out
}

// attribute names the route's host on a span.
func (rt route) attribute() attribute.KeyValue {
	if rt.host.IsEnvoy() {
		return attribute.String("berth.envoy_key", rt.host.EnvoyKey)
	}
	return attribute.String("berth.runner_id", rt.host.RunnerID.String())
}
