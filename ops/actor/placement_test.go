package actor

import (
	"slices"
	"testing"

	oprunner "github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/id"
)

func TestPlacementOrder(t *testing.T) {
	r := func(millis uint32, ping int64) oprunner.Candidate {
		return oprunner.Candidate{RunnerID: id.New(1), RemainingMillislots: millis, LastPingTs: ping}
	}
	cands := []oprunner.Candidate{r(500, 9), r(1000, 1), r(950, 5), r(1000, 3)}
	nowhere := func(id.ID) bool { return false }
	// Without randomness: most free slots first, then the freshest ping.
	if got := placementOrder(cands, func(int64) int64 { return 0 }, nowhere); !slices.Equal(got, []int{3, 1, 2, 0}) {
		t.Fatalf("order %v, want [3 1 2 0]", got)
	}
	// The first is drawn among those within 10% of the best (1000, 1000, 950), never the 500.
	var tiers []int64
	for pick := range int64(3) {
		got := placementOrder(cands, func(n int64) int64 { tiers = append(tiers, n); return pick }, nowhere)
		if got[0] == 0 || len(got) != 4 {
			t.Fatalf("pick %d: order %v", pick, got)
		}
	}
	if !slices.Equal(tiers, []int64{3, 3, 3}) {
		t.Fatalf("drawn among %v, want 3 each time", tiers)
	}
	if got := placementOrder(cands[:1], func(int64) int64 { t.Fatal("drew for one candidate"); return 0 }, nowhere); !slices.Equal(got, []int{0}) {
		t.Fatalf("one candidate: %v", got)
	}
	// With runners held on this node in the tier, the first is drawn among those only: the
	// 950 here; the 500 is held here too but is not in the tier.
	here := func(rid id.ID) bool { return rid == cands[2].RunnerID || rid == cands[0].RunnerID }
	tiers = nil
	got := placementOrder(cands, func(n int64) int64 { tiers = append(tiers, n); return n - 1 }, here)
	if got[0] != 2 || !slices.Equal(tiers, []int64{1}) {
		t.Fatalf("held here: order %v drawn among %v, want 2 first, drawn among 1", got, tiers)
	}
	slices.Sort(got)
	if !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("held here: order is not a permutation: %v", got)
	}
}
