package engine

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/berthhq/berth/engine/census"
	"github.com/berthhq/berth/engine/metrics"
	"github.com/berthhq/berth/engine/samples"
	"github.com/berthhq/berth/engine/telemetry"
	"github.com/berthhq/berth/engine/ui"
	"github.com/berthhq/berth/guard"
	"github.com/berthhq/berth/pkg/udb"
)

// ObservabilityOptions are the Options that only tests and embedders need.
type ObservabilityOptions struct {
	// SpanExporter, when set, receives the spans in place of the OTLP exporter of
	// otel.endpoint (tracing is then on).
	SpanExporter telemetry.SpanExporter
	// CensusInterval is how often the store gauges are recounted (census.DefaultInterval).
	CensusInterval time.Duration
	// SampleInterval is how often the inspector's charts sample the metrics
	// (samples.DefaultInterval).
	SampleInterval time.Duration
}

// observability is the engine's logs, tracing and metrics wiring.
type observability struct {
	log     *slog.Logger
	metrics *metrics.Metrics
	tracing *telemetry.Tracing
	// samples is the metrics history the inspector charts (newSampler).
	samples        *samples.Sampler
	sampleInterval time.Duration
}

// newSampler sets up the inspector's metrics history, with the hosts' slots from hosts.
func (o *observability) newSampler(hosts samples.HostsFunc) {
	o.samples = samples.New(samples.Options{Gatherer: o.metrics.Gatherer(), Hosts: hosts, Interval: o.sampleInterval, Log: o.log})
}

// newObservability builds the logger (opts.Log, else log.format and log.level on stderr),
// the metrics and the tracing (otel.endpoint, or the no-op tracer).
func newObservability(opts Options) (*observability, error) {
	log := opts.Log
	if log == nil {
		var err error
		if log, err = telemetry.NewLogger(os.Stderr, opts.Config.Log); err != nil {
			return nil, err
		}
	}
	tr, err := telemetry.NewTracing(telemetry.TracingOptions{
		Endpoint: opts.Config.OTel.Endpoint, Exporter: opts.Observability.SpanExporter,
		Service: "berth", Version: opts.Build.Version, BatchTimeout: batchTimeout(opts),
	})
	if err != nil {
		return nil, err
	}
	return &observability{log: log, metrics: metrics.New(), tracing: tr, sampleInterval: opts.Observability.SampleInterval}, nil
}

func batchTimeout(opts Options) time.Duration {
	if opts.Observability.SpanExporter != nil {
		return 100 * time.Millisecond
	}
	return 0
}

// gateway is the guard's telemetry: spans when tracing is on, retries and phase times.
func (o *observability) gateway() guard.Telemetry {
	t := guard.Telemetry{
		Retry: func(protocol string) { o.metrics.GatewayRetries.WithLabelValues(protocol).Inc() },
		Phase: func(phase string, d time.Duration) {
			o.metrics.GatewayPhase.WithLabelValues(phase).Observe(d.Seconds())
		},
	}
	if o.tracing.Enabled {
		t.Tracer, t.Propagator = o.tracing.Tracer, o.tracing.Propagator
	}
	return t
}

// public is the guard listener's outer layers: request telemetry, then the dashboard at
// /ui, then next (the gateway, sockets and public API).
func (o *observability) public(next http.Handler, dashboard ui.Options) http.Handler {
	dash := ui.Handler(dashboard)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Rivet-Target") == "" {
			if ui.IsPath(r.URL.Path) {
				dash.ServeHTTP(w, r)
				return
			}
			if browsesRoot(r) {
				http.Redirect(w, r, "/ui", http.StatusFound)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
	return telemetry.Handler(h, telemetry.HTTPOptions{Listener: "api-public", Log: o.log, Metrics: o.metrics, Tracing: o.tracing})
}

// browsesRoot reports a browser opening the engine's address: GET or HEAD / accepting HTML.
// It is sent to the dashboard; API clients, which do not ask for HTML, get the API's answer.
func browsesRoot(r *http.Request) bool {
	if r.URL.Path != "/" || r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/html") {
				return true
			}
		}
	}
	return false
}

// peer is the api-peer listener's outer layer.
func (o *observability) peer(next http.Handler) http.Handler {
	return telemetry.Handler(next, telemetry.HTTPOptions{Listener: "api-peer", Log: o.log, Metrics: o.metrics, Tracing: o.tracing})
}

// runCensus keeps the store gauges current until ctx ends.
func (o *observability) runCensus(ctx context.Context, db udb.Database, interval time.Duration) {
	census.New(census.Options{DB: db, Metrics: o.metrics, Log: o.log, Interval: interval}).Run(ctx)
}
