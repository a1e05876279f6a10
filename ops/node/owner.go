package node

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/udb"
)

// Owner is where a runner's or an envoy's socket is.
type Owner struct {
	NodeID  string
	Epoch   int64
	Address string // the node's internal URL
}

// SocketOwnerInput asks where a socket is, as of NowMs.
type SocketOwnerInput struct {
	Socket keys.Socket
	NowMs  int64
}

// SocketOwner returns the live node holding the socket; false when no node holds
// it (never claimed, released) or its holder's lease has run out (the node is gone). Snapshot
// reads: a gateway's routing lookup, retried by its caller when the answer went stale.
func SocketOwner(ctx context.Context, r udb.ReadTransaction, in SocketOwnerInput) (Owner, bool, error) {
	s := r.Snapshot()
	own, found, err := keys.Get(ctx, s, keys.SocketOwnerKey{Socket: in.Socket})
	if err != nil || !found || own.NodeID == "" {
		return Owner{}, false, err
	}
	lease, found, err := keys.Get(ctx, s, keys.NodeLeaseKey{NodeID: own.NodeID})
	if err != nil || !found || lease.ExpiresMs <= in.NowMs {
		return Owner{}, false, err
	}
	return Owner{NodeID: own.NodeID, Epoch: own.Epoch, Address: lease.Address}, true, nil
}
