// Package runner is the Go runner SDK: a process that keeps one WebSocket to a berth (or Rivet)
// engine, registers as a runner, answers pings, reconnects with backoff and drains on shutdown.
//
// It speaks runner protocol v5–v7 (sdk/protocol/runner) and behaves as the reference client,
// @rivetkit/engine-runner 2.2.1 (reference/rivet-protocol.md §2–§3):
//
//   - Connect: GET {endpoint}/runners/connect?protocol_version=7&namespace=…&runner_key=… with the
//     subprotocols rivet and rivet_token.<token>, then ToServerInit; the engine answers
//     ToClientInit with the runner id and the runner-lost threshold.
//   - Keepalive: every ToClientPing is answered with a ToServerPong carrying the same ts. A socket
//     on which nothing arrives for Config.PingTimeout (30 s) is dropped and reconnected (the
//     reference client has no such timeout).
//   - Reconnect: when the socket ends for any reason but eviction, the runner waits
//     1 s·2^n (n = failed attempts since the last init), capped at 30 s, plus 0–25 % jitter, and
//     dials again with the same runner key, so the engine gives back the same runner id.
//   - Events: SendEvents keeps every event until ToClientAckEvents covers it, and sends all of
//     them again, in order, after each reconnect. Commands are delivered to Hooks.OnCommands and
//     acknowledged (ToServerAckCommands) every Config.CommandAckInterval (5 min).
//   - Runner lost: after the socket drops, a timer of the engine's runnerLostThreshold runs;
//     if no reconnect finishes first, Hooks.OnForceStopActors(RunnerLost) tells the host to stop
//     its actors, since the engine has given them away. If a reconnect brings a different runner
//     id, the pending events are dropped and OnForceStopActors(RunnerIDChanged) comes first.
//   - Eviction: a close with reason ws.eviction (another process took the runner key, or the
//     engine drained this runner) stops the runner for good: no reconnect.
//   - Shutdown(ctx, false) (SIGTERM): send ToServerStopping, wait up to 120 s, polling every
//     100 ms, for Hooks.ActiveActors to reach 0, then close with 1000 pegboard.runner_shutdown.
//     Shutdown(ctx, true) closes at once.
//
// Use: New(Config) checks the config; Start(ctx) returns once the engine has answered (or with
// an error no retry can change, such as a refused token); Run(ctx) does the same, then serves
// until ctx ends (wire SIGTERM with signal.NotifyContext) and shuts down gracefully. Done and
// Err tell when and why the runner stopped.
//
// Hooks run one at a time, in order, on a goroutine of the runner, never on the socket's reader:
// a slow hook delays later hooks, not pongs.
//
// Hosting actors: with Config.Actors (a factory per actor name) the runner hosts actors written
// in Go (Actor, with optional http.Handler and WebSocketHandler) and owns the command hooks:
//
//   - A start command makes a new Actor for that generation and calls Start on a goroutine of
//     its own; Running is reported when Start returns nil. (Runner 2.2.1 reports it before its
//     onActorStart finishes and makes requests wait on the runner; reporting after means the
//     engine routes requests, and counts the actor connectable, only once it has loaded its
//     state, and a Start that fails is a crash that was never Running.) Starts replayed after a
//     reconnect are ignored; a newer generation replaces the instance.
//   - ActorContext.Sleep, Destroy, SetAlarm and ClearAlarm send the actor's intents and alarm
//     as events; the engine answers an intent with a stop command, which calls Stop and
//     reports Stopped: code OK while the runner drains or after Destroy, ERROR otherwise, as
//     runner 2.2.1 (the engine reads an ERROR after a sleep intent as a normal sleep).
//   - ActorContext.KV is the actor's KV over ToServerKvRequest; the tunnel's HTTP requests and
//     WebSockets are served by the actor's ServeHTTP and ServeWebSocket.
//   - When the runner is lost (OnForceStopActors), every actor is stopped without a report;
//     graceful shutdown waits until the engine has stopped every actor (ActiveActors).
//
// Envoys: with Config.Envoy the runner connects as an envoy instead (GET
// {endpoint}/envoys/connect?protocol_version=8&namespace=…&pool_name=Name&envoy_key=Key&version=…;
// the engine speaks first with ToEnvoyInit, answered by ToRivetMetadata). Everything above
// holds: the envoy protocol's messages are translated to and from the runner protocol's at the
// socket (wire.go, sdk/protocol/bridge), so hooks, events, KV, tunnels and hosted actors are
// the same; the envoy key stands for the runner id.
//
// examples/counter is a complete runner.
package runner
