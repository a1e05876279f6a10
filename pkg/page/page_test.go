package page

import (
	"strconv"
	"testing"

	"github.com/berthhq/berth/pkg/rerr"
)

func TestLimit(t *testing.T) {
	for _, c := range []struct{ in, want int }{{0, 100}, {1, 1}, {MaxLimit, MaxLimit}, {MaxLimit + 1, MaxLimit}, {1 << 40, MaxLimit}} {
		if got, err := Limit(c.in, 100); err != nil || got != c.want {
			t.Errorf("Limit(%d) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	_, err := Limit(-1, 100)
	if !rerr.Is(err, rerr.CodeAPIBadRequest) {
		t.Errorf("Limit(-1) = %v, want api.bad_request", err)
	}
}

func TestCursor(t *testing.T) {
	name := func(i int) string { return strconv.Itoa(i) }
	if c := Cursor([]int{1, 2}, name); c == nil || *c != "2" {
		t.Fatalf("a page with items: cursor %v, want its last item's", c)
	}
	if c := Cursor([]int{}, name); c != nil {
		t.Fatalf("an empty page: cursor %q, want nil", *c)
	}
}
