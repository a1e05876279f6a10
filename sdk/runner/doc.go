// Package runner is the Go runner SDK: a process that keeps one WebSocket to a berth (or Rivet)
// engine, registers as a runner, answers pings, reconnects with backoff and drains on shutdown.
//
// It speaks runner protocol v5–v7 (sdk/protocol/runner), or envoy protocol v8 with
// Config.Envoy, and behaves as the reference client, @rivetkit/engine-runner 2.2.1. New checks
// a Config, Start connects, Run serves until its context ends and then shuts down gracefully.
// With Config.Actors it hosts actors written in Go (Actor), with their KV, HTTP and WebSockets.
//
// docs/runner-sdk.md describes the connection, reconnects, events, hosted actors and envoy
// mode; docs/protocol.md the protocols. examples/counter is a complete runner.
package runner
