package record

import (
	"context"
	"errors"
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
		if e, ok := rerr.As(rd.Err()); !ok || e.Key() != "store.corrupt" || e.Metadata["reason"] != "the record has no key" {
			t.Errorf("Err after a missing field = %v; want store.corrupt naming the first missing field", rd.Err())
		}
		Must(rd, keys.RunnerVersionKey{RunnerID: rid}, "version")
		err := rd.Err()
		if !rerr.Is(err, "store", "corrupt") || !errors.Is(err, keys.ErrBadValue) {
			t.Errorf("Err after a bad value = %v; want store.corrupt wrapping keys.ErrBadValue", err)
		}
		// Sticky: later reads return zero values and keep the first error.
		if v := Must(rd, keys.RunnerCreateTsKey{RunnerID: rid}, "create_ts"); v != 0 || rd.Err().Error() != err.Error() {
			t.Errorf("read after an error = %d, %v", v, rd.Err())
		}
		return nil, nil
	})
}
