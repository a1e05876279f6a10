package node

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/udb"
)

// ClaimSocketInput is a node that now holds a runner's or an envoy's socket.
type ClaimSocketInput struct {
	Socket keys.Socket
	NodeID string
}

// ClaimSocket records that NodeID holds the socket, under the next epoch, and returns that
// epoch. A claim always wins: a runner or an envoy that reconnected here has left its
// previous socket, wherever it was; the previous holder's index entry is cleared with it.
// The owner record is read serializably, so two claims at once cannot both take the same
// epoch.
func ClaimSocket(ctx context.Context, tx udb.Transaction, in ClaimSocketInput) (int64, error) {
	k := keys.SocketOwnerKey{Socket: in.Socket}
	prev, found, err := keys.Get(ctx, tx, k)
	if err != nil {
		return 0, err
	}
	if found && prev.NodeID != "" && prev.NodeID != in.NodeID {
		keys.Clear(tx, keys.NodeSocketKey{NodeID: prev.NodeID, Socket: in.Socket})
	}
	epoch := prev.Epoch + 1
	keys.Set(tx, k, keys.SocketOwner{Epoch: epoch, NodeID: in.NodeID})
	keys.Set(tx, keys.NodeSocketKey{NodeID: in.NodeID, Socket: in.Socket}, epoch)
	return epoch, nil
}
