package keys

import (
	"context"
	"fmt"

	"github.com/berthhq/berth/pkg/udb"
)

// Key is implemented by every key type; V is its value type.
type Key[V any] interface {
	// Pack returns the key's bytes.
	Pack() []byte
	// Encode returns the stored form of a value.
	Encode(V) []byte
	// Decode parses a stored value; errors wrap ErrBadValue.
	Decode([]byte) (V, error)
}

// Get reads k through r: pass tx for a serializable read, tx.Snapshot() for a
// snapshot read. found is false when the key is absent. A value that does
// not decode is an error wrapping ErrBadValue that names the key.
func Get[V any](ctx context.Context, r udb.ReadTransaction, k Key[V]) (v V, found bool, err error) {
	key := k.Pack()
	b, err := r.Get(ctx, key)
	if err != nil || b == nil {
		return v, false, err
	}
	v, err = k.Decode(b)
	if err != nil {
		var zero V
		return zero, false, fmt.Errorf("%w (key %s)", err, shown(key))
	}
	return v, true, nil
}

// Set writes v at k.
func Set[V any](tx udb.Transaction, k Key[V], v V) { tx.Set(k.Pack(), k.Encode(v)) }

// Clear deletes k.
func Clear[V any](tx udb.Transaction, k Key[V]) { tx.Clear(k.Pack()) }

// Counter is implemented by keys whose value is a little-endian i64 changed
// only by atomic add (FoundationDB's add is little-endian).
type Counter interface {
	Key[int64]
	isCounter()
}

// Add atomically adds delta to the counter at k; an absent counter counts as
// 0. Adding 0 makes sure the key exists without a read conflict.
func Add(tx udb.Transaction, k Counter, delta int64) {
	tx.Atomic(udb.MutationAdd, k.Pack(), encodeCounter(delta))
}
