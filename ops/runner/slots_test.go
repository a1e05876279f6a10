package runner

import (
	"fmt"
	"slices"
	"testing"

	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// ListCandidates reads the allocation index in pages: runners pinged before the threshold
// are skipped across page boundaries, and the list ends at the first runner of an older
// version, whatever the limit.
func TestListCandidatesSkipsStaleRunners(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	reg := func(key string, version uint32, now int64) {
		in := input(ns, "pool", key, now)
		in.Version = version
		register(t, db, in)
	}
	// Pinged at 1000, the stale runners come first in the index (same share, older ping).
	for i := range 9 {
		reg(fmt.Sprint("stale", i), 2, 1000)
	}
	for i := range 3 {
		reg(fmt.Sprint("fresh", i), 2, 5000)
	}
	reg("older", 1, 6000)

	var fresh []id.ID
	for _, e := range allocEntries(t, db, ns, "pool") {
		if e.Version == 2 && e.LastPingTs >= 2000 {
			fresh = append(fresh, e.RunnerID)
		}
	}
	if len(fresh) != 3 {
		t.Fatalf("%d fresh runners in the index, want 3", len(fresh))
	}
	for _, limit := range []int{1, 2, 3, 10} {
		got := opstest.Read(t, db, func(r udb.ReadTransaction) ([]Candidate, error) {
			return ListCandidates(ctx, r, ns, "pool", 2000, limit)
		})
		var ids []id.ID
		for _, c := range got {
			ids = append(ids, c.RunnerID)
		}
		if want := fresh[:min(limit, len(fresh))]; !slices.Equal(ids, want) {
			t.Errorf("limit %d: candidates %v, want %v", limit, ids, want)
		}
	}
}
