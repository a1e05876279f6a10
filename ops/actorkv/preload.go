package actorkv

import (
	"context"
	"math"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// MaxPreloadSize is the most KV an actor may hold, as the quota counts it (Size), for the
// whole of it to be sent with its start command (envoy protocol v8 preloadedKv).
const MaxPreloadSize = 1 << 20

// Preload returns every entry of the actor's KV when it holds at most MaxPreloadSize bytes,
// and nil (send nothing) above that. complete is true when entries is the whole KV, so that
// a key absent from it does not exist. Meant for a snapshot read: a start command carries
// the KV as of some moment before the actor runs, and the actor is its only writer.
func Preload(ctx context.Context, r udb.ReadTransaction, aid id.ID) (entries []Entry, complete bool, err error) {
	size, err := Size(ctx, r, aid)
	if err != nil || size > MaxPreloadSize {
		return nil, false, err
	}
	limit := uint64(math.MaxUint32)
	entries, err = List(ctx, r, ListInput{ActorID: aid, Limit: &limit})
	if err != nil {
		return nil, false, err
	}
	var total int64
	for _, e := range entries {
		total += e.size()
	}
	if total > MaxPreloadSize {
		// The counter lagged the entries (it is only ever added to atomically).
		return nil, false, nil
	}
	return entries, true, nil
}
