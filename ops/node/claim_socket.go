package node

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// ClaimSocketInput is a node that now holds a runner's socket.
type ClaimSocketInput struct {
	RunnerID id.ID
	NodeID   string
}

// ClaimSocket records that NodeID holds the runner's socket, under the next epoch, and
// returns that epoch. A claim always wins: a runner that reconnected here has left its
// previous socket, wherever it was; the previous holder's index entry is cleared with it.
// The owner record is read serializably, so two claims at once cannot both take the same
// epoch.
func ClaimSocket(ctx context.Context, tx udb.Transaction, in ClaimSocketInput) (int64, error) {
	k := keys.SocketOwnerKey{RunnerID: in.RunnerID}
	prev, found, err := keys.Get(ctx, tx, k)
	if err != nil {
		return 0, err
	}
	if found && prev.NodeID != "" && prev.NodeID != in.NodeID {
		keys.Clear(tx, keys.NodeSocketKey{NodeID: prev.NodeID, RunnerID: in.RunnerID})
	}
	epoch := prev.Epoch + 1
	keys.Set(tx, k, keys.SocketOwner{Epoch: epoch, NodeID: in.NodeID})
	keys.Set(tx, keys.NodeSocketKey{NodeID: in.NodeID, RunnerID: in.RunnerID}, epoch)
	return epoch, nil
}
