package runnerws

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/metrics"
	oprunner "github.com/berthhq/berth/ops/runner"
	proto "github.com/berthhq/berth/pkg/protocol/runner"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Heartbeats cost no goroutine per socket. A socket's pings run on the runtime's timer heap
// (time.AfterFunc): each ping is a short-lived goroutine that writes one frame and schedules
// the next. A pong is recorded by a few shared workers (pongQueue), several pongs to a
// transaction, so that the socket's reader never runs a transaction for it: the reader's
// stack stays small, and a burst of pongs costs a few commits, not one each.

// pinger is a socket's heartbeat schedule.
type pinger struct {
	mu      sync.Mutex
	timer   *time.Timer    // the next ping; nil before the first
	stopped bool           // no ping is scheduled after this
	running sync.WaitGroup // the scheduled or running ping, if any
}

// pingDelay is the time to the next ping: PingInterval plus 0–127 ms of jitter.
func (c *conn) pingDelay() time.Duration {
	return c.s.o.PingInterval + time.Duration(rand.IntN(128))*time.Millisecond
}

// startPings schedules the socket's pings; stopPings ends them.
func (c *conn) startPings() {
	p := &c.pinger
	p.mu.Lock()
	defer p.mu.Unlock()
	p.scheduleLocked(c.pingDelay(), c.ping)
}

func (p *pinger) scheduleLocked(d time.Duration, f func()) {
	if p.stopped {
		return
	}
	p.running.Add(1)
	if p.timer == nil {
		p.timer = time.AfterFunc(d, f)
	} else {
		p.timer.Reset(d)
	}
}

// stopPings cancels the next ping and waits for one that is running; the socket is closed
// first, so that its write ends at once.
func (c *conn) stopPings() {
	p := &c.pinger
	p.mu.Lock()
	p.stopped = true
	if p.timer != nil && p.timer.Stop() {
		p.running.Done() // it will not run
	}
	p.mu.Unlock()
	p.running.Wait()
}

// ping sends one ToClientPing and schedules the next, or closes the socket with ws.timed_out
// when no pong came for PingTimeout.
func (c *conn) ping() {
	defer c.pinger.running.Done()
	select {
	case <-c.done:
		return
	default:
	}
	c.pongMu.Lock()
	last := c.lastPong
	c.pongMu.Unlock()
	if time.Since(last) > c.s.o.PingTimeout {
		c.fail(rerr.WS("timed_out"))
		return
	}
	b, err := proto.EncodeToClient(proto.ToClientPing{Ts: time.Now().UnixMilli()}, c.version)
	if err != nil {
		c.fail(rerr.Internal(err))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.s.o.PingInterval)
	err = c.ws.Write(ctx, websocket.MessageBinary, b)
	cancel()
	if err != nil {
		c.fail(nil)
		return
	}
	c.pinger.mu.Lock()
	defer c.pinger.mu.Unlock()
	c.pinger.scheduleLocked(c.pingDelay(), c.ping)
}

// pong records a ToServerPong: the socket's last pong time at once, and the runner's ping
// in a transaction of the Server's pong workers.
func (c *conn) pong(m proto.ToServerPong) {
	now := time.Now()
	c.pongMu.Lock()
	c.lastPong = now
	c.pongMu.Unlock()
	rtt := max(now.UnixMilli()-m.Ts, 0)
	rtt = min(rtt, int64(^uint32(0)))
	c.s.pongs.push(c.s, pongJob{c: c, at: now, in: oprunner.UpdatePingInput{
		RunnerID: c.runnerID, ConnID: c.connID, RttMs: uint32(rtt), NowMs: now.UnixMilli(),
	}})
}

// pongJob is one pong waiting to be recorded.
type pongJob struct {
	c   *conn
	at  time.Time // when it arrived; the ping transaction metric counts from here
	in  oprunner.UpdatePingInput
	out oprunner.UpdatePingOutput
	err error // the pong's own outcome within its batch
}

// Pong workers: at most maxPongWorkers record pongs at once, each up to maxPongBatch in one
// transaction. A reader waits while maxPongQueue pongs are queued.
const (
	maxPongWorkers = 4
	maxPongBatch   = 64
	maxPongQueue   = 8192
)

// pongQueue holds the pongs waiting for a worker. Workers start when pongs come and end
// when none is left; each is counted in the Server's WaitGroup, so Close waits for it.
type pongQueue struct {
	mu      sync.Mutex
	notFull sync.Cond // on mu (set by New); signalled when pongs are taken
	jobs    []pongJob
	workers int
}

// push queues j, starting a worker if fewer than maxPongWorkers run.
func (q *pongQueue) push(s *Server, j pongJob) {
	q.mu.Lock()
	for len(q.jobs) >= maxPongQueue {
		q.notFull.Wait()
	}
	q.jobs = append(q.jobs, j)
	start := q.workers < maxPongWorkers
	if start {
		q.workers++
		s.wg.Add(1) // the pushing handler holds the WaitGroup: Close is still waiting
	}
	q.mu.Unlock()
	if start {
		go s.recordPongs()
	}
}

// take removes up to maxPongBatch pongs; none means the worker ends, no longer counted.
func (q *pongQueue) take() []pongJob {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.jobs), maxPongBatch)
	if n == 0 {
		q.workers--
		q.jobs = nil // drop the array a burst grew
		return nil
	}
	batch := make([]pongJob, n)
	copy(batch, q.jobs)
	clear(q.jobs[:n])
	q.jobs = q.jobs[n:]
	q.notFull.Broadcast()
	return batch
}

// recordPongs is a pong worker: it records queued pongs until none is left.
func (s *Server) recordPongs() {
	defer s.wg.Done()
	for {
		batch := s.pongs.take()
		if batch == nil {
			return
		}
		s.recordBatch(batch)
		for i := range batch {
			batch[i].c.afterPong(batch[i])
		}
	}
}

// recordBatch records the pongs of batch in one transaction. Each pong is fenced by its
// own socket's connection id: one that fails with a runner error (a stale socket, an
// unknown or corrupt runner) has written nothing and gets that error, without failing the
// others. A store error retries or fails the whole batch, and each pong gets it.
func (s *Server) recordBatch(batch []pongJob) {
	_, err := s.o.DB.Transact(s.ctx, func(tx udb.Transaction) (any, error) {
		for i := range batch {
			j := &batch[i]
			j.out, j.err = oprunner.UpdatePing(s.ctx, tx, j.in)
			if _, ok := rerr.As(j.err); j.err != nil && !ok {
				return nil, j.err
			}
		}
		return nil, nil
	})
	for i := range batch {
		if err != nil {
			batch[i].err = err
		}
		metrics.Since(s.o.Metrics.RunnerPingTxn, batch[i].at)
	}
}

// afterPong acts on the outcome of the socket's recorded pong j.
func (c *conn) afterPong(j pongJob) {
	switch err := j.err; {
	case err == nil:
		if j.out.Indexed && c.eligibleAgain(j.out.PrevPingTs, j.at) {
			c.s.o.Runners.Actors().MovePool(c.pool)
		}
	case rerr.Is(err, "runner", "stale_connection"):
		// A newer socket took the runner over; its eviction of this one is under way.
		c.closeWith(rerr.WS("eviction"), true)
	case c.s.ctx.Err() != nil:
	default:
		c.s.o.Log.Warn("runner socket: update ping", "runner_id", c.runnerID.String(), "ray_id", c.ray, "error", err)
	}
}
