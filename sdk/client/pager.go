package client

import (
	"context"
	"fmt"
	"iter"
)

// Page is one page of a list.
type Page[T any] struct {
	Items []T
	// Next is the cursor of the following page, "" on the last one. Pass it as the Cursor of
	// the next call.
	Next string
}

// Fetch gets the page that starts at cursor ("" for the first page).
type Fetch[T any] func(ctx context.Context, cursor string) (Page[T], error)

// Pages iterates over the pages of a list, starting at cursor start ("" for the first page)
// and following each page's cursor. It stops after a page without a next cursor or without
// items (the Rivet engine ends a list with an empty page rather than a null cursor), and with
// an error when a fetch fails or a non-empty page hands back the cursor it was fetched with
// (the list would never end). An error is yielded once, as the last value.
func Pages[T any](ctx context.Context, start string, fetch Fetch[T]) iter.Seq2[Page[T], error] {
	return func(yield func(Page[T], error) bool) {
		cursor := start
		for {
			p, err := fetch(ctx, cursor)
			if err != nil {
				yield(Page[T]{}, err)
				return
			}
			if len(p.Items) > 0 && p.Next != "" && p.Next == cursor {
				yield(Page[T]{}, fmt.Errorf("berth client: the server returned the cursor %q it was given; stopping", cursor))
				return
			}
			if !yield(p, nil) || p.Next == "" || len(p.Items) == 0 {
				return
			}
			cursor = p.Next
		}
	}
}

// All iterates over every item of a list, page by page, as Pages does. On an error it yields
// the zero T and the error, then stops.
func All[T any](ctx context.Context, start string, fetch Fetch[T]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for p, err := range Pages(ctx, start, fetch) {
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range p.Items {
				if !yield(item, nil) {
					return
				}
			}
		}
	}
}

// Collect gathers every item of seq, stopping at the first error.
func Collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for item, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, item)
	}
	return out, nil
}

// next turns a response cursor into Page.Next.
func next(cursor *string) string {
	if cursor == nil {
		return ""
	}
	return *cursor
}
