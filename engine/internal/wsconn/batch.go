package wsconn

import (
	"sync"
	"time"
)

// Batcher hands queued jobs (pongs to record) to a few shared workers, several jobs to a
// call of Run (one transaction), so that a socket's reader never runs a transaction for
// them: the reader's stack stays small, and a burst costs a few commits, not one each.
// Workers start when jobs come and end when none is left.
type Batcher[T any] struct {
	// Run handles one batch; it is called by at most Workers goroutines at once.
	Run func(batch []T)
	// WG counts the workers, so that its owner's Close waits for them.
	WG *sync.WaitGroup
	// Workers, Batch and Queue bound the workers, the jobs of one Run and the jobs waiting
	// (Push blocks while Queue are); zero means 4, 64 and 8192.
	Workers, Batch, Queue int
	// Linger, when set, is how long a worker that just ran a batch short of Batch waits
	// for more jobs before taking the next: under steady load, fewer and larger batches
	// (fewer commits and fsyncs) for at most Linger more latency. A lone job is never
	// delayed.
	Linger time.Duration
	// Done, when set, cuts a linger short once closed (its owner is closing).
	Done <-chan struct{}

	mu      sync.Mutex
	notFull *sync.Cond // on mu; signalled when jobs are taken
	jobs    []T
	workers int
}

// Push queues j, starting a worker if fewer than Workers run. The caller must hold WG (be
// counted in it), so that the owner's Close is still waiting when a worker is added.
func (q *Batcher[T]) Push(j T) {
	q.mu.Lock()
	if q.notFull == nil {
		q.notFull = sync.NewCond(&q.mu)
	}
	for len(q.jobs) >= or(q.Queue, 8192) {
		q.notFull.Wait()
	}
	q.jobs = append(q.jobs, j)
	start := q.workers < or(q.Workers, 4)
	if start {
		q.workers++
		q.WG.Add(1)
	}
	q.mu.Unlock()
	if start {
		go q.work()
	}
}

func or(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

// take removes up to Batch jobs; none means the worker ends, no longer counted.
func (q *Batcher[T]) take() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.jobs), or(q.Batch, 64))
	if n == 0 {
		q.workers--
		q.jobs = nil // drop the array a burst grew
		return nil
	}
	batch := make([]T, n)
	copy(batch, q.jobs)
	clear(q.jobs[:n])
	q.jobs = q.jobs[n:]
	q.notFull.Broadcast()
	return batch
}

func (q *Batcher[T]) work() {
	defer q.WG.Done()
	for {
		batch := q.take()
		if batch == nil {
			return
		}
		q.Run(batch)
		if q.Linger > 0 && len(batch) < or(q.Batch, 64) {
			q.linger()
		}
	}
}

// linger waits Linger, or until Done is closed.
func (q *Batcher[T]) linger() {
	t := time.NewTimer(q.Linger)
	defer t.Stop()
	select {
	case <-t.C:
	case <-q.Done:
	}
}
