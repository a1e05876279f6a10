package page

import (
	"strconv"
	"testing"

	"github.com/berthhq/berth/pkg/rerr"
)

func TestLimit(t *testing.T) {
	for _, c := range []struct{ in, want int }{{0, 100}, {1, 1}, {MaxLimit, MaxLimit}} {
		if got, err := Limit(c.in, 100); err != nil || got != c.want {
			t.Errorf("Limit(%d) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []int{-1, MaxLimit + 1} {
		_, err := Limit(bad, 100)
		if e, ok := rerr.As(err); !ok || e.Code != "bad_request" {
			t.Errorf("Limit(%d) = %v, want api.bad_request", bad, err)
		}
	}
}

func TestTrim(t *testing.T) {
	name := func(i int) string { return strconv.Itoa(i) }
	got, c := Trim([]int{1, 2, 3}, 2, name)
	if len(got) != 2 || c == nil || *c != "2" {
		t.Fatalf("over-fetched page: %v %v", got, c)
	}
	got, c = Trim([]int{1, 2}, 2, name)
	if len(got) != 2 || c != nil {
		t.Fatalf("last page: %v %v", got, c)
	}
}
