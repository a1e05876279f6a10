// Package page holds what every paged list shares: the limit check and
// the cursor of a page.
package page

import (
	"github.com/berthhq/berth/pkg/rerr"
)

// MaxLimit is the largest page any list serves: a larger limit is served as
// MaxLimit (the Rivet engine has no bound; a client paging on by cursor sees
// no difference).
const MaxLimit = 10_000

// Limit checks a requested page size: 0 takes def, a negative one is a bad
// request naming "limit", one over MaxLimit is MaxLimit.
func Limit(limit, def int) (int, error) {
	switch {
	case limit == 0:
		return def, nil
	case limit < 0:
		return 0, rerr.BadRequest("limit", "must not be negative")
	}
	return min(limit, MaxLimit), nil
}

// Cursor is a page's cursor, as the Rivet engine gives it: the cursor of
// the page's last item on every page that has items (even the last), nil on
// an empty page. A client pages until it gets an empty page.
func Cursor[T any](items []T, cursorOf func(T) string) *string {
	if len(items) == 0 {
		return nil
	}
	c := cursorOf(items[len(items)-1])
	return &c
}
