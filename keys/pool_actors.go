package keys

import (
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// PoolActorsKey is (PEGBOARD, POOL_ACTORS, namespace_id, name) → little-endian i64, changed
// only by atomic add: how many actors of serverless pool (namespace, name) are allocated
// (placed on a host or waiting on its /start), for max_concurrent_actors
// (docs/serverless.md § 4.7). It is added to in the transaction that allocates an actor and
// taken from in the one that frees it (ActorState.PoolSlot says which actors count), so
// checking the limit reads one key. Rivet's ActorSlotsKey; berth's own tag.
type PoolActorsKey struct {
	Namespace id.ID
	Name      string
}

func (k PoolActorsKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagPoolActors, k.Namespace, k.Name})
}

// UnpackPoolActorsKey parses a PoolActorsKey, checking every constant segment.
func UnpackPoolActorsKey(b []byte) (PoolActorsKey, error) {
	t, err := unpack("PoolActorsKey", pegboard, b, tagPoolActors, anyID, anyString)
	if err != nil {
		return PoolActorsKey{}, err
	}
	return PoolActorsKey{Namespace: t[1].(id.ID), Name: t[2].(string)}, nil
}

func (PoolActorsKey) Encode(v int64) []byte          { return encodeCounter(v) }
func (PoolActorsKey) Decode(b []byte) (int64, error) { return decodeCounter("PoolActorsKey", b) }
func (PoolActorsKey) isCounter()                     {}
