package actorkv

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// DeleteInput names the keys to delete.
type DeleteInput struct {
	ActorID id.ID
	Keys    [][]byte
}

// Delete deletes the given keys; a key without a value is no error. At most MaxKeys keys, each
// at most MaxKeySize. Each key's size is read serializably, for the size counter (see Put).
func Delete(ctx context.Context, tx udb.Transaction, in DeleteInput) error {
	if err := checkKeys(in.Keys); err != nil {
		return err
	}
	var freed int64
	seen := make(map[string]bool, len(in.Keys))
	for _, k := range in.Keys {
		if seen[string(k)] {
			continue
		}
		seen[string(k)] = true
		n, err := storedSize(ctx, tx, in.ActorID, k)
		if err != nil {
			return err
		}
		if n == 0 {
			continue
		}
		freed += n
		tx.ClearRange(keys.ActorKVKeyRange(in.ActorID, k))
	}
	if freed != 0 {
		keys.Add(tx, keys.ActorKVSizeKey{ActorID: in.ActorID}, -freed)
	}
	return nil
}
