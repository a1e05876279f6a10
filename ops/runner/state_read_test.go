package runner

import (
	"fmt"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// A ping reads the runner's fields with one range read that skips the actor
// command subspace between them: a write to any field, present or absent,
// committed after the ping's read makes the ping conflict; a command stored
// for the runner does not.
func TestPingReadConflicts(t *testing.T) {
	cases := []struct {
		name     string
		write    func(tx udb.Transaction, rid id.ID)
		conflict bool
	}{
		{"remaining slots", func(tx udb.Transaction, rid id.ID) {
			keys.Set(tx, keys.RunnerRemainingSlotsKey{RunnerID: rid}, 3)
		}, true},
		{"drain ts, absent before", func(tx udb.Transaction, rid id.ID) {
			keys.Set(tx, keys.RunnerDrainTsKey{RunnerID: rid}, 1500)
		}, true},
		{"conn id, the last field", func(tx udb.Transaction, rid id.ID) {
			keys.Set(tx, keys.RunnerConnIDKey{RunnerID: rid}, id.New(1))
		}, true},
		{"create ts, the first field", func(tx udb.Transaction, rid id.ID) {
			keys.Set(tx, keys.RunnerCreateTsKey{RunnerID: rid}, 1000)
		}, true},
		{"a stored command", func(tx udb.Transaction, rid id.ID) {
			keys.Set(tx, keys.RunnerCommandKey{RunnerID: rid, ActorID: id.New(1), Generation: 1, Index: 7}, []byte{1, 2, 3})
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := opstest.Open(t)
			in := input(id.New(1), "pool", "k", 1000)
			rid := register(t, db, in).RunnerID
			ping := opstest.Begin(t, db)
			if _, err := UpdatePing(ctx, ping.Tx(), UpdatePingInput{RunnerID: rid, ConnID: in.ConnID, RttMs: 5, NowMs: 2000}); err != nil {
				t.Fatal(err)
			}
			opstest.Write(t, db, func(tx udb.Transaction) (struct{}, error) {
				c.write(tx, rid)
				return struct{}{}, nil
			})
			err := ping.Commit()
			if got := opstest.IsConflict(err); got != c.conflict || (err != nil && !got) {
				t.Fatalf("ping commit after writing %s: %v; want conflict %v", c.name, err, c.conflict)
			}
		})
	}
}

// BenchmarkUpdatePing is one ping transaction, with its commit, on the
// in-memory store, of 1,000 registered runners in turn (each ping rewrites
// keys of the runner, so one runner alone would pile up versions of them).
func BenchmarkUpdatePing(b *testing.B) {
	db := opstest.Open(b)
	ins := make([]RegisterInput, 1000)
	rids := make([]id.ID, len(ins))
	for i := range ins {
		ins[i] = input(id.New(1), "pool", fmt.Sprint("k", i), 1000)
		rids[i] = register(b, db, ins[i]).RunnerID
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		in := UpdatePingInput{RunnerID: rids[i%len(rids)], ConnID: ins[i%len(ins)].ConnID, RttMs: 5, NowMs: 2000 + int64(i)}
		_, err := udb.Transact(ctx, db, func(tx udb.Transaction) (UpdatePingOutput, error) {
			return UpdatePing(ctx, tx, in)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
