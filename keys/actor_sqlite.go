package keys

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// Actor SQLite page store (envoy protocol v8, SqliteGetPages / SqliteCommit / staged
// commits). Rivet keeps these pages in its own depot layout; berth has its own, in one
// subspace per actor, (RIVET, PEGBOARD, ACTOR_SQLITE, actor_id):
//
//	(METADATA)                                   → SQLiteMeta, JSON: head txid, size, stage
//	(DATA, pgno, chunk)                          → page pgno's bytes, chunk by chunk
//	(SQLITE_STAGE, stage_id, DATA, pgno, chunk)  → a staged page, invisible until finalized
//	(SQLITE_STAGE, stage_id, METADATA, first)    → SQLiteSegment: one staged segment
//
// A page of n bytes has ceil(n / ChunkSize) chunks (ChunkSize = 10,000 bytes, far below the
// store's 100 KB value limit); a page exists iff its chunk 0 exists. Integer segments sort
// DATA (4) < METADATA (44) < SQLITE_STAGE (1021), so the pages of a range of page numbers
// are one contiguous key range, and one range clear drops a whole staged commit. Page
// numbers start at 1 (SQLite's); pages past the database size are never returned.

func actorSQLiteSub(aid id.ID) []byte { return pegboard.Pack(tuple.Tuple{tagActorSQLite, aid}) }

// ActorSQLiteRange is the whole SQLite subspace of actor aid (pages, metadata, stages).
func ActorSQLiteRange(aid id.ID) (begin, end []byte) { return prefixRange(actorSQLiteSub(aid)) }

// SQLiteMetaVersion is the version of the SQLiteMeta encoding.
const SQLiteMetaVersion = 1

// SQLiteMeta is the head of an actor's database.
type SQLiteMeta struct {
	V int `json:"v"`
	// HeadTxid is the id of the last commit made visible; 0 before the first.
	HeadTxid uint64 `json:"head_txid"`
	// DbSizePages is the database size in pages as of HeadTxid.
	DbSizePages uint32 `json:"db_size_pages"`
	UpdateMs    int64  `json:"update_ms"`
	// Stage is the staged commit being written, if any: invisible until finalized.
	Stage *SQLiteStage `json:"stage,omitempty"`
	// Apply is a finalized staged commit (HeadTxid already counts it) whose pages are
	// still being moved from its stage into place; every read and write finishes the move
	// first (ops/sqlite).
	Apply *SQLiteStage `json:"apply,omitempty"`
}

// SQLiteStage is a staged commit.
type SQLiteStage struct {
	// ID names the stage's rows (SQLiteStagePageKey); unique per begin, so the rows of an
	// abandoned stage are never mistaken for a later one's.
	ID         []byte `json:"id"`
	Txid       uint64 `json:"txid"`
	Generation uint32 `json:"generation"`
	BeginMs    int64  `json:"begin_ms"`
	// Bytes and Pages count what the segments staged so far.
	Bytes uint64 `json:"bytes"`
	Pages uint32 `json:"pages"`
	// Segments is how many segments were staged; LastFirstPgno and LastPgno the first and
	// the highest page number of the last one (segments ascend and do not overlap).
	Segments      uint32 `json:"segments"`
	LastFirstPgno uint32 `json:"last_first_pgno"`
	LastPgno      uint32 `json:"last_pgno"`
}

// SQLiteMetaKey is (ACTOR_SQLITE, actor_id, METADATA) → SQLiteMeta, JSON; absent for an
// actor that never committed.
type SQLiteMetaKey struct{ ActorID id.ID }

func (k SQLiteMetaKey) Pack() []byte {
	return tuple.Tuple{tagMetadata}.AppendPack(actorSQLiteSub(k.ActorID))
}

func (SQLiteMetaKey) Encode(v SQLiteMeta) []byte {
	v.V = SQLiteMetaVersion
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("keys: encode SQLiteMeta: %v", err)) // plain data: cannot fail
	}
	return b
}

func (SQLiteMetaKey) Decode(b []byte) (SQLiteMeta, error) {
	var v SQLiteMeta
	if err := json.Unmarshal(b, &v); err != nil {
		return SQLiteMeta{}, badValue("SQLiteMetaKey", "%v", err)
	}
	if v.V != SQLiteMetaVersion {
		return SQLiteMeta{}, badValue("SQLiteMetaKey", "version %d, want %d", v.V, SQLiteMetaVersion)
	}
	return v, nil
}

// SQLitePagesPrefix is the packed (ACTOR_SQLITE, actor_id, DATA): every page row starts
// with it.
func SQLitePagesPrefix(aid id.ID) []byte {
	return tuple.Tuple{tagData}.AppendPack(actorSQLiteSub(aid))
}

// SQLitePageRange is the rows of pages first..last (inclusive) of actor aid.
func SQLitePageRange(aid id.ID, first, last uint32) (begin, end []byte) {
	p := SQLitePagesPrefix(aid)
	begin = tuple.Tuple{int64(first)}.AppendPack(append([]byte(nil), p...))
	_, end = prefixRange(tuple.Tuple{int64(last)}.AppendPack(append([]byte(nil), p...)))
	return begin, end
}

// SQLitePagesFrom is the rows of every page numbered first or more: a truncation clears it.
func SQLitePagesFrom(aid id.ID, first uint32) (begin, end []byte) {
	p := SQLitePagesPrefix(aid)
	begin = tuple.Tuple{int64(first)}.AppendPack(append([]byte(nil), p...))
	_, end = prefixRange(p)
	return begin, end
}

// SQLitePageChunkKey is (ACTOR_SQLITE, actor_id, DATA, pgno, chunk) → raw bytes.
func SQLitePageChunkKey(aid id.ID, pgno uint32, chunk int) []byte {
	return tuple.Tuple{int64(pgno), chunk}.AppendPack(SQLitePagesPrefix(aid))
}

// SQLitePageRow is a parsed page row: its page number and chunk.
type SQLitePageRow struct {
	Pgno  uint32
	Chunk int
}

// ParseSQLitePageRow parses a row whose key starts with prefix (SQLitePagesPrefix or
// SQLiteStagePagesPrefix), checking its shape.
func ParseSQLitePageRow(prefix, b []byte) (SQLitePageRow, error) {
	const name = "SQLitePageRow"
	if len(b) < len(prefix) || string(b[:len(prefix)]) != string(prefix) {
		return SQLitePageRow{}, badKey(name, b, "not under the expected prefix")
	}
	t, err := tuple.Unpack(b[len(prefix):])
	if err != nil {
		return SQLitePageRow{}, badKey(name, b, "%v", err)
	}
	if len(t) != 2 {
		return SQLitePageRow{}, badKey(name, b, "%d segments after the prefix, want 2", len(t))
	}
	pg, ok1 := t[0].(int64)
	ch, ok2 := t[1].(int64)
	if !ok1 || !ok2 || pg < 1 || pg > 1<<32-1 || ch < 0 {
		return SQLitePageRow{}, badKey(name, b, "page number or chunk out of range")
	}
	return SQLitePageRow{Pgno: uint32(pg), Chunk: int(ch)}, nil
}

func sqliteStageSub(aid id.ID, stageID []byte) []byte {
	return tuple.Tuple{tagSQLiteStage, stageID}.AppendPack(actorSQLiteSub(aid))
}

// SQLiteStageRange is every row of stage stageID of actor aid.
func SQLiteStageRange(aid id.ID, stageID []byte) (begin, end []byte) {
	return prefixRange(sqliteStageSub(aid, stageID))
}

// SQLiteStagesRange is every row of every stage of actor aid.
func SQLiteStagesRange(aid id.ID) (begin, end []byte) {
	return prefixRange(tuple.Tuple{tagSQLiteStage}.AppendPack(actorSQLiteSub(aid)))
}

// SQLiteStagePagesPrefix is the packed (…, SQLITE_STAGE, stage_id, DATA): every staged page
// row of the stage starts with it; the rest is (pgno, chunk) as for pages.
func SQLiteStagePagesPrefix(aid id.ID, stageID []byte) []byte {
	return tuple.Tuple{tagData}.AppendPack(sqliteStageSub(aid, stageID))
}

// SQLiteStagePageChunkKey is a staged page's chunk.
func SQLiteStagePageChunkKey(aid id.ID, stageID []byte, pgno uint32, chunk int) []byte {
	return tuple.Tuple{int64(pgno), chunk}.AppendPack(SQLiteStagePagesPrefix(aid, stageID))
}

// SQLiteSegment describes one staged segment.
type SQLiteSegment struct {
	Pages uint32
	Bytes uint64
}

// SQLiteSegmentKey is (…, SQLITE_STAGE, stage_id, METADATA, first_pgno) → SQLiteSegment:
// pages u32 and bytes u64, big-endian.
type SQLiteSegmentKey struct {
	ActorID   id.ID
	StageID   []byte
	FirstPgno uint32
}

func (k SQLiteSegmentKey) Pack() []byte {
	return tuple.Tuple{tagMetadata, int64(k.FirstPgno)}.AppendPack(sqliteStageSub(k.ActorID, k.StageID))
}

func (SQLiteSegmentKey) Encode(v SQLiteSegment) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 12), v.Pages)
	return binary.BigEndian.AppendUint64(b, v.Bytes)
}

func (SQLiteSegmentKey) Decode(b []byte) (SQLiteSegment, error) {
	if len(b) != 12 {
		return SQLiteSegment{}, badValue("SQLiteSegmentKey", "value is %d bytes, want 12", len(b))
	}
	return SQLiteSegment{Pages: binary.BigEndian.Uint32(b), Bytes: binary.BigEndian.Uint64(b[4:])}, nil
}

// SQLiteSegmentsRange is every SQLiteSegmentKey of a stage, by first page number.
func SQLiteSegmentsRange(aid id.ID, stageID []byte) (begin, end []byte) {
	return prefixRange(tuple.Tuple{tagMetadata}.AppendPack(sqliteStageSub(aid, stageID)))
}

// UnpackSQLiteSegmentFirst returns the first page number of a key read from
// SQLiteSegmentsRange(aid, stageID).
func UnpackSQLiteSegmentFirst(aid id.ID, stageID, b []byte) (uint32, error) {
	p := tuple.Tuple{tagMetadata}.AppendPack(sqliteStageSub(aid, stageID))
	if len(b) < len(p) || string(b[:len(p)]) != string(p) {
		return 0, badKey("SQLiteSegmentKey", b, "not in the stage's segments")
	}
	t, err := tuple.Unpack(b[len(p):])
	if err != nil || len(t) != 1 {
		return 0, badKey("SQLiteSegmentKey", b, "want one segment after the prefix (%v)", err)
	}
	v, ok := t[0].(int64)
	if !ok || v < 0 || v > 1<<32-1 {
		return 0, badKey("SQLiteSegmentKey", b, "first page number out of range")
	}
	return uint32(v), nil
}

// SQLiteStageIdxKey is (ACTOR_SQLITE, SQLITE_STAGE, begin_ms, actor_id) → the stage id: one
// entry per open staged commit, oldest first, so that abandoned stages are found and
// discarded without a scan of every actor (ops/sqlite.Sweep). Its second segment is an
// integer, never an actor id, so it is outside every actor's subspace.
type SQLiteStageIdxKey struct {
	BeginMs int64
	ActorID id.ID
}

func (k SQLiteStageIdxKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagActorSQLite, tagSQLiteStage, k.BeginMs, k.ActorID})
}

// UnpackSQLiteStageIdxKey parses a SQLiteStageIdxKey, checking every constant segment.
func UnpackSQLiteStageIdxKey(b []byte) (SQLiteStageIdxKey, error) {
	t, err := unpack("SQLiteStageIdxKey", pegboard, b, tagActorSQLite, tagSQLiteStage, anyInt, anyID)
	if err != nil {
		return SQLiteStageIdxKey{}, err
	}
	return SQLiteStageIdxKey{BeginMs: t[2].(int64), ActorID: t[3].(id.ID)}, nil
}

func (SQLiteStageIdxKey) Encode(stageID []byte) []byte    { return stageID }
func (SQLiteStageIdxKey) Decode(b []byte) ([]byte, error) { return b, nil }

// SQLiteStageIdxBefore is the SQLiteStageIdxKey entries of stages begun before beforeMs.
func SQLiteStageIdxBefore(beforeMs int64) (begin, end []byte) {
	p := pegboard.Pack(tuple.Tuple{tagActorSQLite, tagSQLiteStage})
	begin, _ = prefixRange(p)
	end = tuple.Tuple{beforeMs}.AppendPack(append([]byte(nil), p...))
	return begin, end
}
