package wsconn

import (
	"context"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// Cluster is what the runner and envoy socket servers need of the datacenter's nodes
// (engine/cluster.Node): sockets are recorded as held here and released when they end, and
// commands, closes and evictions for a runner or an envoy whose socket another node holds
// go to that node.
type Cluster interface {
	// ClaimSocket records that this node holds h's socket, returning the epoch to release
	// it with.
	ClaimSocket(ctx context.Context, h actor.Host) (int64, error)
	// ReleaseSocket releases the record held under epoch in one transaction with before
	// (whose *rerr.Error means it wrote nothing, and is ignored), bounded in concurrency; it
	// does nothing while the node shuts down preserving ownership.
	ReleaseSocket(ctx context.Context, h actor.Host, epoch int64, before func(context.Context, udb.Transaction) error)
	// SendCommands, CloseSocket and Evict reach a socket on another node, over the bus.
	SendCommands(h actor.Host, cmds []actor.Command)
	CloseSocket(h actor.Host, err error)
	Evict(connID id.ID)
}
