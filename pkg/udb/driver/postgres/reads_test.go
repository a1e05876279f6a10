package postgres

import (
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
	cfg, err := pgx.ParseConfig(newStore(t))
	if err != nil {
		t.Fatal(err)
	}
	reads := &readCounter{}
	cfg.Tracer = reads
	db, err := Open(ctx, Options{Conn: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("closing: %v", err)
		}
	})
	const fields = 20
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

// readCounter counts the snapshot read statements a connection sends: those that read
// udb_kv, and any that reads the horizon alone (as the second statement an empty page
// once took).
type readCounter struct{ n atomic.Int64 }

func (r *readCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "FROM udb_kv") || strings.Contains(d.SQL, "SELECT horizon FROM udb_meta") {
		r.n.Add(1)
	}
	return ctx
}

func (*readCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
