package actorkv

import (
	"bytes"
	"context"
	"slices"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Entry is one stored key with its value and metadata.
type Entry struct {
	Key, Value []byte
	Metadata   keys.ActorKVMetadata
}

// size is the entry's size as the quota counts it.
func (e Entry) size() int64 { return keySize(e.Key) + int64(len(e.Value)) }

// builder assembles entries from the rows of a range read, forward or reverse: a key's rows
// are contiguous, its chunks in number order and then its metadata (reversed when the read is).
type builder struct {
	aid id.ID

	cur     *Entry
	meta    bool
	chunks  []chunk
	pending bool // cur holds rows not yet turned into an entry
}

type chunk struct {
	n    int
	data []byte
}

// add takes the next row. When the row starts a new key, the previous key's entry is
// returned in done (ok true).
func (b *builder) add(kv udb.KeyValue) (done Entry, ok bool, err error) {
	row, err := keys.ParseActorKVRow(b.aid, kv.Key)
	if err != nil {
		return Entry{}, false, rerr.Corrupt("ActorKVRow", "%v", err)
	}
	if b.pending && !bytes.Equal(row.Key, b.cur.Key) {
		if done, err = b.finish(); err != nil {
			return Entry{}, false, err
		}
		ok = true
	}
	if !b.pending {
		b.cur = &Entry{Key: row.Key}
		b.meta, b.chunks, b.pending = false, b.chunks[:0], true
	}
	if row.IsMetadata {
		m, err := keys.ActorKVMetadataKey{}.Decode(kv.Value)
		if err != nil {
			return Entry{}, false, rerr.Corrupt("ActorKVMetadataKey", "%v", err)
		}
		b.cur.Metadata, b.meta = m, true
	} else {
		b.chunks = append(b.chunks, chunk{row.Chunk, kv.Value})
	}
	return done, ok, nil
}

// flush returns the entry of the rows added since the last key change; ok is false when
// there are none.
func (b *builder) flush() (Entry, bool, error) {
	if !b.pending {
		return Entry{}, false, nil
	}
	e, err := b.finish()
	return e, err == nil, err
}

func (b *builder) finish() (Entry, error) {
	b.pending = false
	e := *b.cur
	if !b.meta {
		return Entry{}, rerr.Corrupt("ActorKVMetadataKey", "key %x has %d value chunks and no metadata", e.Key, len(b.chunks))
	}
	slices.SortFunc(b.chunks, func(x, y chunk) int { return x.n - y.n })
	n := 0
	for i, c := range b.chunks {
		if c.n != i {
			return Entry{}, rerr.Corrupt("ActorKVChunkKey", "key %x: chunk %d where chunk %d belongs", e.Key, c.n, i)
		}
		n += len(c.data)
	}
	e.Value = make([]byte, 0, n)
	for _, c := range b.chunks {
		e.Value = append(e.Value, c.data...)
	}
	return e, nil
}

// readKey reads one key's entry through r; found is false when the key has no value.
func readKey(ctx context.Context, r udb.ReadTransaction, aid id.ID, key []byte) (e Entry, found bool, err error) {
	begin, end := keys.ActorKVKeyRange(aid, key)
	kvs, err := r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil || len(kvs) == 0 {
		return Entry{}, false, err
	}
	b := builder{aid: aid}
	for _, kv := range kvs {
		if _, _, err := b.add(kv); err != nil {
			return Entry{}, false, err
		}
	}
	return b.flush()
}

// storedSize is the quota size of key's current value through r, 0 when it has none. It reads
// the value's rows without assembling the value.
func storedSize(ctx context.Context, r udb.ReadTransaction, aid id.ID, key []byte) (int64, error) {
	begin, end := keys.ActorKVKeyRange(aid, key)
	return rangeSize(ctx, r, aid, begin, end)
}

// rangeSize sums the quota sizes of the entries whose rows lie in [begin, end), reading them
// as a stream.
func rangeSize(ctx context.Context, r udb.ReadTransaction, aid id.ID, begin, end []byte) (int64, error) {
	it := r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Mode: udb.StreamingModeWantAll})
	var total int64
	for it.Next(ctx) {
		kv := it.KeyValue()
		row, err := keys.ParseActorKVRow(aid, kv.Key)
		if err != nil {
			return 0, rerr.Corrupt("ActorKVRow", "%v", err)
		}
		if row.IsMetadata {
			total += keySize(row.Key)
		} else {
			total += int64(len(kv.Value))
		}
	}
	return total, it.Err()
}
