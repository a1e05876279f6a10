package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Observed is the engine's request, gateway, store and census metrics. It is embedded in
// Metrics, so its fields are Metrics' own (m.HTTPRequests).
type Observed struct {
	// HTTPRequests counts finished requests by listener (api-public, api-peer), route (an
	// API route pattern, "gateway", "/runners/connect", "/ui") and status code.
	HTTPRequests *prometheus.CounterVec
	// HTTPDuration is the time to serve a request by listener and route (upgraded
	// WebSockets are left out: their time is the connection's life).
	HTTPDuration *prometheus.HistogramVec
	// GatewayPhase is the time of each phase of a gateway request: "resolve" (finding the
	// actor's runner, waking it if needed), "response" (tunnel round trip to the actor's
	// complete response), "websocket_open" (until the actor accepted a WebSocket).
	GatewayPhase *prometheus.HistogramVec
	// GatewayRetries counts gateway attempts after the first, by protocol (http, websocket).
	GatewayRetries *prometheus.CounterVec
	// ActorTransitions counts actors created and woken by this node's committed lifecycle
	// transactions, by kind (created, woken).
	ActorTransitions *prometheus.CounterVec

	// UDBCommit is the duration of transaction commits (any outcome); UDBConflicts counts
	// commits refused with not_committed (1020).
	UDBCommit    prometheus.Histogram
	UDBConflicts prometheus.Counter

	// RunnerPingRTT and EnvoyPingRTT are the round-trip times the pongs report.
	RunnerPingRTT prometheus.Observer
	EnvoyPingRTT  prometheus.Observer

	// Actors, Runners and Envoys count the store's live (not destroyed, not stopped)
	// actors, runners and envoys by state; PendingAllocations the actors waiting in a
	// pending queue for a free slot. Set by the census, a periodic bounded scan.
	Actors             *prometheus.GaugeVec
	Runners            *prometheus.GaugeVec
	Envoys             *prometheus.GaugeVec
	PendingAllocations prometheus.Gauge
	// CensusTruncated is 1 when the last census stopped at its row bound (the counts are
	// then lower bounds); CensusDuration is how long it took.
	CensusTruncated prometheus.Gauge
	CensusDuration  prometheus.Gauge
}

// latencyBuckets spans 0.5 ms … ~65 s, ×2 apart.
var latencyBuckets = prometheus.ExponentialBuckets(0.0005, 2, 18)

func newObserved(reg *prometheus.Registry) Observed {
	rtt := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "berth_ping_rtt_seconds",
		Help:    "Round-trip time reported by runner and envoy pongs.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14), // 1 ms … ~8 s
	}, []string{"kind"})
	o := Observed{
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "berth_http_requests_total",
			Help: "HTTP requests served, by listener, route and status code.",
		}, []string{"listener", "route", "status"}),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "berth_http_request_duration_seconds",
			Help:    "Time to serve an HTTP request, by listener and route (WebSockets left out).",
			Buckets: latencyBuckets,
		}, []string{"listener", "route"}),
		GatewayPhase: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "berth_gateway_phase_seconds",
			Help:    "Time of each phase of a gateway request: resolve, response, websocket_open.",
			Buckets: latencyBuckets,
		}, []string{"phase"}),
		GatewayRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "berth_gateway_retries_total",
			Help: "Gateway attempts after the first, by protocol.",
		}, []string{"protocol"}),
		ActorTransitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "berth_actor_transitions_total",
			Help: "Actors created and woken by this node, by kind.",
		}, []string{"kind"}),
		UDBCommit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "berth_udb_commit_seconds",
			Help:    "Duration of store transaction commits.",
			Buckets: prometheus.ExponentialBucketsRange(0.0001, 5, 48),
		}),
		UDBConflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "berth_udb_conflicts_total",
			Help: "Store commits refused for a conflict (not_committed, 1020).",
		}),
		RunnerPingRTT: rtt.WithLabelValues("runner"),
		EnvoyPingRTT:  rtt.WithLabelValues("envoy"),
		Actors: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "berth_actors",
			Help: "Actors in the store not destroyed, by state (periodic census).",
		}, []string{"state"}),
		Runners: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "berth_runners",
			Help: "Runners in the store not stopped, by state (periodic census).",
		}, []string{"state"}),
		Envoys: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "berth_envoys",
			Help: "Envoys in the store not expired, by state (periodic census).",
		}, []string{"state"}),
		PendingAllocations: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "berth_pending_allocations",
			Help: "Actors waiting in a pending queue for a free slot (periodic census).",
		}),
		CensusTruncated: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "berth_census_truncated",
			Help: "1 when the last census stopped at its row bound (counts are lower bounds).",
		}),
		CensusDuration: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "berth_census_duration_seconds",
			Help: "How long the last census of the store took.",
		}),
	}
	// Retries show as 0 before the first, so that rate() works from the start.
	o.GatewayRetries.WithLabelValues("http")
	o.GatewayRetries.WithLabelValues("websocket")
	o.ActorTransitions.WithLabelValues("created")
	o.ActorTransitions.WithLabelValues("woken")
	reg.MustRegister(o.HTTPRequests, o.HTTPDuration, o.GatewayPhase, o.GatewayRetries, o.ActorTransitions, o.UDBCommit, o.UDBConflicts,
		rtt, o.Actors, o.Runners, o.Envoys, o.PendingAllocations, o.CensusTruncated, o.CensusDuration)
	return o
}
