// Package reference holds the differential tests: each scenario runs against the Rivet
// engine 2.3.19 (npm @rivetkit/engine-cli-linux-x64-musl, the reference) and against berth,
// one node and two nodes behind a round-robin proxy, with the same clients; what a client
// observes is compared after ids and timestamps are normalised. Where berth differs on
// purpose, differences_test.go holds the difference and its reason, and docs/compat.md
// publishes it.
package reference
