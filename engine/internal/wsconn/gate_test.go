package wsconn

import (
	"slices"
	"testing"
)

// Commands sent before Open wait; Open writes the replay first, then the held commands it
// does not carry; later commands go at once, but for those the replay carried (committed
// before the replay was read, sent live after it).
func TestCommandGate(t *testing.T) {
	var wrote [][]int
	g := CommandGate[int, int]{Key: func(c int) int { return c / 10 }, Write: func(c []int) { wrote = append(wrote, slices.Clone(c)) }}
	g.Send([]int{10, 20})
	g.Send([]int{30})
	if len(wrote) != 0 {
		t.Fatalf("wrote %v before Open", wrote)
	}
	g.Open([]int{11, 25, 50}) // 11 and 25 have the keys of 10 and 20
	g.Send([]int{40})
	g.Send([]int{50, 60}) // 50 was replayed
	g.Send([]int{50})     // once only: another command of that key goes out
	g.Open(nil)           // a second Open writes nothing
	if want := [][]int{{11, 25, 50, 30}, {40}, {60}, {50}}; !slices.EqualFunc(wrote, want, slices.Equal[[]int]) {
		t.Fatalf("wrote %v, want %v", wrote, want)
	}
}
