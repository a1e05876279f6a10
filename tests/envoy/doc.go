// Package envoy checks the envoy socket (/envoys/connect, envoy protocol v8) of a real
// `berth start` process with raw Go sockets: the engine's ToEnvoyInit first, registration as
// GET /envoys shows it, target routing through the guard port, eviction of an older socket,
// stopping, and the expiry of envoys whose node died, after an engine restart on the same
// store (docs/protocol.md, "Envoys"). The processes are run by tests/internal/harness.
package envoy
