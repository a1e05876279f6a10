package sqlite

import (
	"context"
	"slices"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// GetPagesInput asks for pages of the fenced actor's database.
type GetPagesInput struct {
	Fence Fence
	Pgnos []uint32
	// ExpectedHead, when set, must be the head transaction id.
	ExpectedHead *uint64
}

// GetPagesOutput holds one Page per requested page number, in the request's order (a
// number asked twice is answered twice). A page that was never written, page 0 and pages
// past the database size have nil Bytes, as the schema's optional<data> says.
type GetPagesOutput struct {
	Pages    []Page
	HeadTxid uint64
}

// GetPages reads pages. Meant for a read-only transaction: the fence and the pages are
// read at one version, so the pages are those of one head. Consecutive page numbers are
// read as one range.
func GetPages(ctx context.Context, r udb.ReadTransaction, in GetPagesInput) (GetPagesOutput, error) {
	if len(in.Pgnos) > MaxGetPages {
		return GetPagesOutput{}, errTooLarge("%d pages asked for, at most %d per request", len(in.Pgnos), MaxGetPages)
	}
	if _, err := checkFence(ctx, r, in.Fence, false); err != nil {
		return GetPagesOutput{}, err
	}
	aid := in.Fence.ActorID
	m, err := loadMeta(ctx, r, aid)
	if err != nil {
		return GetPagesOutput{}, err
	}
	if m.Apply != nil {
		return GetPagesOutput{}, ErrApplyPending
	}
	if in.ExpectedHead != nil && *in.ExpectedHead != m.HeadTxid {
		return GetPagesOutput{}, errHeadMismatch(m.HeadTxid, *in.ExpectedHead)
	}
	want := make([]uint32, 0, len(in.Pgnos))
	for _, p := range in.Pgnos {
		if p >= 1 && p <= m.DbSizePages {
			want = append(want, p)
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	got := make(map[uint32][]byte, len(want))
	total := 0
	prefix := keys.SQLitePagesPrefix(aid)
	for i := 0; i < len(want); {
		j := i + 1
		for j < len(want) && want[j] == want[j-1]+1 {
			j++
		}
		begin, end := keys.SQLitePageRange(aid, want[i], want[j-1])
		it := r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Mode: udb.StreamingModeWantAll})
		for it.Next(ctx) {
			kv := it.KeyValue()
			row, err := keys.ParseSQLitePageRow(prefix, kv.Key)
			if err != nil {
				return GetPagesOutput{}, corrupt.Mark("sqlite", err)
			}
			cur := got[row.Pgno]
			if row.Chunk*keys.ChunkSize != len(cur) {
				return GetPagesOutput{}, rerr.Corrupt("sqlite", "page %d: chunk %d out of order", row.Pgno, row.Chunk)
			}
			total += len(kv.Value)
			if total > MaxGetPagesBytes {
				return GetPagesOutput{}, errTooLarge("the pages asked for hold more than %d bytes", MaxGetPagesBytes)
			}
			got[row.Pgno] = append(cur, kv.Value...)
		}
		if err := it.Err(); err != nil {
			return GetPagesOutput{}, err
		}
		i = j
	}
	out := GetPagesOutput{Pages: make([]Page, len(in.Pgnos)), HeadTxid: m.HeadTxid}
	for i, p := range in.Pgnos {
		out.Pages[i] = Page{Pgno: p, Bytes: got[p]}
	}
	return out, nil
}
