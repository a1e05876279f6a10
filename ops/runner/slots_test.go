package runner

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// ListCandidates reads the allocation index in pages: runners pinged before the threshold
// are skipped across page boundaries, and the list ends at the first runner of an older
// version, whatever the limit.
func TestListCandidatesSkipsStaleRunners(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	reg := func(key string, version uint32, now int64) {
		in := input(ns, "pool", key, now)
		in.Version = version
		register(t, db, in)
	}
	// Pinged at 1000, the stale runners come first in the index (same share, older ping).
	for i := range 9 {
		reg(fmt.Sprint("stale", i), 2, 1000)
	}
	for i := range 3 {
		reg(fmt.Sprint("fresh", i), 2, 5000)
	}
	reg("older", 1, 6000)

	var fresh []id.ID
	for _, e := range allocEntries(t, db, ns, "pool") {
		if e.Version == 2 && e.LastPingTs >= 2000 {
			fresh = append(fresh, e.RunnerID)
		}
	}
	if len(fresh) != 3 {
		t.Fatalf("%d fresh runners in the index, want 3", len(fresh))
	}
	for _, limit := range []int{1, 2, 3, 10} {
		got := opstest.Read(t, db, func(r udb.ReadTransaction) ([]Candidate, error) {
			return ListCandidates(ctx, r, ns, "pool", 2000, limit)
		})
		var ids []id.ID
		for _, c := range got {
			ids = append(ids, c.RunnerID)
		}
		if want := fresh[:min(limit, len(fresh))]; !slices.Equal(ids, want) {
			t.Errorf("limit %d: candidates %v, want %v", limit, ids, want)
		}
	}
}

// countingTx counts the reads a transaction makes, through its snapshot view too.
type countingTx struct {
	udb.Transaction
	reads *countingReader
}

func newCountingTx(tx udb.Transaction) countingTx {
	return countingTx{tx, &countingReader{ReadTransaction: tx.Snapshot()}}
}

func (c countingTx) Get(ctx context.Context, key []byte) ([]byte, error) {
	return c.reads.Get(ctx, key)
}

func (c countingTx) GetRange(begin, end udb.KeySelector, opt udb.RangeOptions) udb.RangeIterator {
	return c.reads.GetRange(begin, end, opt)
}

func (c countingTx) Snapshot() udb.ReadTransaction { return c.reads }

// takeFirst takes a slot of the first candidate of pool (ns, name) for a new actor, as a
// create places one, and returns the point and range reads TakeSlot made.
func takeFirst(t *testing.T, db udb.Database, ns id.ID, name string, now int64) (gets, ranges int) {
	t.Helper()
	reads := opstest.Write(t, db, func(tx udb.Transaction) (countingReader, error) {
		cands, err := ListCandidates(ctx, tx, ns, name, 0, 1)
		if err != nil || len(cands) != 1 {
			return countingReader{}, fmt.Errorf("candidates %v: %w", cands, err)
		}
		ct := newCountingTx(tx)
		ok, err := TakeSlot(ctx, ct, TakeSlotInput{RunnerID: cands[0].RunnerID, ActorID: id.New(1), Generation: 1, PingedSinceMs: now - 1000, From: &cands[0]})
		if err == nil && !ok {
			err = fmt.Errorf("runner %v refused the actor", cands[0].RunnerID)
		}
		return *ct.reads, err
	})
	return reads.gets, reads.ranges
}

// A slot taken from the candidate's index entry reads none of the runner's fields: for a
// runner of at most 1,000 slots the entry holds its remaining count, a larger runner's
// entry may hold a stale one (it moves only when the share of thousandths does), so the
// stored count is read, one point read. Either way the stored count and the entry's key come
// out as the runner's fields say, and a small runner's entry holds its count.
func TestTakeSlotFromEntry(t *testing.T) {
	for _, tc := range []struct {
		slots uint32
		gets  int
	}{{10, 0}, {1000, 0}, {2000, 1}, {100_000, 1}} {
		t.Run(fmt.Sprint(tc.slots, " slots"), func(t *testing.T) {
			db := opstest.Open(t)
			ns := id.New(1)
			in := input(ns, "pool", "k", 1000)
			in.TotalSlots = tc.slots
			rid := register(t, db, in).RunnerID
			for i := range uint32(3) {
				if gets, ranges := takeFirst(t, db, ns, "pool", 1000); gets != tc.gets || ranges != 0 {
					t.Errorf("take %d: %d point and %d range reads, want %d and none", i+1, gets, ranges, tc.gets)
				}
				if got, want := get(t, db, rid).RemainingSlots, tc.slots-i-1; got != want {
					t.Fatalf("take %d: %d slots left, want %d", i+1, got, want)
				}
				checkAllocIndex(t, db, ns, "pool")
				s := opstest.Read(t, db, func(r udb.ReadTransaction) (state, error) {
					s, _, err := readState(ctx, r, rid)
					return s, err
				})
				v := opstest.Read(t, db, func(r udb.ReadTransaction) (keys.RunnerAllocIdxValue, error) {
					v, _, err := keys.Get(ctx, r, s.allocKey())
					return v, err
				})
				if tc.slots <= entryCountedSlots && v != s.allocValue() { // a larger one's lags
					t.Fatalf("take %d: index entry holds %+v, want %+v", i+1, v, s.allocValue())
				}
			}
		})
	}
}

// A slot taken from the index entry is serializable: a ping, a drain or another placement
// on the runner committed meanwhile makes the take's transaction conflict, for a large
// runner too, whose entry a placement need not move.
func TestTakeSlotFromEntryConflicts(t *testing.T) {
	for _, slots := range []uint32{10, 100_000} {
		for _, other := range []string{"ping", "drain", "take"} {
			t.Run(fmt.Sprint(slots, " slots, ", other), func(t *testing.T) { takeRacing(t, slots, other) })
		}
	}
}

// takeRacing takes a slot from the index entry of a runner of slots slots and commits it
// after the other op, which must make it conflict.
func takeRacing(t *testing.T, slots uint32, other string) {
	db := opstest.Open(t)
	ns := id.New(1)
	in := input(ns, "pool", "k", 1000)
	in.TotalSlots = slots
	rid := register(t, db, in).RunnerID
	held := opstest.Begin(t, db)
	cands, err := ListCandidates(ctx, held.Tx(), ns, "pool", 0, 1)
	if err != nil || len(cands) != 1 {
		t.Fatalf("candidates %v: %v", cands, err)
	}
	ok, err := TakeSlot(ctx, held.Tx(), TakeSlotInput{RunnerID: rid, ActorID: id.New(1), Generation: 1, From: &cands[0]})
	if err != nil || !ok {
		t.Fatalf("TakeSlot = %v, %v", ok, err)
	}
	switch other {
	case "ping":
		_, err = ping(db, rid, in.ConnID, 2000)
	case "drain":
		_, err = opstest.Transact(db, func(tx udb.Transaction) (DrainOutput, error) {
			return Drain(ctx, tx, DrainInput{RunnerID: rid, NowMs: 2000})
		})
	case "take": // through the runner's fields, as a build without takeFromEntry does
		_, err = opstest.Transact(db, func(tx udb.Transaction) (bool, error) {
			return TakeSlot(ctx, tx, TakeSlotInput{RunnerID: rid, ActorID: id.New(1), Generation: 1})
		})
	}
	if err != nil {
		t.Fatalf("%s: %v", other, err)
	}
	if err := held.Commit(); !opstest.IsConflict(err) {
		t.Fatalf("take committed after a %s: %v, want a conflict", other, err)
	}
}
