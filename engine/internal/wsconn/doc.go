// Package wsconn holds what the runner and envoy sockets (engine/runnerws, engine/envoyws)
// share: the upgrade's token check and small hijack buffers, and the heartbeat schedule and
// pong batching that keep idle sockets from costing a goroutine or a transaction each.
package wsconn
