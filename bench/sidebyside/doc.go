// Package sidebyside holds what the side-by-side comparisons of berth with the Rivet engine
// share (bench/compare, `make bench-compare`, and tests/gatewaybench): installing and starting
// the reference engine (npm @rivetkit/engine-cli-linux-x64-musl 2.3.19) the way
// docs/benchmarks.md says it must run, and the gateway measurements (sequential HTTP
// latency, closed-loop throughput, WebSocket echo round trips) against an echo actor.
package sidebyside
