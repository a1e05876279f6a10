package sqlite

import (
	"fmt"
	"time"

	"github.com/berthhq/berth/pkg/rerr"
)

// Limits. A single commit and a staged segment are each written in one transaction, so
// their payload stays well under the store's 10 MB transaction limit (pages are also split
// into 10,000-byte chunks, under its 100 KB value limit); a commit larger than
// MaxCommitBytes must be staged.
const (
	// MaxPageSize is SQLite's largest page size.
	MaxPageSize = 65536
	// MaxCommitBytes bounds the page bytes of one SqliteCommit.
	MaxCommitBytes = 8 << 20
	// MaxSegmentBytes bounds the page bytes of one staged segment.
	MaxSegmentBytes = 8 << 20
	// MaxStageBytes bounds the page bytes of one staged commit.
	MaxStageBytes = 4 << 30
	// MaxGetPages bounds the page numbers of one SqliteGetPages, and MaxGetPagesBytes the
	// bytes it returns (the envoy's frame limit is 20 MiB).
	MaxGetPages      = 4096
	MaxGetPagesBytes = 16 << 20
	// MaxDbSizePages bounds the database size in pages (SQLite's own limit is 2^32-2).
	MaxDbSizePages = 1<<32 - 2
	// StageMaxAge is how long a staged commit may stay open; older ones are abandoned
	// and swept (Store.Sweep).
	StageMaxAge = 10 * time.Minute
	// applyBatchRows bounds the page chunks one apply transaction moves (≤ 5 MB).
	applyBatchRows = 512
)

func errInvalid(format string, args ...any) error {
	return rerr.SQLiteInvalidRequest(fmt.Sprintf(format, args...))
}

func errTooLarge(format string, args ...any) error {
	return rerr.SQLiteTooLarge(fmt.Sprintf(format, args...))
}

func errStageNotFound(txid uint64, format string, args ...any) error {
	return rerr.SQLiteStageNotFound(txid, fmt.Sprintf(format, args...))
}

func errHeadMismatch(head, expected uint64) error {
	return rerr.SQLiteHeadMismatch(head, expected)
}

// Page is one page: Bytes is nil for a page that does not exist (GetPages only).
type Page struct {
	Pgno  uint32
	Bytes []byte
}

// checkPages validates the pages of a commit or segment and returns their total size. Page
// numbers start at 1, a page holds 1 to MaxPageSize bytes, and no page is given twice.
func checkPages(pages []Page, maxBytes int, what string) (int, error) {
	total := 0
	seen := make(map[uint32]struct{}, len(pages))
	for _, p := range pages {
		switch {
		case p.Pgno == 0:
			return 0, errInvalid("page number 0 (pages are numbered from 1)")
		case len(p.Bytes) == 0:
			return 0, errInvalid("page %d is empty", p.Pgno)
		case len(p.Bytes) > MaxPageSize:
			return 0, errTooLarge("page %d is %d bytes, more than %d", p.Pgno, len(p.Bytes), MaxPageSize)
		}
		if _, dup := seen[p.Pgno]; dup {
			return 0, errInvalid("page %d is given twice", p.Pgno)
		}
		seen[p.Pgno] = struct{}{}
		total += len(p.Bytes)
		if total > maxBytes {
			return 0, errTooLarge("%s holds more than %d bytes of pages", what, maxBytes)
		}
	}
	return total, nil
}
