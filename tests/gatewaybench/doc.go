// Package gatewaybench measures the actor gateway side by side with the Rivet engine:
// BenchmarkGatewaySideBySide runs berth and the reference engine (npm
// @rivetkit/engine-cli-linux-x64-musl 2.3.19) as processes, each with the same npm echo
// runner, and a plain node server as the baseline, and prints HTTP latency, throughput,
// engine CPU per request and WebSocket round trips with the ratios berth/reference. It runs
// under `make bench` and skips when node, tests/npm/node_modules or the reference binary
// cannot be had; docs/benchmarks.md describes the setup (bench/sidebyside).
package gatewaybench
