package postgres

import (
	"fmt"
	"sync"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/pkg/udb/udbtest"
)

// TestConformance runs the whole udb conformance suite on one store. The
// watch-limit cases open other handles on the same store, as other engine
// processes would; Reopen closes the shared handle and opens a new one.
func TestConformance(t *testing.T) {
	url := newStore(t)
	var o opener
	var mu sync.Mutex
	shared := o.open(t, url)
	udbtest.Run(t, udbtest.Harness{
		Open: func(testing.TB) udb.Database {
			mu.Lock()
			defer mu.Unlock()
			return shared
		},
		OpenWithMaxWatches: func(t testing.TB, n int) udb.Database {
			return o.open(t, withParam(t, url, "max_watches", fmt.Sprint(n)))
		},
		Reopen: func(t testing.TB, db udb.Database) udb.Database {
			if err := o.close(db); err != nil {
				t.Fatalf("closing for reopen: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			shared = o.open(t, url)
			return shared
		},
	})
}

// TestConformancePrefixed runs the suite on a key-prefixed view of a store
// (prefix= in the URL, as the integration tests' BERTH_TEST_DB_URL does),
// with a key of the whole store on each side of the view.
func TestConformancePrefixed(t *testing.T) {
	url := newStore(t)
	var o opener
	raw := o.open(t, url)
	if _, err := raw.Transact(t.Context(), func(tx udb.Transaction) (any, error) {
		tx.Set([]byte{0x70, 0x00}, []byte("before"))
		tx.Set([]byte{0x70, 0x02}, []byte("after"))
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	const prefix = "7001"
	prefixed := withParam(t, url, udb.PrefixParam, prefix)
	var mu sync.Mutex
	shared := o.open(t, prefixed)
	udbtest.Run(t, udbtest.Harness{
		Open: func(testing.TB) udb.Database {
			mu.Lock()
			defer mu.Unlock()
			return shared
		},
		OpenWithMaxWatches: func(t testing.TB, n int) udb.Database {
			return o.open(t, withParam(t, prefixed, "max_watches", fmt.Sprint(n)))
		},
		Reopen: func(t testing.TB, db udb.Database) udb.Database {
			if err := o.close(db); err != nil {
				t.Fatalf("closing for reopen: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			shared = o.open(t, prefixed)
			return shared
		},
		KeyOverhead: len(prefix) / 2,
	})
}
