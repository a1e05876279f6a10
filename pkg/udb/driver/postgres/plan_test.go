package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// The history tables churn: pruning leaves few live rows among many dead ones until a
// vacuum, and statistics taken meanwhile can make a scan of the whole table look cheaper
// than the index (seen under load: 3-11 ms per statement under the commit lock). The
// driver's connections take the index anyway. Here udb_write_log is analysed with 5 live
// rows among 20,000 dead, and random_page_cost=100 (given to both connections through the
// URL) makes the index look as expensive as a bloated one: a plain connection scans the
// table, the driver's must not. The conflict check must also find the wider ranges that
// begin before a read range by their version, not by walking the keys before it.
func TestCommitStatementsUseIndexes(t *testing.T) {
	ctx := context.Background()
	db, admin := openWithAdmin(t, withParam(t, newStore(t), "random_page_cost", "100"))
	fill := `
INSERT INTO udb_write_log (key, version, end_key)
	SELECT decode(repeat('ab', 40) || lpad(to_hex(i), 8, '0'), 'hex'), i,
		CASE WHEN i % 10 = 0 THEN decode(repeat('ab', 40) || lpad(to_hex(i + 1), 8, '0'), 'hex') END
	FROM generate_series(1, 20000) AS i;
DELETE FROM udb_write_log WHERE version > 5;
ANALYZE udb_write_log`
	if _, err := admin.Exec(ctx, fill); err != nil {
		t.Fatal(err)
	}
	plan := func(c *pgx.Conn) (string, error) {
		ranges := `ARRAY['\x00001000'::bytea, '\x00002000'], ARRAY['\x00001000'::bytea, '\x00002000']`
		return explainGeneric(ctx, c, conflictSQL, "bigint, bytea[], bytea[]", "1, "+ranges)
	}
	var got string
	err := db.pool.withConn(ctx, func(c *pgx.Conn) error {
		var err error
		got, err = plan(c)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "Seq Scan") {
		t.Errorf("conflictSQL scans the table on the driver's connection:\n%s", got)
	}
	if !strings.Contains(got, "udb_write_log_ranges") || strings.Contains(got, "Index Cond: (key < ") {
		t.Errorf("conflictSQL does not find the wider ranges by version:\n%s", got)
	}
	// The premise: a connection without the driver's settings does scan it.
	if plain, err := plan(admin); err != nil {
		t.Fatal(err)
	} else if !strings.Contains(plain, "Seq Scan") {
		t.Fatalf("conflictSQL takes the index even on a plain connection: the test proves nothing\n%s", plain)
	}
}

// openWithAdmin opens the store at url through the driver and, beside it, a plain
// connection (closed when t ends) to set the tables up as a test needs.
func openWithAdmin(t *testing.T, url string) (*DB, *pgx.Conn) {
	t.Helper()
	var o opener
	db := o.open(t, url).(*DB)
	admin, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	return db, admin
}

// explain returns the plan of sql with args, as PostgreSQL's text.
func explain(ctx context.Context, c *pgx.Conn, sql string, args ...any) (string, error) {
	tx, err := c.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback(ctx) }() // EXPLAIN of an INSERT plans it only
	rows, err := tx.Query(ctx, "EXPLAIN "+sql, args...)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}

// The statement that writes a commit's keys finds their newest rows by index however far
// the statistics are behind: analysed with 5 rows and then grown to 20,000 newest rows, a
// join with the keys hashed every newest row of the table under the commit lock.
func TestPointWritesUseTheKeyIndex(t *testing.T) {
	ctx := context.Background()
	db := openGrown(t)
	var w folded // a commit of 500 keys, one in ten cleared
	for i := range 500 {
		w.keys = append(w.keys, []byte{0, 0, byte(i >> 8), byte(i)})
		w.values = append(w.values, []byte{1})
		if i%10 == 0 {
			w.values[i] = nil
		}
	}
	var plan string
	if err := db.pool.withConn(ctx, func(c *pgx.Conn) error {
		var err error
		plan, err = explain(ctx, c, pointSQL, int64(2), w.keys, w.values)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan, "Hash Join") || !strings.Contains(plan, "udb_kv_latest") || !strings.Contains(plan, "Index Cond: (key = ") {
		t.Errorf("pointSQL does not look its keys up in udb_kv_latest:\n%s", plan)
	}
}

// openGrown opens a new store whose udb_kv was analysed with 5 rows and then grown to 20,000
// newest rows: statistics far behind the table.
func openGrown(t *testing.T) *DB {
	t.Helper()
	db, admin := openWithAdmin(t, newStore(t))
	grow := `
INSERT INTO udb_kv (key, version, value)
	SELECT decode(lpad(to_hex(i), 8, '0'), 'hex'), 1, '\x01' FROM generate_series(1, 5) AS i;
ANALYZE udb_kv;
INSERT INTO udb_kv (key, version, value)
	SELECT decode(lpad(to_hex(i), 8, '0'), 'hex'), 1, '\x01' FROM generate_series(6, 20000) AS i`
	if _, err := admin.Exec(context.Background(), grow); err != nil {
		t.Fatal(err)
	}
	return db
}

// Prefetch's statement for many keys looks each up by index, whatever the statistics say:
// a hash of the table's newest rows would cost every batch of creates the whole table.
func TestPrefetchedKeysUseTheKeyIndex(t *testing.T) {
	ctx := context.Background()
	db := openGrown(t)
	var keys [][]byte
	for i := range 500 {
		keys = append(keys, []byte{0, 0, byte(i >> 8), byte(i)})
	}
	var plan string
	if err := db.pool.withConn(ctx, func(c *pgx.Conn) error {
		var err error
		plan, err = explain(ctx, c, getManySQL, keys, int64(2))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan, "Hash Join") || strings.Contains(plan, "Seq Scan on udb_kv") || !strings.Contains(plan, "Index Cond: ((key = k.key)") {
		t.Errorf("getManySQL does not look its keys up by index:\n%s", plan)
	}
}
