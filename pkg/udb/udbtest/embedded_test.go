package udbtest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded"
	"github.com/berthhq/berth/pkg/udb/udbtest"
	"go.uber.org/goleak"
)

// The suite's self-test: it runs against the embedded driver, in memory and
// on disk. The driver's own tests may run it too.

// opener opens databases and closes each exactly once: when the test that
// opened it ends, or earlier through Reopen. Databases are not wrapped, so
// the driver's optional udb.Clock and udb.FaultInjector stay visible.
type opener struct {
	mu     sync.Mutex
	closed map[udb.Database]bool
}

func (o *opener) open(t testing.TB, url string) udb.Database {
	t.Helper()
	db, err := udb.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("udb.Open(%q): %v", url, err)
	}
	t.Cleanup(func() {
		if err := o.close(db); err != nil {
			t.Errorf("closing %q: %v", url, err)
		}
	})
	return db
}

func (o *opener) close(db udb.Database) error {
	o.mu.Lock()
	if o.closed == nil {
		o.closed = map[udb.Database]bool{}
	}
	done := o.closed[db]
	o.closed[db] = true
	o.mu.Unlock()
	if done {
		return nil
	}
	return db.Close()
}

func TestEmbeddedMem(t *testing.T) {
	var o opener
	shared := o.open(t, "mem://")
	udbtest.Run(t, udbtest.Harness{
		Open: func(testing.TB) udb.Database { return shared },
		OpenWithMaxWatches: func(t testing.TB, n int) udb.Database {
			return o.open(t, fmt.Sprintf("mem://?max_watches=%d", n))
		},
	})
}

func TestEmbeddedFile(t *testing.T) {
	url := "file://" + t.TempDir()
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
			return o.open(t, fmt.Sprintf("file://%s?max_watches=%d", t.TempDir(), n))
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

// TestMain checks that the suite leaves no goroutine of a watch, a commit or
// a database running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
