//go:build fdb

package fdb

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/pkg/udb/udbtest"
)

// clusterEnv names the cluster file of a running FoundationDB cluster. The
// tests in tests/fdb start one in Docker themselves; these run against one
// you already have (make test-fdb brings one up with docker compose).
const clusterEnv = "BERTH_TEST_FDB_CLUSTER_FILE"

func clusterURL(t testing.TB) string {
	t.Helper()
	cf := os.Getenv(clusterEnv)
	if cf == "" {
		t.Skipf("%s is not set: no FoundationDB cluster to test against (tests/fdb starts one with Docker; make test-fdb uses docker compose)", clusterEnv)
	}
	return "fdb://" + cf
}

func TestConformance(t *testing.T) {
	url := clusterURL(t)
	open := func(t testing.TB, u string) udb.Database {
		db, err := udb.Open(context.Background(), u)
		if err != nil {
			t.Fatalf("udb.Open(%q): %v", u, err)
		}
		return db
	}
	var mu sync.Mutex
	shared := open(t, url)
	t.Cleanup(func() { mu.Lock(); defer mu.Unlock(); shared.Close() })
	udbtest.Run(t, udbtest.Harness{
		Open: func(testing.TB) udb.Database {
			mu.Lock()
			defer mu.Unlock()
			return shared
		},
		OpenWithMaxWatches: func(t testing.TB, n int) udb.Database {
			db := open(t, fmt.Sprintf("%s?max_watches=%d", url, n))
			t.Cleanup(func() { db.Close() })
			return db
		},
		Reopen: func(t testing.TB, db udb.Database) udb.Database {
			mu.Lock()
			defer mu.Unlock()
			db.Close()
			shared = open(t, url)
			return shared
		},
	})
}

// TestConformancePrefixed runs the suite on a key-prefixed view of the
// cluster (prefix= in the URL), as the integration tests' engines use it
// under make test-fdb.
func TestConformancePrefixed(t *testing.T) {
	const prefix = "7001"
	url := clusterURL(t) + "?" + udb.PrefixParam + "=" + prefix
	open := func(t testing.TB, u string) udb.Database {
		db, err := udb.Open(context.Background(), u)
		if err != nil {
			t.Fatalf("udb.Open(%q): %v", u, err)
		}
		return db
	}
	var mu sync.Mutex
	shared := open(t, url)
	t.Cleanup(func() { mu.Lock(); defer mu.Unlock(); shared.Close() })
	udbtest.Run(t, udbtest.Harness{
		Open: func(testing.TB) udb.Database {
			mu.Lock()
			defer mu.Unlock()
			return shared
		},
		OpenWithMaxWatches: func(t testing.TB, n int) udb.Database {
			db := open(t, fmt.Sprintf("%s&max_watches=%d", url, n))
			t.Cleanup(func() { db.Close() })
			return db
		},
		Reopen: func(t testing.TB, db udb.Database) udb.Database {
			mu.Lock()
			defer mu.Unlock()
			db.Close()
			shared = open(t, url)
			return shared
		},
		KeyOverhead: len(prefix) / 2,
	})
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ url, want string }{
		{"fdb:///no/such/fdb.cluster", "cluster file"},
		{"fdb:///etc/hosts?bogus=1", `unknown option "bogus"`},
		{"fdb:///etc/hosts?max_watches=0", "max_watches"},
		{"fdb:///etc/hosts?connect_timeout=soon", "connect_timeout"},
	} {
		if _, err := udb.Open(ctx, c.url); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q) = %v, want an error mentioning %q", c.url, err, c.want)
		}
	}
}
