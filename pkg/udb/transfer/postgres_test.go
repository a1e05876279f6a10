package transfer

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	_ "github.com/berthhq/berth/pkg/udb/driver/postgres"
	"github.com/jackc/pgx/v5"
)

// postgresURLEnv names the PostgreSQL server of the driver's tests;
// `source .ci/postgres.sh` starts one and sets it.
const postgresURLEnv = "BERTH_TEST_POSTGRES_URL"

// postgresStore returns the URL of an empty store in a schema of its own,
// dropped when t ends; it skips t without a server.
func postgresStore(t *testing.T) string {
	t.Helper()
	base := os.Getenv(postgresURLEnv)
	if base == "" {
		t.Skipf("%s is not set: no PostgreSQL server to import into (`source .ci/postgres.sh` starts one)", postgresURLEnv)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "transfertest_" + hex.EncodeToString(b[:])
	exec := func(sql string) error {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		_, err = c.Exec(context.Background(), sql)
		return err
	}
	if err := exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("creating schema %s on %s: %v", schema, postgresURLEnv, err)
	}
	t.Cleanup(func() {
		if err := exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
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

// TestEmbeddedToPostgres moves a key space from the embedded driver into
// PostgreSQL and back out into a second embedded store: both copies must
// equal the original byte for byte.
func TestEmbeddedToPostgres(t *testing.T) {
	pgURL := postgresStore(t)
	smallChunks(t)
	kvs := fixture()
	src := open(t, "file://"+t.TempDir())
	load(t, src, kvs)
	pg := open(t, pgURL)
	roundTrip(t, src, pg, sorted(kvs))
	roundTrip(t, pg, open(t, "mem://"), sorted(kvs))
}

// TestPostgresPartialImportCleared: a stream cut short is rejected by
// PostgreSQL's import too, and what was written is cleared.
func TestPostgresPartialImportCleared(t *testing.T) {
	pgURL := postgresStore(t)
	smallChunks(t)
	src := open(t, "mem://")
	load(t, src, fixture())
	pg := open(t, pgURL)
	var buf bytes.Buffer
	if _, err := Export(t.Context(), src, &buf, Options{}); err != nil {
		t.Fatal(err)
	}
	stream := buf.Bytes()
	if err := importBad(t, pg, stream[:len(stream)*3/4]); err == nil {
		t.Fatal("a stream cut to three quarters was imported without error")
	}
}
