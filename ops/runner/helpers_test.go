package runner

import (
	"context"
	"slices"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

var ctx = context.Background()

const dc = "test-dc"

// input is a registration of (ns, name, key) by a new socket at now.
func input(ns id.ID, name, key string, now int64) RegisterInput {
	return RegisterInput{
		Namespace: ns, Name: name, Key: key, Version: 1, TotalSlots: 10, ProtocolVersion: 7,
		ConnID: id.New(1), NewRunnerID: id.New(1), NowMs: now,
	}
}

func register(t testing.TB, db udb.Database, in RegisterInput) RegisterOutput {
	t.Helper()
	return opstest.Write(t, db, func(tx udb.Transaction) (RegisterOutput, error) { return Register(ctx, tx, in) })
}

func get(t testing.TB, db udb.Database, rid id.ID) Runner {
	t.Helper()
	return opstest.Read(t, db, func(r udb.ReadTransaction) (Runner, error) {
		return Get(ctx, r, GetInput{RunnerID: rid, Datacenter: dc})
	})
}

func ping(db udb.Database, rid, conn id.ID, now int64) (UpdatePingOutput, error) {
	return opstest.Transact(db, func(tx udb.Transaction) (UpdatePingOutput, error) {
		return UpdatePing(ctx, tx, UpdatePingInput{RunnerID: rid, ConnID: conn, RttMs: 3, NowMs: now})
	})
}

func list(db udb.Database, in ListForNsInput) (ListForNsOutput, error) {
	in.Datacenter = dc
	return opstest.Transact(db, func(tx udb.Transaction) (ListForNsOutput, error) { return ListForNs(ctx, tx, in) })
}

// allocEntries returns the allocation index of (ns, name), in index order.
func allocEntries(t testing.TB, db udb.Database, ns id.ID, name string) []keys.RunnerAllocIdxKey {
	t.Helper()
	return opstest.Read(t, db, func(r udb.ReadTransaction) ([]keys.RunnerAllocIdxKey, error) {
		begin, end := keys.RunnerAllocIdxKeyRange(ns, name)
		kvs, err := r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{}).All(ctx)
		if err != nil {
			return nil, err
		}
		var out []keys.RunnerAllocIdxKey
		for _, kv := range kvs {
			k, err := keys.UnpackRunnerAllocIdxKey(kv.Key)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, k)
		}
		return out, nil
	})
}

// checkAllocIndex checks the allocation index of (ns, name) against every
// runner of that name: exactly one entry, at its current fields, for each
// runner that is eligible and connected; none for any other.
func checkAllocIndex(t testing.TB, db udb.Database, ns id.ID, name string) {
	t.Helper()
	all, err := list(db, ListForNsInput{Namespace: ns, Name: name, IncludeStopped: true, Limit: MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	var want []keys.RunnerAllocIdxKey
	for _, run := range all.Runners {
		s := opstest.Read(t, db, func(r udb.ReadTransaction) (state, error) {
			s, _, err := readState(ctx, r, run.RunnerID)
			return s, err
		})
		if s.indexed() {
			want = append(want, s.allocKey())
		}
	}
	got := allocEntries(t, db, ns, name)
	slices.SortFunc(want, func(a, b keys.RunnerAllocIdxKey) int { return compareBytes(a.Pack(), b.Pack()) })
	if !slices.Equal(got, want) {
		t.Fatalf("allocation index of %q:\n got %+v\nwant %+v", name, got, want)
	}
}

func compareBytes(a, b []byte) int { return slices.Compare(a, b) }

// countingReader counts the reads made through a read view.
type countingReader struct {
	udb.ReadTransaction
	gets, ranges int
}

func (c *countingReader) Get(ctx context.Context, key []byte) ([]byte, error) {
	c.gets++
	return c.ReadTransaction.Get(ctx, key)
}

func (c *countingReader) GetRange(begin, end udb.KeySelector, opt udb.RangeOptions) udb.RangeIterator {
	c.ranges++
	return c.ReadTransaction.GetRange(begin, end, opt)
}

func (c *countingReader) Snapshot() udb.ReadTransaction { return c }
