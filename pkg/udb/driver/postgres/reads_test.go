package postgres

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/jackc/pgx/v5"
)

// Range reads take one round trip where one can do: an empty range answers its horizon in
// the same statement, and a read of a whole range (StreamingModeWantAll) fetches its rows in
// one page even after scans that stopped early made the predicted page small.
func TestRangeReadRoundTrips(t *testing.T) {
	ctx := context.Background()
	db, reads := openCounted(t)
	const fields = firstPage + 8 // more than the first page
	if _, err := udb.Transact(ctx, db, func(tx udb.Transaction) (struct{}, error) {
		for i := range fields {
			tx.Set(fmt.Appendf(nil, "f/%02d", i), []byte("v"))
		}
		return struct{}{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	// A new transaction per read: its snapshot's cache must not answer.
	read := func(what string, statements int64, f func(tx udb.Transaction) error) {
		t.Helper()
		before := reads.n.Load()
		if _, err := udb.Transact(ctx, db, func(tx udb.Transaction) (struct{}, error) { return struct{}{}, f(tx) }); err != nil {
			t.Fatal(err)
		}
		if got := reads.n.Load() - before; got != statements {
			t.Errorf("%s: %d read statements, want %d", what, got, statements)
		}
	}
	read("empty range", 1, func(tx udb.Transaction) error {
		kvs, err := tx.GetRange(udb.FirstGreaterOrEqual([]byte("e/")), udb.FirstGreaterOrEqual([]byte("e0")), udb.RangeOptions{Limit: 1}).All(ctx)
		if err == nil && len(kvs) != 0 {
			err = fmt.Errorf("read %d rows of an empty range", len(kvs))
		}
		return err
	})
	// The first scan reads two pages (the transaction layer reads ahead of what it hands
	// out), which answer the second from the snapshot's cache; the whole range then takes
	// one more page, not several.
	read("whole range after early stops", 3, func(tx udb.Transaction) error {
		for range 2 { // two scans that stop at the first row
			it := tx.GetRange(udb.FirstGreaterOrEqual([]byte("f/")), udb.FirstGreaterOrEqual([]byte("f0")), udb.RangeOptions{})
			if !it.Next(ctx) {
				return fmt.Errorf("no first row: %v", it.Err())
			}
		}
		kvs, err := tx.Snapshot().GetRange(udb.FirstGreaterOrEqual([]byte("f/")), udb.FirstGreaterOrEqual([]byte("f0")),
			udb.RangeOptions{Mode: udb.StreamingModeWantAll}).All(ctx)
		if err == nil && len(kvs) != fields {
			err = fmt.Errorf("read %d rows, want %d", len(kvs), fields)
		}
		return err
	})
}

// Prefetch reads every key and range it is given in one batch of statements (one for all
// the keys, one for each range), after which the transaction's reads of them send none, and
// return what they would have without it.
func TestPrefetchIsOneBatch(t *testing.T) {
	ctx := context.Background()
	db, reads := openCounted(t)
	if _, err := udb.Transact(ctx, db, func(tx udb.Transaction) (struct{}, error) {
		for i := range 10 {
			tx.Set(fmt.Appendf(nil, "k/%d", i), fmt.Appendf(nil, "v%d", i))
		}
		for i := range prefetchRows + 6 {
			tx.Set(fmt.Appendf(nil, "r/%03d", i), []byte("row"))
		}
		tx.Set([]byte("empty"), []byte{})
		return struct{}{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	key := func(s string) []byte { return []byte(s) }
	rng := func(b, e string) udb.KeyRange { return udb.KeyRange{Begin: key(b), End: key(e)} }
	if _, err := udb.Transact(ctx, db, func(tx udb.Transaction) (struct{}, error) {
		statements, batches, prefetched := reads.n.Load(), reads.batches.Load(), reads.statements.Load()
		tx.Set(key("k/1"), key("own")) // the transaction's own write wins over the fetched value
		tx.Prefetch(ctx, [][]byte{key("k/0"), key("k/1"), key("absent"), key("empty"), key("k/0")},
			[]udb.KeyRange{rng("k/", "k0"), rng("none/", "none0"), rng("r/", "r0")})
		for k, want := range map[string][]byte{"k/0": key("v0"), "k/1": key("own"), "absent": nil, "empty": {}} {
			got, err := tx.Get(ctx, key(k))
			if err != nil {
				return struct{}{}, err
			}
			if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Errorf("Get(%s) = %q, want %q", k, got, want)
			}
		}
		kvs, err := tx.GetRange(udb.FirstGreaterOrEqual(key("k/")), udb.FirstGreaterOrEqual(key("k0")), udb.RangeOptions{Mode: udb.StreamingModeWantAll}).All(ctx)
		if err != nil || len(kvs) != 10 || string(kvs[1].Value) != "own" {
			t.Errorf("range k/: %d rows, %v", len(kvs), err)
		}
		kvs, err = tx.GetRange(udb.FirstGreaterOrEqual(key("none/")), udb.FirstGreaterOrEqual(key("none0")), udb.RangeOptions{}).All(ctx)
		if err != nil || len(kvs) != 0 {
			t.Errorf("empty range: %d rows, %v", len(kvs), err)
		}
		// Past the fetched page, a range read goes on reading.
		kvs, err = tx.GetRange(udb.FirstGreaterOrEqual(key("r/")), udb.FirstGreaterOrEqual(key("r0")), udb.RangeOptions{Mode: udb.StreamingModeWantAll}).All(ctx)
		if err != nil || len(kvs) != prefetchRows+6 {
			t.Errorf("range r/: %d rows, %v", len(kvs), err)
		}
		if got := reads.n.Load() - statements; got != 1 { // the rest of r/
			t.Errorf("%d read statements after the prefetch, want 1", got)
		}
		if got := reads.batches.Load() - batches; got != 1 {
			t.Errorf("%d read batches, want 1", got)
		}
		if got := reads.statements.Load() - prefetched; got != 1+3 { // the keys, the ranges
			t.Errorf("%d statements prefetched, want 4", got)
		}
		return struct{}{}, nil
	}); err != nil {
		t.Fatal(err)
	}

	// One Prefetch reads at most maxPrefetch keys; the reads of the rest go alone.
	if _, err := udb.Transact(ctx, db, func(tx udb.Transaction) (struct{}, error) {
		statements, queued := reads.n.Load(), reads.queued.Load()
		many := make([][]byte, maxPrefetch+10)
		for i := range many {
			many[i] = fmt.Appendf(nil, "many/%d", i)
		}
		tx.Prefetch(ctx, many, nil)
		for _, k := range many {
			if _, err := tx.Get(ctx, k); err != nil {
				return struct{}{}, err
			}
		}
		if got := reads.queued.Load() - queued; got != maxPrefetch {
			t.Errorf("prefetched %d keys, want %d", got, maxPrefetch)
		}
		if got := reads.n.Load() - statements; got != 10 {
			t.Errorf("%d reads after the prefetch, want 10", got)
		}
		return struct{}{}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A range read whose first page is sized small (the iterators before it read one row each)
// takes its rows from a page prefetched whole, rather than reading past its first page
// with statements of its own.
func TestSmallFirstPageServedFromPrefetch(t *testing.T) {
	ctx := context.Background()
	db, reads := openCounted(t)
	if _, err := udb.Transact(ctx, db, func(tx udb.Transaction) (struct{}, error) {
		for i := range prefetchRows + 6 {
			tx.Set(fmt.Appendf(nil, "r/%03d", i), []byte("row"))
		}
		return struct{}{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	begin, end := udb.FirstGreaterOrEqual([]byte("r/")), udb.FirstGreaterOrEqual([]byte("r0"))
	if _, err := udb.Transact(ctx, db, func(tx udb.Transaction) (struct{}, error) {
		tx.Prefetch(ctx, nil, []udb.KeyRange{{Begin: []byte("r/"), End: []byte("r0")}})
		for range 2 {
			if _, err := tx.GetRange(begin, end, udb.RangeOptions{Limit: 1}).All(ctx); err != nil {
				return struct{}{}, err
			}
		}
		statements := reads.n.Load()
		kvs, err := tx.GetRange(begin, end, udb.RangeOptions{Limit: 40}).All(ctx)
		if err != nil || len(kvs) != 40 || string(kvs[39].Key) != "r/039" {
			t.Errorf("range r/ limit 40: %d rows, %v", len(kvs), err)
		}
		if got := reads.n.Load() - statements; got != 0 {
			t.Errorf("%d read statements for rows prefetched, want none", got)
		}
		return struct{}{}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// openCounted opens a new store whose read statements are counted.
func openCounted(t *testing.T) (*DB, *readCounter) {
	cfg, err := pgx.ParseConfig(newStore(t))
	if err != nil {
		t.Fatal(err)
	}
	reads := &readCounter{}
	cfg.Tracer = reads
	db, err := Open(context.Background(), Options{Conn: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("closing: %v", err)
		}
	})
	return db, reads
}

// readCounter counts the snapshot read statements a connection sends: those that read
// udb_kv, and any that reads the horizon alone (as the second statement an empty page
// once took), and the batches of them (Prefetch's) with the read statements they hold and
// the reads those ask for (a key or a range each).
type readCounter struct{ n, batches, statements, queued atomic.Int64 }

func (r *readCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	statements, reads := 0, 0
	for _, q := range d.Batch.QueuedQueries {
		switch q.SQL {
		case getSQL, pageForwardSQL, pageReverseSQL:
			statements++
			reads++
		case getManySQL:
			statements++
			reads += len(q.Arguments[0].([][]byte))
		}
	}
	if statements > 0 {
		r.batches.Add(1)
		r.statements.Add(int64(statements))
		r.queued.Add(int64(reads))
	}
	return ctx
}

func (*readCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (*readCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func (r *readCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "FROM udb_kv") || strings.Contains(d.SQL, "SELECT horizon FROM udb_meta") {
		r.n.Add(1)
	}
	return ctx
}

func (*readCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A range read visits the rows visible at its version, not the range's history: where keys
// come and go (a pool's allocation index moves an entry with every slot taken) the window
// holds thousands of superseded rows beside a few live ones, and a page read through them all.
// Here 2,000 keys were set and cleared, then two set, beside 5,000 other keys: the page at the
// newest version, planned as the driver's prepared statements are (a generic plan on current
// statistics), throws away a handful of index entries at most, and a read at a version before
// the clear still gets all 2,000 rows, in either direction.
func TestRangeReadsSkipHistory(t *testing.T) {
	ctx := t.Context()
	db, admin := openWithAdmin(t, newStore(t))
	const churned = 2000
	filled := commitWith(t, db, "the keys", func(tx udb.Transaction) {
		for i := range churned {
			tx.Set(fmt.Appendf(nil, "q/%04d", i), []byte("v"))
		}
		for i := range 5000 {
			tx.Set(fmt.Appendf(nil, "a/%04d", i), []byte("v"))
		}
	})
	commitWith(t, db, "the clear", func(tx udb.Transaction) { tx.ClearRange([]byte("q/"), []byte("q0")) })
	latest := commitWith(t, db, "two live keys", func(tx udb.Transaction) {
		tx.Set([]byte("q/x1"), []byte("live"))
		tx.Set([]byte("q/x2"), []byte("live"))
	})
	if _, err := admin.Exec(ctx, `ANALYZE udb_kv`); err != nil {
		t.Fatal(err)
	}

	at := func(v int64) udb.Transaction {
		tx := mustTx(t, db)
		tx.SetReadVersion(v)
		return tx
	}
	rangeAt := func(v int64, reverse bool) ([]udb.KeyValue, error) {
		return at(v).GetRange(udb.FirstGreaterOrEqual([]byte("q/")), udb.FirstGreaterOrEqual([]byte("q0")),
			udb.RangeOptions{Reverse: reverse}).All(ctx)
	}
	for _, reverse := range []bool{false, true} {
		plan, err := explainGeneric(ctx, admin, pageSQL(reverse), "bytea, bytea, bigint, int", fmt.Sprintf(`'\x712f', '\x7130', %d, 3`, latest))
		if err != nil {
			t.Fatal(err)
		}
		if removed := rowsRemoved(plan); removed > 10 || !strings.Contains(plan, "udb_kv_latest") || !strings.Contains(plan, "udb_kv_history") {
			t.Errorf("reverse=%v: the page at the newest version passed over %d rows (want the newest and history indexes):\n%s", reverse, removed, plan)
		}
		kvs, err := rangeAt(latest, reverse)
		if err != nil || len(kvs) != 2 {
			t.Errorf("reverse=%v: %d rows at the newest version, %v; want the 2 live keys", reverse, len(kvs), err)
		}
		kvs, err = rangeAt(filled, reverse)
		if err != nil || len(kvs) != churned {
			t.Fatalf("reverse=%v: %d rows before the clear, %v; want %d", reverse, len(kvs), err, churned)
		}
		first := fmt.Sprintf("q/%04d", 0)
		if reverse {
			first = fmt.Sprintf("q/%04d", churned-1)
		}
		if string(kvs[0].Key) != first {
			t.Errorf("reverse=%v: first row before the clear %q, want %q", reverse, kvs[0].Key, first)
		}
	}
	if v, err := at(filled).Get(ctx, []byte("q/0007")); err != nil || string(v) != "v" {
		t.Errorf("a cleared key before its clear: %q, %v; want v", v, err)
	}
	if v, err := at(latest).Get(ctx, []byte("q/0007")); err != nil || v != nil {
		t.Errorf("a cleared key after its clear: %q, %v; want absent", v, err)
	}
}

// explainGeneric prepares sql, whose parameters have the SQL types params, and runs it with
// args (SQL literals) under EXPLAIN (ANALYZE) with the generic plan the driver's prepared
// statements come to use, returning the plan.
func explainGeneric(ctx context.Context, c *pgx.Conn, sql, params, args string) (string, error) {
	tx, err := c.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `PREPARE page(`+params+`) AS `+sql); err != nil {
		return "", err
	}
	defer func() { _, _ = c.Exec(ctx, `DEALLOCATE page`) }()
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, TIMING OFF) EXECUTE page("+args+")")
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}

// rowsRemoved sums a plan's "Rows Removed by Filter".
func rowsRemoved(plan string) int {
	n := 0
	for _, line := range strings.Split(plan, "\n") {
		if _, after, ok := strings.Cut(line, "Rows Removed by Filter: "); ok {
			var k int
			fmt.Sscan(after, &k)
			n += k
		}
	}
	return n
}
