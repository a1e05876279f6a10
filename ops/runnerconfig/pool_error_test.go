package runnerconfig

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// A pool's error shows in its entry until three successes in a row; a new error restarts
// the count.
func TestPoolError(t *testing.T) {
	ctx := context.Background()
	db := opstest.Open(t)
	ns := id.New(1)
	update := func(f func(tx udb.Transaction) error) {
		t.Helper()
		if err := udb.Update(ctx, db, f); err != nil {
			t.Fatal(err)
		}
	}
	update(func(tx udb.Transaction) error {
		_, err := Ensure(ctx, tx, EnsureInput{Namespace: ns, Name: "p"})
		return err
	})
	shown := func() string {
		t.Helper()
		e, err := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) (Entry, error) {
			return Get(ctx, r, GetInput{Namespace: ns, Name: "p"})
		})
		if err != nil {
			t.Fatal(err)
		}
		l, err := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) (ListOutput, error) {
			return List(ctx, r, ListInput{Namespace: ns, Limit: 10})
		})
		if err != nil || len(l.Configs) != 1 || string(l.Configs[0].PoolError) != string(e.PoolError) {
			t.Fatalf("list %+v %v disagrees with get %s", l.Configs, err, e.PoolError)
		}
		return string(e.PoolError)
	}
	success := func() { update(func(tx udb.Transaction) error { return PoolSuccess(ctx, tx, ns, "p") }) }
	success() // no error: nothing to count
	if got := shown(); got != "" {
		t.Fatalf("error %s before any failure", got)
	}
	update(func(tx udb.Transaction) error { SetPoolError(tx, ns, "p", json.RawMessage(`"a"`)); return nil })
	success()
	success()
	update(func(tx udb.Transaction) error { SetPoolError(tx, ns, "p", json.RawMessage(`"b"`)); return nil })
	success()
	success()
	if got := shown(); got != `"b"` {
		t.Fatalf("after a new error and two successes: %s, want \"b\"", got)
	}
	success()
	if got := shown(); got != "" {
		t.Fatalf("after three successes: %s, want none", got)
	}
}
