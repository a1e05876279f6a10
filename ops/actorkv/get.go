package actorkv

import (
	"context"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// GetInput names the keys to read.
type GetInput struct {
	ActorID id.ID
	Keys    [][]byte
}

// Get reads the given keys and returns only those that have a value, in the order asked, each
// once (a key asked twice is returned once). At most MaxKeys keys, each at most MaxKeySize.
func Get(ctx context.Context, r udb.ReadTransaction, in GetInput) ([]Entry, error) {
	if err := checkKeys(in.Keys); err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(in.Keys))
	seen := make(map[string]bool, len(in.Keys))
	for _, k := range in.Keys {
		if seen[string(k)] {
			continue
		}
		seen[string(k)] = true
		e, found, err := readKey(ctx, r, in.ActorID, k)
		if err != nil {
			return nil, err
		}
		if found {
			out = append(out, e)
		}
	}
	return out, nil
}
