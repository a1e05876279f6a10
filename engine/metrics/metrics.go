package metrics

import (
	"net/http"
	httppprof "net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is one engine's set of metrics, in a registry of its own so that
// several engines in one process (tests) do not collide.
type Metrics struct {
	reg *prometheus.Registry

	// RunnerPingTxn is the duration of the transaction that records a runner's pong (with
	// the others of its batch), without the pong's wait in the queue before it: up to a
	// linger of the pong worker (engine/hostsock/ping.go), by design.
	RunnerPingTxn prometheus.Histogram
	// RunnerSockets is the number of runner sockets past init on this node.
	RunnerSockets prometheus.Gauge
	// RunnerTransitions counts runner lifecycle transitions by kind
	// (drained, stopped, expired).
	RunnerTransitions *prometheus.CounterVec
	// KeyReservations counts the keys of existing actors reserved across datacenters at
	// start (engine/pegboard, keys.go), by outcome: reserved, or conflict (another live
	// actor of another datacenter already held the key: both are kept).
	KeyReservations *prometheus.CounterVec

	// Observed is the request, gateway, store and census metrics (observe.go).
	Observed
}

// New returns the engine's metrics, with the Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		RunnerPingTxn: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "berth_runner_ping_txn_seconds",
			Help:    "Duration of the transaction recording a runner pong.",
			Buckets: prometheus.ExponentialBucketsRange(0.0001, 5, 48), // 0.1 ms … 5 s, ×1.25 apart
		}),
		RunnerSockets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "berth_runner_sockets",
			Help: "Runner sockets past init on this node.",
		}),
		RunnerTransitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "berth_runner_transitions_total",
			Help: "Runner lifecycle transitions made by this node.",
		}, []string{"kind"}),
		KeyReservations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "berth_key_reservations_migrated_total",
			Help: "Keys of existing actors reserved across datacenters at start, by outcome (reserved, conflict).",
		}, []string{"outcome"}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.RunnerPingTxn, m.RunnerSockets, m.RunnerTransitions, m.KeyReservations,
	)
	m.Observed = newObserved(m.reg)
	return m
}

// Handler serves the metrics in the Prometheus text format and, with pprof, Go's runtime
// profiles under /debug/pprof/.
func (m *Metrics) Handler(pprof bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	if pprof {
		mux.HandleFunc("GET /debug/pprof/", httppprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", httppprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", httppprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", httppprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", httppprof.Trace)
	}
	return mux
}

// Gatherer reads the metrics in process (the inspector's charts, engine/samples).
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// Since observes the time since start in h, in seconds.
func Since(h prometheus.Observer, start time.Time) { h.Observe(time.Since(start).Seconds()) }
