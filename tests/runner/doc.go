// Package runner checks berth against the unmodified npm runner @rivetkit/engine-runner 2.2.1
// with real processes: `berth start`, the npm runner (tests/npm/conformance-runner.mjs) and raw
// runner sockets (tests/npm/raw-socket.mjs) under node, awaited through their JSON-lines output.
//
// It covers registration as GET /runners shows it, the refused handshakes and their close
// codes, eviction, graceful stop and operator drain, a killed runner's loss, a frozen runner's
// ping timeout, reconnection across an engine restart, and that one runner's bad frame leaves
// the others alone (docs/protocol.md; docs/design.md, "Runners and envoys"). The tests skip
// when node or tests/npm/node_modules is missing (`npm install --prefix tests/npm` installs it).
// The processes are run by tests/internal/harness; BERTH_TEST_BINARY names a prebuilt berth binary.
package runner
