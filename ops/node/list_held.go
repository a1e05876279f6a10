package node

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/udb"
)

// Held is one ownership record a node holds: its socket (a runner's or an envoy's) and epoch.
type Held struct {
	keys.Socket
	Epoch int64
}

// ListHeldInput pages through a node's ownership index.
type ListHeldInput struct {
	NodeID string
	After  *keys.Socket // exclusive; nil starts at the beginning
	Limit  int          // 0 is unlimited
}

// ListHeld returns the ownership records a node holds, in key order, at snapshot
// isolation: the node itself is the only one adding entries, and each release re-checks
// its record serializably.
func ListHeld(ctx context.Context, r udb.ReadTransaction, in ListHeldInput) ([]Held, error) {
	begin, end := keys.NodeSocketRange(in.NodeID)
	sel := udb.FirstGreaterOrEqual(begin)
	if in.After != nil {
		sel = udb.FirstGreaterThan(keys.NodeSocketKey{NodeID: in.NodeID, Socket: *in.After}.Pack())
	}
	kvs, err := r.Snapshot().GetRange(sel, udb.FirstGreaterOrEqual(end), udb.RangeOptions{Limit: in.Limit}).All(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Held, 0, len(kvs))
	for _, kv := range kvs {
		k, err := keys.UnpackNodeSocketKey(kv.Key)
		if err != nil {
			return nil, err
		}
		epoch, err := k.Decode(kv.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, Held{Socket: k.Socket, Epoch: epoch})
	}
	return out, nil
}
