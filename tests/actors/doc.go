// Package actors checks the actor lifecycle of berth with real processes: `berth start`
// (tests/internal/harness) and a runner hosting the probe actor, either the unmodified npm
// runner @rivetkit/engine-runner 2.2.1 (tests/npm/actor-runner.mjs under node) or the Go
// runner SDK (./gorunner, sdk/runner); every scenario runs against both. States are checked
// through the REST API and through the runner's own events (JSON lines it prints), never by
// sleeping: tests await events and poll the API to deadlines.
//
// BenchmarkActors (make bench) measures create-to-running latency, creates per second with
// 16 concurrent clients and the engine's memory per sleeping actor.
package actors
