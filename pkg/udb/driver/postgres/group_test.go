package postgres

import (
	"encoding/binary"
	"sync"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
)

// TestCommitGroups has 16 clients increment one counter 20 times each by
// reading it and writing it back, each commit also writing a versionstamped
// key. Commits that share a group must still be serializable: a second
// increment reading what an earlier one of its group wrote has to fail and
// retry, or an update is lost and the counter ends short. Every commit gets a
// versionstamp of its own, and groups of several commits did form.
func TestCommitGroups(t *testing.T) {
	_, dbs := openHandles(t, 1)
	db := dbs[0].(*DB)
	ctx := t.Context()
	const clients, each = 16, 20
	counter := []byte("counter")
	stamps := make(chan [10]byte, clients*each)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range each {
				var f udb.VersionstampFuture
				_, err := db.Transact(ctx, func(tx udb.Transaction) (any, error) {
					v, err := tx.Get(ctx, counter)
					if err != nil {
						return nil, err
					}
					n := uint64(0)
					if v != nil {
						n = binary.LittleEndian.Uint64(v)
					}
					tx.Set(counter, binary.LittleEndian.AppendUint64(nil, n+1))
					key := append([]byte("stamped/"), make([]byte, 10)...)
					tx.Atomic(udb.MutationSetVersionstampedKey, binary.LittleEndian.AppendUint32(key, uint32(len("stamped/"))), nil)
					f = tx.GetVersionstamp()
					return nil, nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				s, err := f.Get(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				stamps <- s
			}
		})
	}
	wg.Wait()
	close(stamps)

	tx := mustTx(t, db)
	v, err := tx.Get(ctx, counter)
	if err != nil || len(v) != 8 || binary.LittleEndian.Uint64(v) != clients*each {
		t.Errorf("counter: %v, %v; want %d", v, err, clients*each)
	}
	seen := map[[10]byte]bool{}
	for s := range stamps {
		if seen[s] {
			t.Errorf("versionstamp %x handed out twice", s)
		}
		seen[s] = true
	}
	kvs, err := tx.GetRange(udb.FirstGreaterOrEqual([]byte("stamped/")), udb.FirstGreaterOrEqual([]byte("stamped0")), udb.RangeOptions{}).All(ctx)
	if err != nil || len(kvs) != clients*each {
		t.Errorf("versionstamped keys: %d, %v; want %d", len(kvs), err, clients*each)
	}
	if db.commits.shared.Load() == 0 {
		t.Error("no commit shared a group: the test did not exercise groups")
	}
	t.Logf("%d of the commits (retries included) went in groups of several", db.commits.shared.Load())
}
