package metrics

import (
	"context"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded"
)

func TestInstrumentDBCountsCommitsAndConflicts(t *testing.T) {
	ctx := context.Background()
	raw, err := udb.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	m := New()
	db := m.InstrumentDB(raw)

	// Two transactions read and write one key; the second to commit conflicts.
	a, _ := db.CreateTransaction()
	b, _ := db.CreateTransaction()
	for _, tx := range []udb.Transaction{a, b} {
		if _, err := tx.Get(ctx, []byte("k")); err != nil {
			t.Fatal(err)
		}
		tx.Set([]byte("k"), []byte("v"))
	}
	if err := a.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx); !udb.HasCode(err, udb.CodeNotCommitted) {
		t.Fatalf("second commit = %v, want not_committed", err)
	}
	// Transact goes through the measured transactions too.
	if err := udb.Update(ctx, db, func(tx udb.Transaction) error {
		tx.Set([]byte("k2"), []byte("v"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := gathered(t, m, "berth_udb_conflicts_total").GetCounter().GetValue(); got != 1 {
		t.Errorf("conflicts = %v, want 1", got)
	}
	if n := gathered(t, m, "berth_udb_commit_seconds").GetHistogram().GetSampleCount(); n != 3 {
		t.Errorf("commits observed = %d, want 3", n)
	}
}

// gathered returns the one series of metric name.
func gathered(t *testing.T, m *Metrics, name string) *dto.Metric {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0]
		}
	}
	t.Fatalf("%s: no single series gathered", name)
	return nil
}
