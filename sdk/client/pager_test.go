package client_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/berthhq/berth/sdk/client"
)

// pagesOf serves items in pages of size, with the offset as the cursor; lastCursor is what the
// last page carries as its cursor ("" for null).
func pagesOf(items []int, size int, lastCursor string, calls *[]string) client.Fetch[int] {
	return func(ctx context.Context, cursor string) (client.Page[int], error) {
		*calls = append(*calls, cursor)
		from := 0
		if cursor != "" {
			var err error
			if from, err = strconv.Atoi(cursor); err != nil {
				return client.Page[int]{}, err
			}
		}
		from = min(from, len(items))
		to := min(from+size, len(items))
		p := client.Page[int]{Items: items[from:to], Next: strconv.Itoa(to)}
		switch {
		case from == to:
			p.Next = "" // an empty page never has a cursor
		case to == len(items):
			p.Next = lastCursor
		}
		return p, nil
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func TestPagerNullCursor(t *testing.T) {
	var calls []string
	got, err := client.Collect(client.All(context.Background(), "", pagesOf(seq(7), 3, "", &calls)))
	if err != nil || fmt.Sprint(got) != fmt.Sprint(seq(7)) {
		t.Fatalf("%v, %v", got, err)
	}
	if fmt.Sprint(calls) != "[ 3 6]" {
		t.Errorf("fetched %q", calls)
	}
}

// The Rivet engine puts a cursor on every non-empty page and ends with an empty page.
func TestPagerEndsOnEmptyPage(t *testing.T) {
	var calls []string
	got, err := client.Collect(client.All(context.Background(), "", pagesOf(seq(6), 3, "6", &calls)))
	if err != nil || len(got) != 6 {
		t.Fatalf("%v, %v", got, err)
	}
	if fmt.Sprint(calls) != "[ 3 6]" {
		t.Errorf("fetched %q", calls)
	}
}

func TestPagerStartCursor(t *testing.T) {
	var calls []string
	got, _ := client.Collect(client.All(context.Background(), "4", pagesOf(seq(7), 3, "", &calls)))
	if fmt.Sprint(got) != "[4 5 6]" {
		t.Errorf("got %v", got)
	}
}

func TestPagerStopsEarly(t *testing.T) {
	var calls []string
	for i, err := range client.All(context.Background(), "", pagesOf(seq(100), 10, "", &calls)) {
		if err != nil {
			t.Fatal(err)
		}
		if i == 12 {
			break
		}
	}
	if len(calls) != 2 {
		t.Errorf("fetched %d pages after breaking on the second, want 2", len(calls))
	}
}

func TestPagerPages(t *testing.T) {
	var calls []string
	var sizes []int
	for p, err := range client.Pages(context.Background(), "", pagesOf(seq(25), 10, "", &calls)) {
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(p.Items))
	}
	if fmt.Sprint(sizes) != "[10 10 5]" {
		t.Errorf("pages %v", sizes)
	}
}

func TestPagerError(t *testing.T) {
	boom := errors.New("boom")
	n := 0
	fetch := func(ctx context.Context, cursor string) (client.Page[int], error) {
		n++
		if n == 3 {
			return client.Page[int]{}, boom
		}
		return client.Page[int]{Items: []int{n}, Next: strconv.Itoa(n)}, nil
	}
	var got []int
	var errs []error
	for v, err := range client.All(context.Background(), "", fetch) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		got = append(got, v)
	}
	if fmt.Sprint(got) != "[1 2]" || len(errs) != 1 || !errors.Is(errs[0], boom) {
		t.Errorf("got %v, errors %v", got, errs)
	}
}

func TestPagerStuckCursor(t *testing.T) {
	fetch := func(ctx context.Context, cursor string) (client.Page[int], error) {
		return client.Page[int]{Items: []int{1}, Next: "same"}, nil
	}
	got, err := client.Collect(client.All(context.Background(), "", fetch))
	if err == nil || !strings.Contains(err.Error(), "cursor") || len(got) != 1 {
		t.Errorf("got %v, %v; want one item, then an error about the cursor", got, err)
	}
}
