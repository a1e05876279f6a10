package sqlite

import (
	"context"
	"errors"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// ErrApplyPending is returned by the transaction ops when a finalized staged commit is still
// being moved into place: the caller runs ApplyBatch until it is done and tries again
// (Store does).
var ErrApplyPending = errors.New("sqlite: a finalized staged commit is still being applied")

// loadMeta reads the actor's head serializably: every write fences on it, so two writers
// of one actor (which the fence makes impossible, but a bug or a stale retry could try)
// conflict instead of interleaving.
func loadMeta(ctx context.Context, r udb.ReadTransaction, aid id.ID) (keys.SQLiteMeta, error) {
	m, _, err := keys.Get(ctx, r, keys.SQLiteMetaKey{ActorID: aid})
	if err != nil {
		return m, corrupt.Mark("sqlite", err)
	}
	return m, nil
}

// Head is an actor database's head as stored.
type Head struct {
	HeadTxid    uint64
	DbSizePages uint32
}

// ReadHead returns the actor's head without a fence (for inspection and tests).
func ReadHead(ctx context.Context, r udb.ReadTransaction, aid id.ID) (Head, error) {
	m, err := loadMeta(ctx, r, aid)
	return Head{HeadTxid: m.HeadTxid, DbSizePages: m.DbSizePages}, err
}

// discardStage clears the open stage of m, if any, and its index entry.
func discardStage(tx udb.Transaction, aid id.ID, m *keys.SQLiteMeta) {
	if m.Stage == nil {
		return
	}
	tx.ClearRange(keys.SQLiteStageRange(aid, m.Stage.ID))
	keys.Clear(tx, keys.SQLiteStageIdxKey{BeginMs: m.Stage.BeginMs, ActorID: aid})
	m.Stage = nil
}

// writePage replaces page pgno's rows under prefix (the pages or a stage's) with b, in
// chunks of keys.ChunkSize.
func writePage(tx udb.Transaction, chunkKey func(chunk int) []byte, clearBegin, clearEnd []byte, b []byte) {
	tx.ClearRange(clearBegin, clearEnd)
	for i := 0; i*keys.ChunkSize < len(b); i++ {
		tx.Set(chunkKey(i), b[i*keys.ChunkSize:min((i+1)*keys.ChunkSize, len(b))])
	}
}

// DropAll clears the actor's whole database (its pages, head and stages): for an actor
// destroyed for good.
func DropAll(ctx context.Context, tx udb.Transaction, aid id.ID) error {
	m, err := loadMeta(ctx, tx, aid)
	if err != nil {
		return err
	}
	discardStage(tx, aid, &m)
	if m.Apply != nil {
		keys.Clear(tx, keys.SQLiteStageIdxKey{BeginMs: m.Apply.BeginMs, ActorID: aid})
	}
	tx.ClearRange(keys.ActorSQLiteRange(aid))
	return nil
}
