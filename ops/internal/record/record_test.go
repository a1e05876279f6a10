package record

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

func TestReader(t *testing.T) {
	ctx := context.Background()
	db := opstest.Open(t)
	rid := id.New(1)
	opstest.Write(t, db, func(tx udb.Transaction) (any, error) {
		keys.Set(tx, keys.RunnerCreateTsKey{RunnerID: rid}, 5)
		keys.Set(tx, keys.RunnerDataNameKey{RunnerID: rid}, "pool")
		keys.SetChunked(tx, keys.RunnerMetadataKey{RunnerID: rid}, `{"a":1}`)
		tx.Set(keys.RunnerVersionKey{RunnerID: rid}.Pack(), []byte{1, 2}) // corrupt: 2 bytes, want 4
		return nil, nil
	})
	opstest.Read(t, db, func(r udb.ReadTransaction) (any, error) {
		rd := NewReader(ctx, r, "runner")
		if v := Must(rd, keys.RunnerCreateTsKey{RunnerID: rid}, "create_ts"); v != 5 {
			t.Errorf("Must(create_ts) = %d", v)
		}
		if p := Ptr(rd, keys.RunnerStopTsKey{RunnerID: rid}); p != nil {
			t.Errorf("Ptr(absent) = %v", *p)
		}
		if p := Ptr(rd, keys.RunnerCreateTsKey{RunnerID: rid}); p == nil || *p != 5 {
			t.Errorf("Ptr(create_ts) = %v", p)
		}
		if !Has(rd, keys.RunnerDataNameKey{RunnerID: rid}) || Has(rd, keys.RunnerKeyKey{RunnerID: rid}) {
			t.Error("Has is wrong")
		}
		if md, found := Chunked(rd, keys.RunnerMetadataKey{RunnerID: rid}); !found || md != `{"a":1}` {
			t.Errorf("Chunked = %q, %v", md, found)
		}
		if rd.Err() != nil {
			t.Fatalf("Err = %v before anything failed", rd.Err())
		}
		Must(rd, keys.RunnerKeyKey{RunnerID: rid}, "key")
		Must(rd, keys.RunnerTotalSlotsKey{RunnerID: rid}, "total_slots")
		if e, ok := rerr.As(rd.Err()); !ok || !rerr.Is(e, rerr.CodeStoreCorrupt) || e.Metadata["reason"] != "the record has no key" {
			t.Errorf("Err after a missing field = %v; want store.corrupt naming the first missing field", rd.Err())
		}
		Must(rd, keys.RunnerVersionKey{RunnerID: rid}, "version")
		err := rd.Err()
		if !rerr.Is(err, rerr.CodeStoreCorrupt) || !errors.Is(err, keys.ErrBadValue) {
			t.Errorf("Err after a bad value = %v; want store.corrupt wrapping keys.ErrBadValue", err)
		}
		// Sticky: later reads return zero values and keep the first error.
		if v := Must(rd, keys.RunnerCreateTsKey{RunnerID: rid}, "create_ts"); v != 0 || rd.Err().Error() != err.Error() {
			t.Errorf("read after an error = %d, %v", v, rd.Err())
		}
		return nil, nil
	})
}

// countingView counts the reads made through a read view.
type countingView struct {
	udb.ReadTransaction
	gets, ranges int
}

func (c *countingView) Get(ctx context.Context, key []byte) ([]byte, error) {
	c.gets++
	return c.ReadTransaction.Get(ctx, key)
}

func (c *countingView) GetRange(begin, end udb.KeySelector, opt udb.RangeOptions) udb.RangeIterator {
	c.ranges++
	return c.ReadTransaction.GetRange(begin, end, opt)
}

func TestPrefetch(t *testing.T) {
	ctx := context.Background()
	db := opstest.Open(t)
	rid, other := id.New(1), id.New(1)
	big := strings.Repeat("m", 3*keys.ChunkSize+5)
	opstest.Write(t, db, func(tx udb.Transaction) (any, error) {
		keys.Set(tx, keys.RunnerCreateTsKey{RunnerID: rid}, 5)
		keys.Set(tx, keys.RunnerLastPingTsKey{RunnerID: rid}, 6)
		keys.SetChunked(tx, keys.RunnerMetadataKey{RunnerID: rid}, big)
		keys.Set(tx, keys.RunnerVersionKey{RunnerID: rid}, 3)
		keys.Set(tx, keys.RunnerVersionKey{RunnerID: other}, 4)
		keys.SetChunked(tx, keys.RunnerMetadataKey{RunnerID: other}, "x")
		return nil, nil
	})
	whole := udb.KeyRange{Begin: keys.RunnerCreateTsKey{RunnerID: rid}.Pack(), End: udb.KeyAfter(keys.RunnerConnIDKey{RunnerID: rid}.Pack())}
	opstest.Read(t, db, func(r udb.ReadTransaction) (any, error) {
		c := &countingView{ReadTransaction: r}
		rd := NewReader(ctx, c, "runner")
		rd.Prefetch(whole)
		if c.ranges != 1 {
			t.Fatalf("Prefetch started %d range reads", c.ranges)
		}
		if v := Must(rd, keys.RunnerVersionKey{RunnerID: rid}, "version"); v != 3 {
			t.Errorf("version = %d", v)
		}
		if v := Must(rd, keys.RunnerLastPingTsKey{RunnerID: rid}, "ping"); v != 6 {
			t.Errorf("ping = %d", v)
		}
		if Has(rd, keys.RunnerStopTsKey{RunnerID: rid}) {
			t.Error("absent key found in the prefetched rows")
		}
		if md, found := Chunked(rd, keys.RunnerMetadataKey{RunnerID: rid}); !found || md != big {
			t.Errorf("chunked metadata from the prefetched rows: %d bytes, found %v", len(md), found)
		}
		if c.gets != 0 || c.ranges != 1 {
			t.Errorf("reads inside the range went to the store: %d gets, %d ranges", c.gets, c.ranges)
		}
		// Outside the range: read from the store.
		if v := Must(rd, keys.RunnerVersionKey{RunnerID: other}, "version"); v != 4 || c.gets != 1 {
			t.Errorf("version outside the range = %d after %d gets", v, c.gets)
		}
		if md, found := Chunked(rd, keys.RunnerMetadataKey{RunnerID: other}); !found || md != "x" || c.ranges != 2 {
			t.Errorf("chunked outside the range = %q, %v after %d ranges", md, found, c.ranges)
		}
		if err := rd.Err(); err != nil {
			t.Fatal(err)
		}
		return nil, nil
	})
	// A gap in the chunk numbers is corrupt, as in keys.GetChunked.
	opstest.Write(t, db, func(tx udb.Transaction) (any, error) {
		tx.Clear(keys.RunnerMetadataKey{RunnerID: rid}.ChunkKey(1))
		return nil, nil
	})
	opstest.Read(t, db, func(r udb.ReadTransaction) (any, error) {
		rd := NewReader(ctx, r, "runner")
		rd.Prefetch(whole)
		if _, found := Chunked(rd, keys.RunnerMetadataKey{RunnerID: rid}); found || !rerr.Is(rd.Err(), rerr.CodeStoreCorrupt) {
			t.Errorf("chunk gap: found %v, %v; want store.corrupt", found, rd.Err())
		}
		return nil, nil
	})
}
