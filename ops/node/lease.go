package node

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/udb"
)

// RenewLeaseInput is a node announcing itself until ExpiresMs.
type RenewLeaseInput struct {
	NodeID    string
	Address   string // internal URL other nodes reach it at
	ExpiresMs int64
}

// RenewLease writes the node's lease. A blind write: only the node itself writes its lease,
// so there is nothing to conflict with.
func RenewLease(tx udb.Transaction, in RenewLeaseInput) {
	keys.Set(tx, keys.NodeLeaseKey{NodeID: in.NodeID}, keys.NodeLease{ExpiresMs: in.ExpiresMs, Address: in.Address})
}

// Leave clears the node's lease: a node shutting down for good (handoff) is gone at once
// for every other node, without waiting for the lease to run out.
func Leave(tx udb.Transaction, nodeID string) {
	keys.Clear(tx, keys.NodeLeaseKey{NodeID: nodeID})
}

// Lease reads a node's lease at snapshot isolation (a routing decision: staleness of a few
// ms is harmless and must not make writers retry).
func Lease(ctx context.Context, r udb.ReadTransaction, nodeID string) (keys.NodeLease, bool, error) {
	return keys.Get(ctx, r.Snapshot(), keys.NodeLeaseKey{NodeID: nodeID})
}
