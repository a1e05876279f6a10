// Package gateway checks berth's actor gateway against the unmodified npm runner
// @rivetkit/engine-runner 2.2.1 with real processes: `berth start` and
// tests/npm/gateway-runner.mjs under node. It covers HTTP and WebSocket echo through the
// /gateway path forms, query routing (rvt-*) and header routing, sleep and wake through a
// request, retries while an actor moves off a drained runner, and every rvt-* error
// (docs/gateway.md, docs/protocol.md). The tests skip when node or
// tests/npm/node_modules is missing (`npm install --prefix tests/npm` installs it).
// BERTH_TEST_BINARY names a prebuilt berth binary to use instead of building one.
package gateway
