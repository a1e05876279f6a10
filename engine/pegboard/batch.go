package pegboard

import (
	"context"
	"sync"
	"time"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Concurrent creates on one node share transactions. Each create places its actor on a
// runner and takes one of the runner's slots, so creates running side by side in their own
// transactions conflict on the slot counts of the few runners they choose, and the losers
// retry with backoff: with 16 clients and 4 runners most of a create's time went to that. A
// batch runs the creates queued meanwhile one after the other in one transaction, where they
// see each other's writes instead of conflicting, and shares one commit among them.
//
// A batch starts as soon as the previous one has committed; a create that finds no batch
// running starts one at once, so an idle engine adds no latency.
//
// The creates of a batch run one after the other, each waiting on its reads in turn, so
// on a store whose every read is a round trip to a server (PostgreSQL) a read of one create
// holds up all that follow it. The reads a create begins with whatever the store holds
// (actor.CreateReads: the key index, the new id, the pool's config, queue and allocation
// index) are fetched for the whole batch in one round trip before its creates run (udb
// Prefetch), and a slot is taken from the allocation index entry read there
// (runner.TakeSlot), so a batch of creates on runners waits on no read of its own.

const (
	// maxBatch bounds the creates of one transaction.
	maxBatch = 64
	// maxBatchBytes bounds the inputs of one transaction's creates, well under the store's
	// 10 MB transaction limit (an input may be 4 MiB: such a create goes alone).
	maxBatchBytes = 1 << 20
	// batchTimeout bounds a batch's transaction, retries included; the batch does not end
	// with the request that happened to start it.
	batchTimeout = 30 * time.Second
)

// batchOp is one create in a batch. run must return a client error (an *rerr.Error with a
// 4xx status) only before it writes anything: the batch then carries on without it. Its ctx
// is the batch's, not the request's: the transaction is shared.
type batchOp struct {
	run   func(ctx context.Context, tx udb.Transaction) (any, actor.Effects, error)
	size  int         // bytes it may write beyond its fixed keys (the input)
	reads actor.Reads // what run reads first, fetched ahead

	done chan struct{} // closed once res and err are set
	res  any
	err  error
}

// batcher queues ops and runs them in batches, one batch at a time.
type batcher struct {
	p *Actors

	mu      sync.Mutex
	queue   []*batchOp
	running bool // a goroutine is running batches
}

// do runs op's function in a batch and returns its result, or ctx's error if ctx ends
// first (the op may still be carried out, as a create whose client went away).
func (b *batcher) do(ctx context.Context, size int, reads actor.Reads, run func(ctx context.Context, tx udb.Transaction) (any, actor.Effects, error)) (any, error) {
	op := b.enqueue(ctx, size, reads, run)
	select {
	case <-op.done:
		return op.res, op.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// enqueue queues an op, starting a goroutine to run batches if none is running.
func (b *batcher) enqueue(ctx context.Context, size int, reads actor.Reads, run func(ctx context.Context, tx udb.Transaction) (any, actor.Effects, error)) *batchOp {
	op := &batchOp{run: run, size: size, reads: reads, done: make(chan struct{})}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.queue = append(b.queue, op)
	if !b.running {
		b.running = true
		go b.drain(context.WithoutCancel(ctx))
	}
	return op
}

// drain runs batches until the queue is empty.
func (b *batcher) drain(ctx context.Context) {
	for {
		b.mu.Lock()
		n, bytes := 0, 0
		for n < len(b.queue) && n < maxBatch && (n == 0 || bytes+b.queue[n].size <= maxBatchBytes) {
			bytes += b.queue[n].size
			n++
		}
		if n == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		batch := append([]*batchOp(nil), b.queue[:n]...)
		b.queue = append(b.queue[:0], b.queue[n:]...)
		b.mu.Unlock()
		b.run(ctx, batch)
	}
}

// run carries out one batch. Should its transaction fail for a reason of one op's (not a
// conflict: those are retried), each op is run again in a transaction of its own, so that
// the others are not failed with it.
func (b *batcher) run(ctx context.Context, batch []*batchOp) {
	ctx, cancel := context.WithTimeout(ctx, batchTimeout)
	defer cancel()
	if len(batch) > 1 {
		type outcome struct {
			res any
			err error
		}
		out, err := Transact(ctx, b.p, func(tx udb.Transaction) ([]outcome, actor.Effects, error) {
			prefetch(ctx, tx, batch...)
			var eff actor.Effects
			out := make([]outcome, len(batch))
			for i, op := range batch {
				res, e, err := op.run(ctx, tx)
				if err != nil && !clientError(err) {
					return nil, actor.Effects{}, err
				}
				out[i] = outcome{res, err}
				eff.Merge(e)
			}
			return out, eff, nil
		})
		if err == nil {
			for i, op := range batch {
				op.res, op.err = out[i].res, out[i].err
				close(op.done)
			}
			return
		}
	}
	for _, op := range batch {
		op.res, op.err = Transact(ctx, b.p, func(tx udb.Transaction) (any, actor.Effects, error) {
			prefetch(ctx, tx, op)
			return op.run(ctx, tx)
		})
		close(op.done)
	}
}

// prefetch fetches the first reads of ops together, each once (the creates of one pool
// share its reads).
func prefetch(ctx context.Context, tx udb.Transaction, ops ...*batchOp) {
	var keys [][]byte
	var ranges []udb.KeyRange
	seenKeys, seenRanges := map[string]bool{}, map[[2]string]bool{}
	for _, op := range ops {
		for _, k := range op.reads.Keys {
			if !seenKeys[string(k)] {
				seenKeys[string(k)] = true
				keys = append(keys, k)
			}
		}
		for _, r := range op.reads.Ranges {
			if k := [2]string{string(r.Begin), string(r.End)}; !seenRanges[k] {
				seenRanges[k] = true
				ranges = append(ranges, r)
			}
		}
	}
	tx.Prefetch(ctx, keys, ranges)
}

// clientError reports whether err is the client's (a 4xx *rerr.Error).
func clientError(err error) bool {
	e, ok := rerr.As(err)
	return ok && e.Status >= 400 && e.Status < 500
}
