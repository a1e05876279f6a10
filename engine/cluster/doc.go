// Package cluster makes an engine one of several nodes of a datacenter sharing one store and
// one bus: its lease, the ownership records of the runner and envoy sockets it holds (claimed
// on connect, released with bounded concurrency), commands, closes and evictions for hosts
// relayed over the bus to the node holding the socket, and gateway tunnels relayed to that
// node's internal listener (RelayPath). Runners and envoys go through the same code: everything
// here is keyed by an ops/actor.Host. docs/design.md ("Nodes and datacenters") has the design.
package cluster
