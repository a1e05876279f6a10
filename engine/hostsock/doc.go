// Package hostsock serves the sockets hosts keep to the engine: runners (GET
// /runners/connect, protocol v5–v7) and envoys (GET /envoys/connect, v8). One Server owns what
// they share: accepting, the registry of live sockets, heartbeats, closing, the actors'
// commands and events, KV, gateway tunnels and the cluster's ownership claims. A small
// adapter per protocol (runner.go, envoy.go) checks the connect URL, runs the init
// handshake, registers the host and translates messages. docs/design.md ("Host sockets")
// describes the flow and docs/protocol.md both protocols.
package hostsock
