// Package runnerload measures one berth engine (a separate process, embedded file store)
// under a fleet of simulated runners speaking protocol v7 over loopback WebSockets: ping
// transaction latency, engine CPU and memory. BenchmarkRunnerFleet runs under `make bench`.
package runnerload
