package harness

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded" // file://, mem://
	_ "github.com/berthhq/berth/pkg/udb/driver/postgres" // postgres://
)

// DBURLEnv names a store that replaces the engines' own: when it is set (fdb://CLUSTER_FILE,
// postgres://…, any udb URL), every engine a test starts on a mem:// or file:// store uses
// that store instead, under a fresh random key prefix (udb.PrefixParam) of its own.
const DBURLEnv = "BERTH_TEST_DB_URL"

// testPrefixTag starts every prefix StoreURL gives out, so test data is recognisable in a
// shared store.
const testPrefixTag = "\xfdberth-test/"

// prefixes maps a file:// URL to the prefix StoreURL gave it in this test binary.
var prefixes sync.Map

// StoreURL returns the store an engine configured with dbURL uses. Without BERTH_TEST_DB_URL,
// or for a URL that is neither mem:// nor file://, it is dbURL. Otherwise it is the shared
// store with a random prefix: a fresh one for each mem:// engine, and the same one for the
// same file:// URL (its query is dropped), so an engine restarted on its store, or several
// engines given one store, find the same data. The test's cleanup clears the prefix's keys.
func StoreURL(tb testing.TB, dbURL string) string {
	tb.Helper()
	shared := os.Getenv(DBURLEnv)
	if shared == "" || !(strings.HasPrefix(dbURL, "mem://") || strings.HasPrefix(dbURL, "file://")) {
		return dbURL
	}
	if strings.HasPrefix(dbURL, "file://") {
		path, _, _ := strings.Cut(dbURL, "?")
		if p, ok := prefixes.Load(path); ok {
			return p.(string)
		}
		u := prefixedURL(tb, shared)
		if p, loaded := prefixes.LoadOrStore(path, u); loaded {
			return p.(string)
		}
		return u
	}
	return prefixedURL(tb, shared)
}

// SharedStore returns base (a udb URL such as postgres://…) under a fresh random prefix,
// cleared at tb's end: a store for several engines of one test to share, as the nodes of a
// datacenter do.
func SharedStore(tb testing.TB, base string) string {
	tb.Helper()
	return prefixedURL(tb, base)
}

// prefixedURL adds a fresh prefix to the shared store's URL and clears it at tb's end.
func prefixedURL(tb testing.TB, shared string) string {
	tb.Helper()
	u, err := url.Parse(shared)
	if err != nil {
		tb.Fatalf("%s=%q: %v", DBURLEnv, shared, err)
	}
	q := u.Query()
	if q.Has(udb.PrefixParam) {
		tb.Fatalf("%s must not have a %s= parameter: the harness gives each engine its own", DBURLEnv, udb.PrefixParam)
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		tb.Fatal(err)
	}
	q.Set(udb.PrefixParam, fmt.Sprintf("%x%x", testPrefixTag, id))
	u.RawQuery = q.Encode()
	out := u.String()
	tb.Cleanup(func() { clearStore(tb, out) })
	return out
}

// clearStore removes every key of the prefixed store at url; a failure is only logged, as
// the keys are under a prefix no other test uses.
func clearStore(tb testing.TB, url string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := udb.Open(ctx, url)
	if err != nil {
		tb.Logf("harness: clearing the test's keys: %v", err)
		return
	}
	defer db.Close()
	err = udb.Update(ctx, db, func(tx udb.Transaction) error {
		tx.ClearRange(nil, []byte{0xff})
		return nil
	})
	if err != nil {
		tb.Logf("harness: clearing the test's keys: %v", err)
	}
}
