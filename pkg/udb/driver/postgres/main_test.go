package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

// urlEnv names the server the tests use; .ci/postgres.sh starts one and
// sets it.
const urlEnv = "BERTH_TEST_POSTGRES_URL"

// TestMain fails the package if a test leaves a goroutine running (a watch
// listener, a connection) after closing its databases.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newStore creates an empty store for t, a schema of its own dropped when t
// ends, and returns its URL.
func newStore(t testing.TB) string {
	t.Helper()
	base := os.Getenv(urlEnv)
	if base == "" {
		t.Skipf("%s is not set: no PostgreSQL server to test against (`source .ci/postgres.sh` starts one)", urlEnv)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "udbtest_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to %s: %v", urlEnv, err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// withParam adds a query parameter to a URL.
func withParam(t testing.TB, raw, k, v string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
}

// opener opens databases through udb.Open and closes each exactly once:
// when the test that opened it ends, or earlier through close.
type opener struct {
	mu     sync.Mutex
	closed map[udb.Database]bool
}

func (o *opener) open(t testing.TB, url string) udb.Database {
	t.Helper()
	db, err := udb.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("udb.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := o.close(db); err != nil {
			t.Errorf("closing: %v", err)
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
