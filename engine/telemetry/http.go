package telemetry

import (
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/berthhq/berth/engine/metrics"
	"github.com/berthhq/berth/pkg/apihttp"
)

// HTTPOptions configures Handler.
type HTTPOptions struct {
	// Listener names the listener in metrics ("api-public", "api-peer").
	Listener string
	Log      *slog.Logger
	Metrics  *metrics.Metrics
	Tracing  *Tracing
}

// Handler is the outermost layer of an engine listener. For each request it:
//   - takes the client's x-request-id when it is usable (1–128 characters of letters,
//     digits and ._:-), which then stays on the request (so actors see it) and is echoed on
//     the response, or makes one up for the logs alone (a response carries no header the
//     Rivet engine's does not: its ray id names the request), and hands it inward in an
//     apihttp.RequestInfo;
//   - with tracing on, continues the client's W3C trace (traceparent) in a server span
//     that the gateway's spans join;
//   - once served, counts it in berth_http_requests_total by listener, route and status,
//     times it (WebSockets excepted) and writes one access line carrying method, path,
//     route, status, duration, ray_id (the x-rivet-ray-id the inner handler answered) and
//     request_id: at debug level, at warn for a 5xx.
//
// The route is what the inner handler recorded (apihttp sets the API's route pattern);
// otherwise "/runners/connect", "/envoys/connect" or "gateway".
func Handler(next http.Handler, o HTTPOptions) http.Handler {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ri := &apihttp.RequestInfo{ID: requestID(r.Header.Get(apihttp.HeaderRequestID))}
		if ri.ID == r.Header.Get(apihttp.HeaderRequestID) {
			w.Header().Set(apihttp.HeaderRequestID, ri.ID)
		} else {
			r.Header.Del(apihttp.HeaderRequestID)
		}
		ctx := apihttp.WithRequestInfo(r.Context(), ri)
		var span trace.Span
		if t := o.Tracing; t != nil && t.Enabled {
			ctx = t.Propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
			ctx, span = t.Tracer.Start(ctx, "HTTP "+r.Method, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path),
					attribute.String("berth.request_id", ri.ID)))
		}
		rec := &apihttp.StatusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r.WithContext(ctx))

		route := ri.Route
		if route == "" {
			route = defaultRoute(r.URL.Path)
		}
		status := rec.Status()
		if status == 0 {
			status = http.StatusOK
		}
		elapsed := time.Since(start)
		ray := w.Header().Get(apihttp.HeaderRayID)
		if m := o.Metrics; m != nil {
			m.HTTPRequests.WithLabelValues(o.Listener, route, strconv.Itoa(status)).Inc()
			if status != http.StatusSwitchingProtocols {
				m.HTTPDuration.WithLabelValues(o.Listener, route).Observe(elapsed.Seconds())
			}
		}
		if span != nil {
			span.SetName(r.Method + " " + route)
			span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", status),
				attribute.String("berth.ray_id", ray))
			if status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
			span.End()
		}
		level := slog.LevelDebug
		if status >= 500 {
			level = slog.LevelWarn
		}
		if o.Log.Enabled(ctx, level) {
			o.Log.LogAttrs(ctx, level, "request", slog.String("listener", o.Listener), slog.String("method", r.Method),
				slog.String("path", r.URL.Path), slog.String("route", route), slog.Int("status", status),
				slog.Duration("duration", elapsed), slog.String("ray_id", ray), slog.String("request_id", ri.ID))
		}
	})
}

// defaultRoute names a request no inner handler named: the sockets, else the gateway.
func defaultRoute(path string) string {
	switch strings.TrimSuffix(path, "/") {
	case "/runners/connect":
		return "/runners/connect"
	case "/envoys/connect":
		return "/envoys/connect"
	}
	return "gateway"
}

// requestID returns the client's id when usable, else a fresh random one.
func requestID(given string) string {
	if n := len(given); n > 0 && n <= 128 && !strings.ContainsFunc(given, badIDRune) {
		return given
	}
	var b [16]byte
	return string(strconv.AppendUint(b[:0], rand.Uint64(), 36))
}

func badIDRune(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == ':' || r == '-')
}
