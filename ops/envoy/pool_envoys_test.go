package envoy

import (
	"slices"
	"testing"

	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// ListBelowVersion lists a pool's placeable envoys older than a version (all for 0), not
// another pool's, not a drained one.
func TestListBelowVersion(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	for _, e := range []struct {
		key, pool string
		version   uint32
	}{{"aa1", "p", 1}, {"bb1", "p", 1}, {"cc2", "p", 2}, {"dd3", "p", 3}, {"xx1", "other", 1}, {"gone1", "p", 1}} {
		in := input(ns, e.key, e.pool, 1000)
		in.Version = e.version
		register(t, db, in)
	}
	if _, err := drain(db, DrainInput{Namespace: ns, EnvoyKey: "gone1", NowMs: 2000}); err != nil {
		t.Fatal(err)
	}
	for version, want := range map[uint32][]string{0: {"aa1", "bb1", "cc2", "dd3"}, 1: nil, 2: {"aa1", "bb1"}, 3: {"aa1", "bb1", "cc2"}, 9: {"aa1", "bb1", "cc2", "dd3"}} {
		got := opstest.Read(t, db, func(r udb.ReadTransaction) ([]string, error) { return ListBelowVersion(ctx, r, ns, "p", version) })
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("below %d: %v, want %v", version, got, want)
		}
	}
}
