// Package page holds what every paged list op shares: the limit check and
// the cut of an over-fetched page into a page and its cursor.
package page

import (
	"strconv"

	"github.com/berthhq/berth/pkg/rerr"
)

// MaxLimit is the largest page any list serves.
const MaxLimit = 10_000

// Limit checks a requested page size: 0 takes def, otherwise it must lie in
// 1..MaxLimit, else a bad request naming "limit".
func Limit(limit, def int) (int, error) {
	switch {
	case limit == 0:
		return def, nil
	case limit < 0 || limit > MaxLimit:
		return 0, rerr.BadRequest("limit", "must be between 1 and "+strconv.Itoa(MaxLimit))
	}
	return limit, nil
}

// Trim cuts items, fetched with one more than limit to learn whether more
// remain, to limit. When more remain it also returns the cursor of the last
// item kept; on the last page the cursor is nil.
func Trim[T any](items []T, limit int, cursorOf func(T) string) ([]T, *string) {
	if len(items) <= limit {
		return items, nil
	}
	c := cursorOf(items[limit-1])
	return items[:limit], &c
}
