package keys

import (
	"bytes"
	"encoding/binary"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// Actor KV (docs/design.md, "Key space"; the layout is Rivet's): every actor
// has its own subspace (RIVET, PEGBOARD, ACTOR_KV, actor_id). A user key k is stored as the
// nested tuple (k) — NESTED, k as a byte string, the nested tuple's end — followed by:
//
//	(NESTED(k), DATA, chunk) → the value's bytes chunk..chunk+1 of ChunkSize (10,000) each
//	(NESTED(k), METADATA)    → ActorKVMetadata, BARE {version data, update_ts i64}
//
// The byte-string encoding keeps byte order (0x00 is escaped as 00 FF and the string ends in
// 00), so the entries sort by user key bytes and each key's rows are contiguous: first its
// chunks (DATA = 4), then its metadata (METADATA = 44). A key has a value iff its metadata
// row exists; a value of n bytes has ceil(n / ChunkSize) chunks (none when empty).
//
// berth adds one key of its own to the subspace, after every entry (an integer segment
// sorts after any nested tuple): (KV_SIZE) → the bytes the actor's entries take (see
// ActorKVSizeKey), a little-endian i64 changed only by atomic add. Clearing the whole
// subspace (ActorKVRange) drops the entries and resets the size at once.

// ActorKVMetadata is the metadata of one stored value, Rivet's KvMetadata: the engine version
// that wrote it and when, in unix ms.
type ActorKVMetadata struct {
	Version  []byte
	UpdateTs int64
}

func actorKVSub(aid id.ID) []byte { return pegboard.Pack(tuple.Tuple{tagActorKV, aid}) }

// actorKVEntry returns the packed (ACTOR_KV, actor_id, NESTED(key)), the prefix of every row
// of key.
func actorKVEntry(aid id.ID, key []byte) []byte {
	return tuple.Tuple{tuple.Tuple{key}}.AppendPack(actorKVSub(aid))
}

// ActorKVRange is the whole KV subspace of actor aid: its entries and its size counter.
func ActorKVRange(aid id.ID) (begin, end []byte) { return prefixRange(actorKVSub(aid)) }

// ActorKVEntriesRange is every entry of actor aid, without the size counter: the rows whose
// first segment is a nested tuple.
func ActorKVEntriesRange(aid id.ID) (begin, end []byte) {
	p := actorKVSub(aid)
	begin = append(bytes.Clone(p), nestedCode)
	end = append(p, nestedCode+1)
	return begin, end
}

// nestedCode is the tuple type code of a nested tuple.
const nestedCode = 0x05

// ActorKVKeyRange is every row of one user key (its chunks and metadata).
func ActorKVKeyRange(aid id.ID, key []byte) (begin, end []byte) {
	return prefixRange(actorKVEntry(aid, key))
}

// ActorKVBetween is the rows of the user keys from start to end in byte order: start is always
// included, end only when inclusiveEnd. This is Rivet's list range query, where
// `exclusive` excludes the end key. start > end gives an empty range (begin ≥ end).
func ActorKVBetween(aid id.ID, start, end []byte, inclusiveEnd bool) (b, e []byte) {
	b = actorKVEntry(aid, start)
	e = actorKVEntry(aid, end)
	if inclusiveEnd {
		_, e = prefixRange(e)
	}
	return b, e
}

// ActorKVPrefixRange is the rows of every user key that starts with prefix (all keys for an
// empty prefix). Unlike Rivet's, the range also holds keys whose byte after the prefix is 0xFF.
func ActorKVPrefixRange(aid id.ID, prefix []byte) (begin, end []byte) {
	// The packed byte string of prefix without its terminator is a prefix of the packed byte
	// string of every key that starts with prefix, and of no other key.
	full := actorKVEntry(aid, prefix)
	begin = full[:len(full)-2] // drop the string's 00 and the nested tuple's 00
	end, err := tuple.Strinc(begin)
	if err != nil {
		// begin ends in the nested-tuple and bytes codes (05 01), never in 0xFF.
		panic("keys: ActorKVPrefixRange: " + err.Error())
	}
	return bytes.Clone(begin), end
}

// ActorKVChunkKey is (ACTOR_KV, actor_id, NESTED(key), DATA, chunk) → raw bytes, chunk number
// chunk of the value of key.
type ActorKVChunkKey struct {
	ActorID id.ID
	Key     []byte
	Chunk   int
}

func (k ActorKVChunkKey) Pack() []byte {
	return tuple.Tuple{tagData, k.Chunk}.AppendPack(actorKVEntry(k.ActorID, k.Key))
}

func (ActorKVChunkKey) Encode(v []byte) []byte          { return v }
func (ActorKVChunkKey) Decode(b []byte) ([]byte, error) { return b, nil }

// ActorKVMetadataKey is (ACTOR_KV, actor_id, NESTED(key), METADATA) → ActorKVMetadata: present
// iff key has a value.
type ActorKVMetadataKey struct {
	ActorID id.ID
	Key     []byte
}

func (k ActorKVMetadataKey) Pack() []byte {
	return tuple.Tuple{tagMetadata}.AppendPack(actorKVEntry(k.ActorID, k.Key))
}

// Encode writes serde_bare's encoding of Rivet's KvMetadata (not versioned, as in Rivet):
// version as data (uvarint length, bytes), update_ts as a little-endian i64.
func (ActorKVMetadataKey) Encode(m ActorKVMetadata) []byte {
	b := appendData(make([]byte, 0, len(m.Version)+10), m.Version)
	return binary.LittleEndian.AppendUint64(b, uint64(m.UpdateTs))
}

func (ActorKVMetadataKey) Decode(b []byte) (ActorKVMetadata, error) {
	r := bareReader{name: "ActorKVMetadataKey", b: b}
	v := r.data("version")
	var ts int64
	if r.err == nil {
		if len(r.b) < 8 {
			r.fail("update_ts: truncated i64")
		} else {
			ts = int64(binary.LittleEndian.Uint64(r.b))
			r.b = r.b[8:]
		}
	}
	if err := r.done(); err != nil {
		return ActorKVMetadata{}, err
	}
	return ActorKVMetadata{Version: bytes.Clone(v), UpdateTs: ts}, nil
}

// ActorKVRow is one row of an actor's KV entries, parsed: the user key, and either a chunk
// number or the metadata.
type ActorKVRow struct {
	Key        []byte
	IsMetadata bool
	Chunk      int // when !IsMetadata
}

// ParseActorKVRow parses a row read from ActorKVEntriesRange(aid) or a narrower range,
// checking every constant segment.
func ParseActorKVRow(aid id.ID, b []byte) (ActorKVRow, error) {
	const name = "ActorKVRow"
	p := actorKVSub(aid)
	if !bytes.HasPrefix(b, p) {
		return ActorKVRow{}, badKey(name, b, "not in the KV subspace of actor %s", aid)
	}
	t, err := tuple.Unpack(b[len(p):])
	if err != nil {
		return ActorKVRow{}, badKey(name, b, "%v", err)
	}
	if len(t) < 2 {
		return ActorKVRow{}, badKey(name, b, "%d segments, want 2 or 3", len(t))
	}
	nested, ok := t[0].(tuple.Tuple)
	if !ok || len(nested) != 1 {
		return ActorKVRow{}, badKey(name, b, "segment 0 is %v, want a nested tuple of one byte string", t[0])
	}
	key, ok := nested[0].([]byte)
	if !ok {
		return ActorKVRow{}, badKey(name, b, "user key is %T, want a byte string", nested[0])
	}
	tag, ok := t[1].(int64)
	switch {
	case ok && tag == tagMetadata && len(t) == 2:
		return ActorKVRow{Key: key, IsMetadata: true}, nil
	case ok && tag == tagData && len(t) == 3:
		c, ok := t[2].(int64)
		if !ok {
			return ActorKVRow{}, badKey(name, b, "chunk is %T, want an integer", t[2])
		}
		chunk, err := chunkIndex(name, b, c)
		if err != nil {
			return ActorKVRow{}, err
		}
		return ActorKVRow{Key: key, Chunk: chunk}, nil
	default:
		return ActorKVRow{}, badKey(name, b, "segments after the key are %v, want (DATA, chunk) or (METADATA)", t[1:])
	}
}

// ActorKVSizeKey is (ACTOR_KV, actor_id, KV_SIZE) → little-endian i64, changed only by atomic
// add: the bytes the actor's entries take, counted as Rivet counts a put's payload (each key's
// length plus 2, plus the value's length). berth's own key: Rivet estimates the size from the
// range instead.
type ActorKVSizeKey struct{ ActorID id.ID }

func (k ActorKVSizeKey) Pack() []byte {
	return tuple.Tuple{tagKVSize}.AppendPack(actorKVSub(k.ActorID))
}

func (ActorKVSizeKey) Encode(v int64) []byte          { return encodeCounter(v) }
func (ActorKVSizeKey) Decode(b []byte) (int64, error) { return decodeCounter("ActorKVSizeKey", b) }
func (ActorKVSizeKey) isCounter()                     {}
