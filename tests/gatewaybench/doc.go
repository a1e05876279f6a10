// Package gatewaybench measures the actor gateway side by side with the Rivet engine: berth
// and the reference engine (npm @rivetkit/engine-cli-linux-x64-musl 2.3.19) run as processes
// in one benchmark, each with the same npm echo runner (@rivetkit/engine-runner 2.2.1,
// tests/npm/bench-echo-runner.mjs) hosting one echo actor, and a plain node server with the
// same handlers as the baseline without an engine. BenchmarkGatewaySideBySide runs under
// `make bench` and prints HTTP latency p50/p99 (sequential requests on one keep-alive
// connection, in rounds that take every target in turn), requests per second with 16
// keep-alive connections, engine CPU per request, and WebSocket echo round trips p50/p99,
// with the ratios berth/reference.
//
// The HTTP figures are measured with a client that writes each request and reads its answer
// on one goroutine (sidebyside.RawClient), so that they are the targets' and not the
// client's; the same HTTP measurements with Go's net/http client follow as their own rows.
//
// The reference engine's installation and start and the measurements themselves are
// bench/sidebyside's, shared with `make bench-compare` (bench/compare).
//
// The reference binary (97 MB) is installed with npm into the user's cache directory
// (berth/rivet-engine-2.3.19) on first use, or named by BERTH_RIVET_ENGINE; the benchmark
// skips when node, tests/npm/node_modules or the binary cannot be had.
package gatewaybench
