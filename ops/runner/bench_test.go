package runner

import (
	"fmt"
	"testing"

	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// BenchmarkListForNs100 is GET /runners?limit=100 in one datacenter with
// 10,000 runners: one page of ListForNs.
func BenchmarkListForNs100(b *testing.B) {
	db := opstest.Open(b)
	ns := id.New(1)
	const n, batch = 10_000, 500
	for i := 0; i < n; i += batch {
		opstest.Write(b, db, func(tx udb.Transaction) (any, error) {
			for j := i; j < i+batch; j++ {
				in := input(ns, "pool", fmt.Sprintf("k%d", j), int64(1_000+j/100))
				if _, err := Register(ctx, tx, in); err != nil {
					return nil, err
				}
			}
			return nil, nil
		})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		out, err := opstest.Transact(db, func(tx udb.Transaction) (ListForNsOutput, error) {
			return ListForNs(ctx, tx, ListForNsInput{Namespace: ns, Limit: 100, Datacenter: dc})
		})
		if err != nil || len(out.Runners) != 100 {
			b.Fatal(len(out.Runners), err)
		}
	}
}

// BenchmarkListCandidates16 is a create's choice of runners: 16 candidates of a pool of 200
// runners with free slots.
func BenchmarkListCandidates16(b *testing.B) {
	db := opstest.Open(b)
	ns := id.New(1)
	opstest.Write(b, db, func(tx udb.Transaction) (any, error) {
		for j := range 200 {
			if _, err := Register(ctx, tx, input(ns, "pool", fmt.Sprintf("k%d", j), 1_000)); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	b.ReportAllocs()
	for b.Loop() {
		out := opstest.Read(b, db, func(r udb.ReadTransaction) ([]Candidate, error) {
			return ListCandidates(ctx, r, ns, "pool", 0, 16)
		})
		if len(out) != 16 {
			b.Fatal(len(out))
		}
	}
}
