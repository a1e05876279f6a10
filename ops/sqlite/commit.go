package sqlite

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/udb"
)

// CommitInput writes dirty pages and the new size in one transaction.
type CommitInput struct {
	Fence       Fence
	Pages       []Page
	DbSizePages uint32
	NowMs       int64
	// ExpectedHead, when set, must be the head transaction id.
	ExpectedHead *uint64
}

// CommitOutput is the new head.
type CommitOutput struct{ HeadTxid uint64 }

// Commit writes the pages and the size and advances the head by one, atomically. Pages
// past the new size are dropped (a shrinking database truncates). A staged commit still
// open is discarded: it was begun for the transaction id this commit takes. Retry-safe: the
// body has no effect outside tx.
func Commit(ctx context.Context, tx udb.Transaction, in CommitInput) (CommitOutput, error) {
	if _, err := checkPages(in.Pages, MaxCommitBytes, "a single commit (use a staged commit)"); err != nil {
		return CommitOutput{}, err
	}
	if in.DbSizePages > MaxDbSizePages {
		return CommitOutput{}, errTooLarge("database size %d pages", in.DbSizePages)
	}
	if _, err := checkFence(ctx, tx, in.Fence, false); err != nil {
		return CommitOutput{}, err
	}
	return commitPages(ctx, tx, in)
}

// commitPages is Commit after the fence (the offline writer checks its own).
func commitPages(ctx context.Context, tx udb.Transaction, in CommitInput) (CommitOutput, error) {
	aid := in.Fence.ActorID
	m, err := loadMeta(ctx, tx, aid)
	if err != nil {
		return CommitOutput{}, err
	}
	if m.Apply != nil {
		return CommitOutput{}, ErrApplyPending
	}
	if in.ExpectedHead != nil && *in.ExpectedHead != m.HeadTxid {
		return CommitOutput{}, errHeadMismatch(m.HeadTxid, *in.ExpectedHead)
	}
	discardStage(tx, aid, &m)
	for _, p := range in.Pages {
		if p.Pgno > in.DbSizePages {
			continue
		}
		begin, end := keys.SQLitePageRange(aid, p.Pgno, p.Pgno)
		writePage(tx, func(c int) []byte { return keys.SQLitePageChunkKey(aid, p.Pgno, c) }, begin, end, p.Bytes)
	}
	if in.DbSizePages < m.DbSizePages {
		tx.ClearRange(keys.SQLitePagesFrom(aid, in.DbSizePages+1))
	}
	m.HeadTxid++
	m.DbSizePages = in.DbSizePages
	m.UpdateMs = in.NowMs
	keys.Set(tx, keys.SQLiteMetaKey{ActorID: aid}, m)
	return CommitOutput{HeadTxid: m.HeadTxid}, nil
}
