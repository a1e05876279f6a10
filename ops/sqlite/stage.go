package sqlite

import (
	"bytes"
	"context"
	"slices"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
	"github.com/berthhq/berth/pkg/udb"
)

// A staged commit is written as begin, segments and finalize, each its own transaction.
// Staged pages live under a stage id chosen at begin (keys.SQLiteStagePageChunkKey): no
// read looks there, so until finalize the commit is invisible. Finalize advances the head
// and marks the stage as applied (SQLiteMeta.Apply) in one transaction; ApplyBatch then
// moves its pages into place a bounded batch per transaction, and every other op waits for
// that (ErrApplyPending), so readers see all of the commit or none of it. A stage that is
// never finalized is discarded by the actor's next begin or commit, by a newer generation,
// or by Sweep once it is older than StageMaxAge: one range clear each.

// StageBeginInput opens a staged commit.
type StageBeginInput struct {
	Fence        Fence
	ExpectedHead *uint64
	// StageID names the stage's rows: 16 random bytes, chosen by the caller so that a
	// retried body writes the same.
	StageID []byte
	NowMs   int64
}

// StageBeginOutput is the transaction id the commit will take: head + 1.
type StageBeginOutput struct{ Txid uint64 }

// StageBegin discards any open stage of the actor and opens a new one for head + 1.
func StageBegin(ctx context.Context, tx udb.Transaction, in StageBeginInput) (StageBeginOutput, error) {
	if len(in.StageID) == 0 {
		return StageBeginOutput{}, errInvalid("empty stage id")
	}
	if _, err := checkFence(ctx, tx, in.Fence, false); err != nil {
		return StageBeginOutput{}, err
	}
	aid := in.Fence.ActorID
	m, err := loadMeta(ctx, tx, aid)
	if err != nil {
		return StageBeginOutput{}, err
	}
	if m.Apply != nil {
		return StageBeginOutput{}, ErrApplyPending
	}
	if in.ExpectedHead != nil && *in.ExpectedHead != m.HeadTxid {
		return StageBeginOutput{}, errHeadMismatch(m.HeadTxid, *in.ExpectedHead)
	}
	discardStage(tx, aid, &m)
	m.Stage = &keys.SQLiteStage{ID: bytes.Clone(in.StageID), Txid: m.HeadTxid + 1, Generation: in.Fence.Generation, BeginMs: in.NowMs}
	keys.Set(tx, keys.SQLiteMetaKey{ActorID: aid}, m)
	keys.Set(tx, keys.SQLiteStageIdxKey{BeginMs: in.NowMs, ActorID: aid}, m.Stage.ID)
	return StageBeginOutput{Txid: m.Stage.Txid}, nil
}

// openStage returns the actor's head and its open stage for txid, begun by this generation.
func openStage(ctx context.Context, tx udb.Transaction, f Fence, txid uint64) (keys.SQLiteMeta, error) {
	if _, err := checkFence(ctx, tx, f, false); err != nil {
		return keys.SQLiteMeta{}, err
	}
	m, err := loadMeta(ctx, tx, f.ActorID)
	switch {
	case err != nil:
		return m, err
	case m.Apply != nil:
		return m, ErrApplyPending
	case m.Stage == nil:
		return m, errStageNotFound(txid, "no staged commit is open")
	case m.Stage.Txid != txid:
		return m, errStageNotFound(txid, "the open staged commit is %d", m.Stage.Txid)
	case m.Stage.Generation != f.Generation:
		return m, errStageNotFound(txid, "it was begun by generation %d", m.Stage.Generation)
	}
	return m, nil
}

// StageSegmentInput stages one segment of pages.
type StageSegmentInput struct {
	Fence     Fence
	Txid      uint64
	FirstPgno uint32
	Pages     []Page
}

// StageSegmentOutput is how many page bytes the stage holds now.
type StageSegmentOutput struct{ StagedBytes uint64 }

// StageSegment stages pages. Segments ascend: FirstPgno is past every page of the previous
// segment, and every page of the segment is at FirstPgno or after it, so no page is in two
// segments. (The schema also asks for shard-aligned segments; berth stores pages one by
// one, so any alignment is accepted.)
func StageSegment(ctx context.Context, tx udb.Transaction, in StageSegmentInput) (StageSegmentOutput, error) {
	n, err := checkPages(in.Pages, MaxSegmentBytes, "a segment")
	if err != nil {
		return StageSegmentOutput{}, err
	}
	if in.FirstPgno == 0 {
		return StageSegmentOutput{}, errInvalid("segment first page number 0")
	}
	last := in.FirstPgno
	for _, p := range in.Pages {
		if p.Pgno < in.FirstPgno {
			return StageSegmentOutput{}, errInvalid("page %d is before the segment's first page %d", p.Pgno, in.FirstPgno)
		}
		last = max(last, p.Pgno)
	}
	aid := in.Fence.ActorID
	m, err := openStage(ctx, tx, in.Fence, in.Txid)
	if err != nil {
		return StageSegmentOutput{}, err
	}
	st := m.Stage
	if st.Segments > 0 && in.FirstPgno <= st.LastPgno {
		return StageSegmentOutput{}, errInvalid("segment at page %d does not come after the previous segment (pages %d to %d)", in.FirstPgno, st.LastFirstPgno, st.LastPgno)
	}
	if st.Bytes+uint64(n) > MaxStageBytes {
		return StageSegmentOutput{}, errTooLarge("a staged commit holds more than %d bytes of pages", uint64(MaxStageBytes))
	}
	for _, p := range in.Pages {
		pg := p.Pgno
		prefix := keys.SQLiteStagePagesPrefix(aid, st.ID)
		begin, end := stagePageRange(prefix, pg)
		writePage(tx, func(c int) []byte { return keys.SQLiteStagePageChunkKey(aid, st.ID, pg, c) }, begin, end, p.Bytes)
	}
	keys.Set(tx, keys.SQLiteSegmentKey{ActorID: aid, StageID: st.ID, FirstPgno: in.FirstPgno},
		keys.SQLiteSegment{Pages: uint32(len(in.Pages)), Bytes: uint64(n)})
	st.Segments++
	st.Pages += uint32(len(in.Pages))
	st.Bytes += uint64(n)
	st.LastFirstPgno, st.LastPgno = in.FirstPgno, last
	keys.Set(tx, keys.SQLiteMetaKey{ActorID: aid}, m)
	return StageSegmentOutput{StagedBytes: st.Bytes}, nil
}

// stagePageRange is the rows of staged page pg: those starting with prefix + (pg).
func stagePageRange(prefix []byte, pg uint32) (begin, end []byte) {
	return prefixRangeOf(tuple.Tuple{int64(pg)}.AppendPack(bytes.Clone(prefix)))
}

// prefixRangeOf is every key starting with p (p ends in a tuple element, never in 0xFF).
func prefixRangeOf(p []byte) (begin, end []byte) {
	end, err := tuple.Strinc(p)
	if err != nil {
		panic("sqlite: prefix ends in 0xFF: " + err.Error()) // tuple-packed prefixes never do
	}
	return p, end
}

// StageFinalizeInput publishes a staged commit.
type StageFinalizeInput struct {
	Fence          Fence
	Txid           uint64
	NewDbSizePages uint32
	NowMs          int64
	// SegmentFirstPgnos is exactly the segments the caller staged.
	SegmentFirstPgnos []uint32
}

// StageFinalizeOutput is the new head.
type StageFinalizeOutput struct{ HeadTxid uint64 }

// StageFinalize checks that the stage holds exactly the segments listed and that its txid
// is still head + 1, then makes it the head: the size changes, pages past it are dropped,
// and the stage is left for ApplyBatch to move into place (the caller runs it to the end
// before answering; until then every op returns ErrApplyPending).
func StageFinalize(ctx context.Context, tx udb.Transaction, in StageFinalizeInput) (StageFinalizeOutput, error) {
	if in.NewDbSizePages > MaxDbSizePages {
		return StageFinalizeOutput{}, errTooLarge("database size %d pages", in.NewDbSizePages)
	}
	aid := in.Fence.ActorID
	m, err := openStage(ctx, tx, in.Fence, in.Txid)
	if err != nil {
		return StageFinalizeOutput{}, err
	}
	if in.Txid != m.HeadTxid+1 {
		return StageFinalizeOutput{}, errHeadMismatch(m.HeadTxid, in.Txid-1)
	}
	want := slices.Clone(in.SegmentFirstPgnos)
	slices.Sort(want)
	if len(slices.Compact(slices.Clone(want))) != len(want) {
		return StageFinalizeOutput{}, errInvalid("a segment is listed twice")
	}
	begin, end := keys.SQLiteSegmentsRange(aid, m.Stage.ID)
	kvs, err := tx.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return StageFinalizeOutput{}, err
	}
	have := make([]uint32, 0, len(kvs))
	for _, kv := range kvs {
		first, err := keys.UnpackSQLiteSegmentFirst(aid, m.Stage.ID, kv.Key)
		if err != nil {
			return StageFinalizeOutput{}, corrupt.Mark("sqlite", err)
		}
		have = append(have, first)
	}
	for _, w := range want {
		if _, ok := slices.BinarySearch(have, w); !ok {
			return StageFinalizeOutput{}, errInvalid("segment at page %d was not staged", w)
		}
	}
	for _, h := range have {
		if _, ok := slices.BinarySearch(want, h); !ok {
			return StageFinalizeOutput{}, errInvalid("segment at page %d was staged but is not listed", h)
		}
	}
	if in.NewDbSizePages < m.DbSizePages {
		tx.ClearRange(keys.SQLitePagesFrom(aid, in.NewDbSizePages+1))
	}
	keys.Clear(tx, keys.SQLiteStageIdxKey{BeginMs: m.Stage.BeginMs, ActorID: aid})
	m.Apply, m.Stage = m.Stage, nil
	m.HeadTxid = in.Txid
	m.DbSizePages = in.NewDbSizePages
	m.UpdateMs = in.NowMs
	keys.Set(tx, keys.SQLiteMetaKey{ActorID: aid}, m)
	return StageFinalizeOutput{HeadTxid: m.HeadTxid}, nil
}

// ApplyBatch moves up to one batch of the finalized stage's pages into place; done is true
// once nothing is left (the stage is then cleared and the head no longer marked). Pages past
// the database size are dropped instead. No fence: the commit already happened.
func ApplyBatch(ctx context.Context, tx udb.Transaction, aid id.ID) (done bool, err error) {
	m, err := loadMeta(ctx, tx, aid)
	if err != nil || m.Apply == nil {
		return true, err
	}
	prefix := keys.SQLiteStagePagesPrefix(aid, m.Apply.ID)
	begin, end := prefixRangeOf(prefix)
	kvs, err := tx.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Limit: applyBatchRows, Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return false, err
	}
	if len(kvs) == 0 {
		tx.ClearRange(keys.SQLiteStageRange(aid, m.Apply.ID))
		m.Apply = nil
		keys.Set(tx, keys.SQLiteMetaKey{ActorID: aid}, m)
		return true, nil
	}
	rows := make([]keys.SQLitePageRow, len(kvs))
	for i, kv := range kvs {
		if rows[i], err = keys.ParseSQLitePageRow(prefix, kv.Key); err != nil {
			return false, corrupt.Mark("sqlite", err)
		}
	}
	if len(kvs) == applyBatchRows {
		// The batch may end inside a page: leave that page to the next batch. A page has
		// at most 7 chunks, so the batch keeps most of its rows.
		lastPg := rows[len(rows)-1].Pgno
		for len(rows) > 0 && rows[len(rows)-1].Pgno == lastPg {
			rows, kvs = rows[:len(rows)-1], kvs[:len(kvs)-1]
		}
	}
	for i := 0; i < len(rows); {
		j := i
		var page []byte
		for j < len(rows) && rows[j].Pgno == rows[i].Pgno {
			page = append(page, kvs[j].Value...)
			j++
		}
		pg := rows[i].Pgno
		if pg <= m.DbSizePages {
			b, e := keys.SQLitePageRange(aid, pg, pg)
			writePage(tx, func(c int) []byte { return keys.SQLitePageChunkKey(aid, pg, c) }, b, e, page)
		}
		i = j
	}
	tx.ClearRange(begin, append(bytes.Clone(kvs[len(kvs)-1].Key), 0x00))
	return false, nil
}
