package pegboard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	oprunner "github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// countingDB counts the transactions run through it.
type countingDB struct {
	udb.Database
	n atomic.Int64
}

func (d *countingDB) Transact(ctx context.Context, f func(udb.Transaction) (any, error)) (any, error) {
	d.n.Add(1)
	return d.Database.Transact(ctx, f)
}

// batchWorld is a store with a pool "pool", its config and runners, and an Actors on it.
type batchWorld struct {
	t   *testing.T
	db  *countingDB
	ns  id.ID
	p   *Actors
	rid []id.ID
}

func newBatchWorld(t *testing.T, runners int, slots uint32) *batchWorld {
	ctx := context.Background()
	raw, err := udb.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	w := &batchWorld{t: t, db: &countingDB{Database: raw}, ns: id.New(1)}
	err = udb.Update(ctx, raw, func(tx udb.Transaction) error {
		if _, err := runnerconfig.Ensure(ctx, tx, runnerconfig.EnsureInput{Namespace: w.ns, Name: "pool"}); err != nil {
			return err
		}
		for i := range runners {
			out, err := oprunner.Register(ctx, tx, oprunner.RegisterInput{Namespace: w.ns, Name: "pool", Key: fmt.Sprint("r", i),
				Version: 1, TotalSlots: slots, ProtocolVersion: 7, ConnID: id.New(1), NewRunnerID: id.New(1), NowMs: now()})
			if err != nil {
				return err
			}
			w.rid = append(w.rid, out.RunnerID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w.p = NewActors(ActorsOptions{DB: w.db, Watchers: NewWatchers(), Log: quiet, Config: actor.DefaultConfig(), Label: 1, Datacenter: "dc"})
	return w
}

func (w *batchWorld) input(key *string) actor.CreateInput {
	return actor.CreateInput{Namespace: w.ns, NamespaceName: "default", Name: "counter", Key: key, Selector: "pool", CrashPolicy: "sleep"}
}

// slotsTaken is the number of slots taken on the world's runners, from their counts.
func (w *batchWorld) slotsTaken(total uint32) int {
	w.t.Helper()
	taken := 0
	err := udb.View(context.Background(), w.db.Database, func(r udb.ReadTransaction) error {
		for _, rid := range w.rid {
			left, _, err := keys.Get(context.Background(), r, keys.RunnerRemainingSlotsKey{RunnerID: rid})
			if err != nil {
				return err
			}
			taken += int(total - left)
		}
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return taken
}

// Creates running at once share transactions, and every one of them is carried out: each
// actor is distinct, placed, and holds exactly one slot.
func TestConcurrentCreatesShareTransactions(t *testing.T) {
	const n, slots = 200, 1000
	w := newBatchWorld(t, 4, slots)
	var wg sync.WaitGroup
	ids := make([]actor.Actor, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = w.p.Create(context.Background(), w.input(nil))
		}()
	}
	wg.Wait()
	seen := map[id.ID]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("create %d: %v", i, errs[i])
		}
		if seen[ids[i].ActorID] {
			t.Fatalf("actor %s returned twice", ids[i].ActorID)
		}
		seen[ids[i].ActorID] = true
	}
	if got := w.slotsTaken(slots); got != n {
		t.Errorf("%d slots taken after %d creates", got, n)
	}
	if txns := w.db.n.Load(); txns >= n {
		t.Errorf("%d creates ran in %d transactions; want them batched", n, txns)
	} else {
		t.Logf("%d concurrent creates ran in %d transactions", n, txns)
	}
}

// A create refused for its own reason (a key already taken) does not fail the creates it
// shares a transaction with; of the creates with one key, exactly one succeeds.
func TestBatchedCreateRefusedAlone(t *testing.T) {
	const n = 40
	w := newBatchWorld(t, 2, 100)
	shared := "shared"
	var wg sync.WaitGroup
	var created, duplicate, unique atomic.Int64
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := w.p.Create(context.Background(), w.input(&shared))
			switch {
			case err == nil:
				created.Add(1)
			case rerr.Is(err, rerr.CodeActorDuplicateKey):
				duplicate.Add(1)
			default:
				t.Errorf("create with the shared key: %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			key := fmt.Sprint("own-", i)
			if _, err := w.p.Create(context.Background(), w.input(&key)); err != nil {
				t.Errorf("create with key %s: %v", key, err)
				return
			}
			unique.Add(1)
		}()
	}
	wg.Wait()
	if created.Load() != 1 || duplicate.Load() != n-1 || unique.Load() != n {
		t.Errorf("shared key: %d created, %d duplicate_key; own keys: %d created; want 1, %d, %d",
			created.Load(), duplicate.Load(), unique.Load(), n-1, n)
	}
	if got := w.slotsTaken(100); got != n+1 {
		t.Errorf("%d slots taken, want %d", got, n+1)
	}
}

// When a batch's transaction fails for one op's sake (an error that is not the client's),
// the others are run again alone and succeed; the failing one gets its error.
func TestBatchFailureRunsOpsAlone(t *testing.T) {
	w := newBatchWorld(t, 1, 10)
	b := &w.p.creates
	broken := errors.New("broken op")
	release := hold(b) // the ops below queue up and run as one batch
	ops := make([]*batchOp, 3)
	for i := range ops {
		ops[i] = b.enqueue(context.Background(), 0, actor.Reads{}, func(_ context.Context, tx udb.Transaction) (any, actor.Effects, error) {
			if i == 1 {
				return nil, actor.Effects{}, broken
			}
			tx.Set([]byte(fmt.Sprint("op-", i)), []byte("x"))
			return i, actor.Effects{}, nil
		})
	}
	close(release)
	var ok, failed int
	for _, r := range ops {
		<-r.done
		switch {
		case errors.Is(r.err, broken):
			failed++
		case r.err == nil:
			ok++
		default:
			t.Errorf("op: %v", r.err)
		}
	}
	if ok != 2 || failed != 1 {
		t.Errorf("%d ops succeeded and %d failed; want 2 and 1", ok, failed)
	}
	for _, i := range []int{0, 2} {
		v, err := udb.ReadTransact(context.Background(), w.db.Database, func(r udb.ReadTransaction) ([]byte, error) {
			return r.Get(context.Background(), []byte(fmt.Sprint("op-", i)))
		})
		if err != nil || v == nil {
			t.Errorf("op %d's write is missing: %v", i, err)
		}
	}
}

// hold keeps b busy with an op until release is closed, so that the ops queued meanwhile
// run as one batch.
func hold(b *batcher) (release chan struct{}) {
	started, release := make(chan struct{}), make(chan struct{})
	b.enqueue(context.Background(), 0, actor.Reads{}, func(context.Context, udb.Transaction) (any, actor.Effects, error) {
		close(started)
		<-release
		return nil, actor.Effects{}, nil
	})
	<-started
	return release
}

// prefetchLog records, in order, the prefetches of the transactions run through it and the
// events its ops add.
type prefetchLog struct {
	udb.Database
	mu     sync.Mutex
	events []string
}

func (d *prefetchLog) add(e string) {
	d.mu.Lock()
	d.events = append(d.events, e)
	d.mu.Unlock()
}

func (d *prefetchLog) Transact(ctx context.Context, f func(udb.Transaction) (any, error)) (any, error) {
	return d.Database.Transact(ctx, func(tx udb.Transaction) (any, error) { return f(prefetchTx{tx, d}) })
}

type prefetchTx struct {
	udb.Transaction
	log *prefetchLog
}

func (t prefetchTx) Prefetch(ctx context.Context, keys [][]byte, ranges []udb.KeyRange) {
	e := "prefetch"
	for _, k := range keys {
		e += " " + string(k)
	}
	for _, r := range ranges {
		e += " " + string(r.Begin) + "-" + string(r.End)
	}
	t.log.add(e)
	t.Transaction.Prefetch(ctx, keys, ranges)
}

// A batch fetches the first reads of all its ops in one prefetch, before any of them runs.
func TestBatchPrefetchesFirstReads(t *testing.T) {
	w := newBatchWorld(t, 1, 10)
	log := &prefetchLog{Database: w.db}
	p := NewActors(ActorsOptions{DB: log, Watchers: NewWatchers(), Log: quiet, Config: actor.DefaultConfig(), Label: 1, Datacenter: "dc"})
	b := &p.creates
	release := hold(b) // the ops below queue up and run as one batch
	log.mu.Lock()
	log.events = nil // the holding op's own batch
	log.mu.Unlock()
	ops := make([]*batchOp, 3)
	for i := range ops {
		reads := actor.Reads{Keys: [][]byte{fmt.Appendf(nil, "k%d", i)}, Ranges: []udb.KeyRange{{Begin: fmt.Appendf(nil, "b%d", i), End: fmt.Appendf(nil, "e%d", i)}}}
		ops[i] = b.enqueue(context.Background(), 0, reads, func(context.Context, udb.Transaction) (any, actor.Effects, error) {
			log.add(fmt.Sprint("run ", i))
			return nil, actor.Effects{}, nil
		})
	}
	close(release)
	for _, op := range ops {
		<-op.done
		if op.err != nil {
			t.Fatal(op.err)
		}
	}
	want := []string{"prefetch k0 k1 k2 b0-e0 b1-e1 b2-e2", "run 0", "run 1", "run 2"}
	if !slices.Equal(log.events, want) {
		t.Errorf("events %q, want %q", log.events, want)
	}
}
