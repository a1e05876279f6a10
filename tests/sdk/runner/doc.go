// Package runner runs the Go runner SDK (sdk/runner) against the real engine in process: the
// whole engine (engine.Start on loopback with a mem:// store), or its host sockets alone
// (engine/hostsock/hostsocktest on httptest). These tests live in the engine's module because
// the SDK's module must not depend on it; they share the SDK's test helpers
// (sdk/runner/runnertest) with the SDK's own tests.
package runner
