package actorkv

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// Size returns the bytes the actor's KV takes as the quota counts them: for each key, its
// length plus 2 plus its value's length. Read through r (tx, or tx.Snapshot()).
func Size(ctx context.Context, r udb.ReadTransaction, actorID id.ID) (int64, error) {
	v, _, err := keys.Get(ctx, r, keys.ActorKVSizeKey{ActorID: actorID})
	return v, err
}
