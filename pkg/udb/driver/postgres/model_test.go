package postgres

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/pkg/udb/udbtest"
)

// TestModelSerializable runs udbtest.Model on PostgreSQL with every schedule's
// transactions alternating between two processes' handles on one store.
func TestModelSerializable(t *testing.T) {
	_, dbs := openHandles(t, 2)
	// Every operation is a round trip to PostgreSQL: 600 schedules take a few seconds;
	// the budget bounds the test on a loaded machine.
	udbtest.Model(t, &alternating{dbs: dbs}, udbtest.ModelOptions{Schedules: 600, Budget: 10 * time.Second,
		Replay: "TestModelSerializable ./pkg/udb/driver/postgres"})
}

// TestSetReadVersionAtCommitVersion: commits in one process, reads at their versions in
// the other.
func TestSetReadVersionAtCommitVersion(t *testing.T) {
	_, dbs := openHandles(t, 2)
	udbtest.SetReadVersionAtCommitVersion(t,
		func(i int) udb.Database { return dbs[i%2] },
		func(i int) udb.Database { return dbs[(i+1)%2] }, 5)
}

// alternating is a udb.Database whose transactions come from its handles in
// turn, so that one schedule's transactions run in different processes.
type alternating struct {
	dbs  []udb.Database
	next atomic.Uint64
}

func (a *alternating) CreateTransaction() (udb.Transaction, error) {
	return a.dbs[a.next.Add(1)%uint64(len(a.dbs))].CreateTransaction()
}

func (a *alternating) Transact(ctx context.Context, f func(udb.Transaction) (any, error)) (any, error) {
	return udb.RunTransact(ctx, a, f)
}

func (a *alternating) ReadTransact(ctx context.Context, f func(udb.ReadTransaction) (any, error)) (any, error) {
	return udb.RunReadTransact(ctx, a, f)
}

func (a *alternating) Close() error { return nil }
