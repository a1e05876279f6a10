package actorkv

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// PutInput writes Values[i] at Keys[i].
type PutInput struct {
	ActorID      id.ID
	Keys, Values [][]byte
	// Version is stored in each value's metadata: the bytes of the engine's version string.
	Version []byte
	// NowMs is the update_ts stored in each value's metadata; passed in so that every retry of
	// the transaction writes the same.
	NowMs int64
}

// Put writes the entries, replacing the values the keys had. When a key is given twice, the
// later value wins. Limits: Keys and Values of equal length, at most MaxKeys entries, keys at
// most MaxKeySize, values at most MaxValueSize, a payload of at most MaxPutPayloadSize, and
// the actor's KV at most MaxStorageSize after the put (actor.kv_storage_quota_exceeded
// otherwise). Nothing is written when a limit is exceeded.
//
// The current size of each key is read serializably, so that two puts of one key cannot both
// subtract the same old size from the counter; the counter itself is read at snapshot
// isolation, since puts change it only by atomic add and must not conflict on it (two
// concurrent puts may therefore together pass the quota by less than one put's payload).
func Put(ctx context.Context, tx udb.Transaction, in PutInput) error {
	payload, err := checkEntries(in.Keys, in.Values)
	if err != nil {
		return err
	}
	// The last occurrence of each key wins.
	last := make(map[string]int, len(in.Keys))
	for i, k := range in.Keys {
		last[string(k)] = i
	}
	var old, added int64
	for i, k := range in.Keys {
		if last[string(k)] != i {
			continue
		}
		n, err := storedSize(ctx, tx, in.ActorID, k)
		if err != nil {
			return err
		}
		old += n
		added += keySize(k) + int64(len(in.Values[i]))
	}
	cur, err := Size(ctx, tx.Snapshot(), in.ActorID)
	if err != nil {
		return err
	}
	if cur-old+added > MaxStorageSize {
		return rerr.ActorKVStorageQuotaExceeded(max(MaxStorageSize-cur+old, 0), payload)
	}
	meta := keys.ActorKVMetadata{Version: in.Version, UpdateTs: in.NowMs}
	for i, k := range in.Keys {
		if last[string(k)] != i {
			continue
		}
		tx.ClearRange(keys.ActorKVKeyRange(in.ActorID, k))
		v := in.Values[i]
		for c := 0; c*keys.ChunkSize < len(v); c++ {
			ck := keys.ActorKVChunkKey{ActorID: in.ActorID, Key: k, Chunk: c}
			tx.Set(ck.Pack(), v[c*keys.ChunkSize:min((c+1)*keys.ChunkSize, len(v))])
		}
		keys.Set(tx, keys.ActorKVMetadataKey{ActorID: in.ActorID, Key: k}, meta)
	}
	keys.Add(tx, keys.ActorKVSizeKey{ActorID: in.ActorID}, added-old)
	return nil
}
