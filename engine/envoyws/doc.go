// Package envoyws serves the envoy WebSocket, GET /envoys/connect (and /envoys/connect/), as
// the Rivet engine's pegboard-envoy does for envoy protocol v8 (rivet-engine.md §4.6,
// rivet-protocol.md §1.4).
//
// Handshake: the token is checked before the upgrade as for runners (engine/internal/wsconn).
// The server answers subprotocol "rivet" when offered, then checks the query and closes a bad
// one with 1011 "group.code#ray_id": protocol_version (8), namespace, pool_name (1–128 bytes),
// envoy_key (3–128 of [A-Za-z0-9_-], not starting or ending with '-') and version (u32) are
// required, else ws.invalid_request; an unknown namespace is namespace.not_found; a pool
// without a runner config is ws.no_runner_config. The engine speaks first: ToEnvoyInit (the
// lost and stop thresholds and the 20 MiB payload limit; no envoy id, the envoy named itself
// in the URL). The envoy's first frame, within InitTimeout (else
// ws.timed_out_waiting_for_init), is normally ToRivetMetadata; the envoy is then registered
// in one transaction (ops/envoy.Register, with the runner config read serializably), its
// metadata included. A newer registration of the same key evicts the older socket with
// 1000 ws.eviction: at once on this node, over the bus on another node of the datacenter
// (Options.Cluster), and in any case at that socket's next pong, which its connection id no
// longer fences.
//
// Several nodes (Options.Cluster, engine/cluster): as for runners, the node holding an
// envoy's socket records it in an ownership record keyed by (namespace, envoy_key) with a
// fencing epoch, released with the envoy's expiry when the socket ends; commands, closes
// and evictions for an envoy held elsewhere go over the bus, and gateway tunnels are
// relayed to the owner.
//
// After registration the server sends ToEnvoyPing at once and then every PingInterval plus
// 0–127 ms, records each ToRivetPong (last ping, RTT in ms, load-balancer entry moved) in a
// batch transaction of shared workers, and closes the socket with 1011 ws.timed_out after
// PingTimeout without a pong. A pong refused as stale closes with 1000 ws.eviction; one
// refused because the envoy expired closes with 1011 envoy.expired, so that the envoy
// reconnects and registers again. ToRivetStopping drains the envoy (out of the load-balancer
// index and the hash ring, stop_ts set; engine/pegboard.Envoys.Stopping), evicts its actors
// after the pool's actor_eviction_delay, paced by actor_eviction_rate and _period, and closes
// its socket with ws.eviction once the last has left (at once with none). A socket that ends
// expires its envoy unless a newer socket took it over; its actors find the loss at their
// next liveness check (ops/actor) and sleep.
//
// Envoys host actors (actors.go, tunnel.go): after registration the stored commands of its
// actors are replayed (CommandStartActor, CommandStopActor with its reason), then live
// commands follow; events (ToRivetEvents) go to the actor lifecycle and are acknowledged
// with ToEnvoyAckEvents; ToRivetAckCommands clears stored commands; KV requests run through
// engine/internal/kvserve with the check that the actor is placed on this envoy; the gateway
// opens tunnels (OpenEnvoyTunnel) carried as ToEnvoyTunnelMessage and ToRivetTunnelMessage.
// These messages are translated to and from the runner protocol's shapes by
// pkg/protocol/bridge, so that runners and envoys share the lifecycle, KV and gateway code.
// The SQLite page-store requests are served in sqlite.go.
package envoyws
