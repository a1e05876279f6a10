// Package wsconn holds the WebSocket pieces the host sockets (engine/hostsock) and the
// cluster's relays (engine/cluster) share: the upgrade's token check, small hijack buffers
// and the frame guard, the heartbeat schedule, batching, tunnel inboxes and their errors.
package wsconn
