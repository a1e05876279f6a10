package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/berthhq/berth/pkg/udb"
)

// InstrumentDB returns db with its commits measured: UDBCommit observes each commit's
// duration and UDBConflicts counts those refused with not_committed. Transact and
// ReadTransact run the same retry loop the drivers do (udb.RunTransact), over the measured
// transactions. A measured transaction is still a udb.Transaction; its Snapshot is the
// driver's.
func (m *Metrics) InstrumentDB(db udb.Database) udb.Database {
	return &measuredDB{Database: db, commit: m.UDBCommit, conflicts: m.UDBConflicts}
}

type measuredDB struct {
	udb.Database
	commit    prometheus.Observer
	conflicts prometheus.Counter
}

func (d *measuredDB) CreateTransaction() (udb.Transaction, error) {
	tx, err := d.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &measuredTx{Transaction: tx, d: d}, nil
}

func (d *measuredDB) Transact(ctx context.Context, f func(udb.Transaction) (any, error)) (any, error) {
	return udb.RunTransact(ctx, d, f)
}

func (d *measuredDB) ReadTransact(ctx context.Context, f func(udb.ReadTransaction) (any, error)) (any, error) {
	return udb.RunReadTransact(ctx, d, f)
}

type measuredTx struct {
	udb.Transaction
	d *measuredDB
}

func (t *measuredTx) Commit(ctx context.Context) error {
	start := time.Now()
	err := t.Transaction.Commit(ctx)
	t.d.commit.Observe(time.Since(start).Seconds())
	if udb.HasCode(err, udb.CodeNotCommitted) {
		t.d.conflicts.Inc()
	}
	return err
}
