// Package cluster makes an engine one of several nodes of a datacenter sharing one store and
// one bus: its lease, the ownership records of the runner sockets it holds (claimed on
// connect, released with bounded concurrency), runner commands and closes relayed over the
// bus to the node holding the socket, and gateway tunnels relayed to that node's internal
// listener.
//
// Gateway traffic (the design): the node a request arrives on resolves the actor's runner
// as always; when another node holds that runner's socket, the tunnel is relayed over one
// WebSocket per request to the owner's internal listener (GET /internal/runners/tunnel),
// which opens the tunnel on the runner's socket there. Tunnel messages travel unchanged, so
// the gateway's retries, timeouts and error mapping stay in one place (guard), and a lost
// owner is seen at once as a closed connection, which the gateway retries on a fresh lookup.
// Commands, closes and evictions for runners are broadcast on the bus (subject
// berth.dc<label>.runners); the node holding the socket delivers them, and a runner that is
// between nodes gets its stored commands on reconnect.
package cluster
