// Package metrics holds the engine's Prometheus metrics and serves them at
// /metrics on the metrics listener (port 6430 by default, as on Rivet).
package metrics
