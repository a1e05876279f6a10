package node

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/udb"
)

// ReleaseSocketInput is a node letting go of a socket it held under Epoch.
type ReleaseSocketInput struct {
	Socket keys.Socket
	NodeID string
	Epoch  int64
}

// ReleaseSocket clears the ownership record if it still names NodeID at Epoch (a
// compare-and-clear; the epoch is kept in the record so epochs never go back) and returns
// true; a record claimed since by anyone is left alone and false returned. Either way the
// node's own index entry goes, so a release is settled after one commit and is idempotent.
// The owner record is read serializably: a claim committing meanwhile makes this retry.
func ReleaseSocket(ctx context.Context, tx udb.Transaction, in ReleaseSocketInput) (bool, error) {
	k := keys.SocketOwnerKey{Socket: in.Socket}
	cur, found, err := keys.Get(ctx, tx, k)
	if err != nil {
		return false, err
	}
	keys.Clear(tx, keys.NodeSocketKey{NodeID: in.NodeID, Socket: in.Socket})
	if !found || cur.NodeID != in.NodeID || cur.Epoch != in.Epoch {
		return false, nil
	}
	keys.Set(tx, k, keys.SocketOwner{Epoch: cur.Epoch})
	return true, nil
}
