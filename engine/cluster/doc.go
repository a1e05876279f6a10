// Package cluster makes an engine one of several nodes of a datacenter sharing one store and
// one bus: its lease, the ownership records of the runner and envoy sockets it holds (keyed
// by runner id, or by namespace and envoy key; claimed on connect, released with bounded
// concurrency), commands and closes for runners and envoys relayed over the bus to the node
// holding the socket, and gateway tunnels relayed to that node's internal listener. Runners
// and envoys go through the same code: everything here is keyed by an ops/actor.Host.
//
// Gateway traffic (the design): the node a request arrives on resolves the actor's host
// (runner or envoy) as always; when another node holds that host's socket, the tunnel is
// relayed over one WebSocket per request to the owner's internal listener (GET
// /internal/runners/tunnel?runner_id=, or ?namespace=&envoy_key=), which opens the tunnel on
// the socket there. Tunnel messages travel unchanged (the runner protocol's tunnel shapes,
// which envoy tunnels translate at their socket), so the gateway's retries, timeouts and
// error mapping stay in one place (guard), and a lost owner is seen at once as a closed
// connection, which the gateway retries on a fresh lookup. Commands, closes and evictions
// for runners and envoys are broadcast on the bus (subject berth.dc<label>.runners); the
// node holding the socket delivers them, and a runner or envoy that is between nodes gets
// its stored commands on reconnect.
package cluster
