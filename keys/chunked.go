package keys

import (
	"bytes"
	"context"
	"fmt"

	"github.com/berthhq/berth/pkg/tuple"
	"github.com/berthhq/berth/pkg/udb"
)

// ChunkSize is the largest chunk of a chunked value, in bytes (Rivet's
// universaldb CHUNK_SIZE).
const ChunkSize = 10_000

// ChunkedKey is implemented by keys whose value is split over several udb
// values: chunk i is stored at Pack() followed by the tuple-packed integer i.
type ChunkedKey[V any] interface {
	Key[V]
	// ChunkKey returns the key of chunk i.
	ChunkKey(i int) []byte
}

func chunkKey(base []byte, i int) []byte {
	return tuple.Tuple{i}.AppendPack(bytes.Clone(base))
}

// SetChunked writes v at k: it clears every chunk of the old value, then
// writes the encoded value in chunks of at most ChunkSize bytes. An empty
// encoding is written as one empty chunk, so the value stays present.
func SetChunked[V any](tx udb.Transaction, k ChunkedKey[V], v V) {
	b := k.Encode(v)
	begin, end := prefixRange(k.Pack())
	tx.ClearRange(begin, end)
	for i := 0; i == 0 || i*ChunkSize < len(b); i++ {
		tx.Set(k.ChunkKey(i), b[i*ChunkSize:min((i+1)*ChunkSize, len(b))])
	}
}

// ClearChunked deletes every chunk of k.
func ClearChunked[V any](tx udb.Transaction, k ChunkedKey[V]) {
	tx.ClearRange(prefixRange(k.Pack()))
}

// GetChunked reads every chunk of k through r (tx or tx.Snapshot()) and
// decodes their concatenation. found is false when there is no chunk. Chunks
// must be numbered 0, 1, 2, ... without gaps; anything else is an error
// wrapping ErrBadValue.
func GetChunked[V any](ctx context.Context, r udb.ReadTransaction, k ChunkedKey[V]) (v V, found bool, err error) {
	base := k.Pack()
	begin, end := prefixRange(base)
	kvs, err := r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil || len(kvs) == 0 {
		return v, false, err
	}
	var buf []byte
	for i, kv := range kvs {
		if want := k.ChunkKey(i); !bytes.Equal(kv.Key, want) {
			return v, false, fmt.Errorf("%w: %T %s: row %d has key %s, want chunk %d", ErrBadValue, k, shown(base), i, shown(kv.Key), i)
		}
		buf = append(buf, kv.Value...)
	}
	v, err = k.Decode(buf)
	if err != nil {
		var zero V
		return zero, false, fmt.Errorf("%w (key %s)", err, shown(base))
	}
	return v, true, nil
}

// chunkIndex checks a chunk number read from a key.
func chunkIndex(name string, b []byte, v int64) (int, error) {
	if v < 0 || v > maxChunks {
		return 0, badKey(name, b, "chunk %d out of range [0, %d]", v, maxChunks)
	}
	return int(v), nil
}

// maxChunks bounds chunk numbers: a value spanning more chunks than a
// transaction can write is not a chunk key berth wrote.
const maxChunks = udb.MaxTxnSize / ChunkSize
