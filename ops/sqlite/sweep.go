package sqlite

import (
	"bytes"
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/udb"
)

// SweepInput bounds one sweep of abandoned stages.
type SweepInput struct {
	// BeforeMs: stages begun before it are abandoned (now - StageMaxAge).
	BeforeMs int64
	Limit    int
}

// Sweep discards up to Limit staged commits begun before BeforeMs and never finalized, oldest
// first, and reports how many index entries it cleared. Each actor's head is read
// serializably, so a segment or finalize racing the sweep makes one of them retry.
func Sweep(ctx context.Context, tx udb.Transaction, in SweepInput) (int, error) {
	begin, end := keys.SQLiteStageIdxBefore(in.BeforeMs)
	kvs, err := tx.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Limit: in.Limit}).All(ctx)
	if err != nil {
		return 0, err
	}
	for _, kv := range kvs {
		k, err := keys.UnpackSQLiteStageIdxKey(kv.Key)
		if err != nil {
			return 0, corrupt.Mark("sqlite", err)
		}
		m, err := loadMeta(ctx, tx, k.ActorID)
		if err != nil {
			return 0, err
		}
		tx.Clear(kv.Key)
		if m.Stage != nil && m.Stage.BeginMs == k.BeginMs && bytes.Equal(m.Stage.ID, kv.Value) {
			discardStage(tx, k.ActorID, &m)
			keys.Set(tx, keys.SQLiteMetaKey{ActorID: k.ActorID}, m)
		}
	}
	return len(kvs), nil
}
