package sqlite

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// Store runs the page store's ops against a database, each in its own named transaction,
// and finishes a finalized staged commit (ApplyBatch, one transaction per batch) wherever an
// op finds one. It is the one place of this package that opens transactions: a staged
// commit spans several by design.
type Store struct {
	DB udb.Database
	// NowMs is the clock; nil means the wall clock.
	NowMs func() int64
}

func (s *Store) now() int64 {
	if s.NowMs != nil {
		return s.NowMs()
	}
	return time.Now().UnixMilli()
}

// retryApply runs op, finishing a pending apply of the actor and running op again as often
// as it asks for that.
func retryApply[T any](ctx context.Context, s *Store, aid id.ID, op func() (T, error)) (T, error) {
	for {
		out, err := op()
		if !errors.Is(err, ErrApplyPending) {
			return out, err
		}
		if err := s.Apply(ctx, aid); err != nil {
			var zero T
			return zero, err
		}
	}
}

// GetPages reads pages (GetPages) in a read-only transaction.
func (s *Store) GetPages(ctx context.Context, in GetPagesInput) (GetPagesOutput, error) {
	return retryApply(ctx, s, in.Fence.ActorID, func() (GetPagesOutput, error) {
		return udb.ReadTransact(ctx, s.DB, func(r udb.ReadTransaction) (GetPagesOutput, error) {
			return GetPages(ctx, r, in)
		})
	})
}

// Commit writes a single commit (Commit).
func (s *Store) Commit(ctx context.Context, in CommitInput) (CommitOutput, error) {
	return retryApply(ctx, s, in.Fence.ActorID, func() (CommitOutput, error) {
		return udb.Transact(ctx, s.DB, func(tx udb.Transaction) (CommitOutput, error) { return Commit(ctx, tx, in) })
	})
}

// StageBegin opens a staged commit under a fresh stage id (StageBegin), then sweeps a few
// abandoned stages of any actor, best effort.
func (s *Store) StageBegin(ctx context.Context, f Fence, expectedHead *uint64) (StageBeginOutput, error) {
	in := StageBeginInput{Fence: f, ExpectedHead: expectedHead, StageID: make([]byte, 16), NowMs: s.now()}
	_, _ = rand.Read(in.StageID) // never fails (crypto/rand)
	out, err := retryApply(ctx, s, f.ActorID, func() (StageBeginOutput, error) {
		return udb.Transact(ctx, s.DB, func(tx udb.Transaction) (StageBeginOutput, error) { return StageBegin(ctx, tx, in) })
	})
	if err == nil {
		_, _ = s.Sweep(ctx, 8)
	}
	return out, err
}

// StageSegment stages one segment (StageSegment).
func (s *Store) StageSegment(ctx context.Context, in StageSegmentInput) (StageSegmentOutput, error) {
	return retryApply(ctx, s, in.Fence.ActorID, func() (StageSegmentOutput, error) {
		return udb.Transact(ctx, s.DB, func(tx udb.Transaction) (StageSegmentOutput, error) { return StageSegment(ctx, tx, in) })
	})
}

// StageFinalize publishes a staged commit (StageFinalize) and moves its pages into place
// before returning.
func (s *Store) StageFinalize(ctx context.Context, in StageFinalizeInput) (StageFinalizeOutput, error) {
	out, err := retryApply(ctx, s, in.Fence.ActorID, func() (StageFinalizeOutput, error) {
		return udb.Transact(ctx, s.DB, func(tx udb.Transaction) (StageFinalizeOutput, error) { return StageFinalize(ctx, tx, in) })
	})
	if err != nil {
		return out, err
	}
	return out, s.Apply(ctx, in.Fence.ActorID)
}

// Apply runs ApplyBatch until the actor has no finalized stage left to move.
func (s *Store) Apply(ctx context.Context, aid id.ID) error {
	for {
		done, err := udb.Transact(ctx, s.DB, func(tx udb.Transaction) (bool, error) { return ApplyBatch(ctx, tx, aid) })
		if err != nil || done {
			return err
		}
	}
}

// Sweep discards up to limit staged commits older than StageMaxAge (Sweep).
func (s *Store) Sweep(ctx context.Context, limit int) (int, error) {
	before := s.now() - StageMaxAge.Milliseconds()
	return udb.Transact(ctx, s.DB, func(tx udb.Transaction) (int, error) {
		return Sweep(ctx, tx, SweepInput{BeforeMs: before, Limit: limit})
	})
}
