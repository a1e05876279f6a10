package actor

import (
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	opsqlite "github.com/berthhq/berth/ops/sqlite"
	"github.com/berthhq/berth/pkg/udb"
)

// Destroying an actor clears its SQLite database.
func TestDestroyDropsSQLite(t *testing.T) {
	w := newWorld(t)
	aid, _ := w.create(CrashSleep, nil) // no runner: it waits, on no host
	st := w.state(aid)
	s := &opsqlite.Store{DB: w.db}
	f := opsqlite.Fence{ActorID: aid, Generation: st.Generation, Offline: true}
	if _, err := s.Commit(ctx, opsqlite.CommitInput{Fence: f, Pages: []opsqlite.Page{{Pgno: 1, Bytes: []byte("page")}}, DbSizePages: 1}); err != nil {
		t.Fatal(err)
	}
	w.destroy(aid)
	n := opstest.Read(t, w.db, func(r udb.ReadTransaction) (int, error) {
		b, e := keys.ActorSQLiteRange(aid)
		kvs, err := r.GetRange(udb.FirstGreaterOrEqual(b), udb.FirstGreaterOrEqual(e), udb.RangeOptions{}).All(ctx)
		return len(kvs), err
	})
	if n != 0 {
		t.Fatalf("%d SQLite rows left after destroy", n)
	}
}
