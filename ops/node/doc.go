// Package node holds the engine-node operations of a datacenter's shared store: node leases,
// and the ownership records of runner and envoy sockets (claim, release, owner lookup, a node's list).
package node
