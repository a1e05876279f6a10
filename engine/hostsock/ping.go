package hostsock

import (
	"sync"
	"time"

	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Heartbeats cost no goroutine per socket: a socket's pings run on the runtime's timer heap
// (wsconn.Heartbeat), every PingInterval plus 0–127 ms of jitter. A pong is recorded by one
// shared worker (wsconn.Batcher), several pongs to a transaction, so that the socket's
// reader never runs a transaction for it. After a batch the worker lingers (pongLinger), so
// that a node commits its pongs about ten times per ping interval whatever its number of
// sockets (up to 64 pongs a commit) rather than once per pong; docs/scaling.md has the
// measured cost.

// pongLinger is how long the pong worker lingers after a batch: a tenth of the ping
// interval, but at most half of what is left of the eligible and lost thresholds once the
// interval and its jitter are taken off, so that a host that answers every ping is still
// recorded well inside them (a pong is recorded at most a linger later). Never under the
// 0.5 ms that lets pongs arriving together share a commit.
func pongLinger(runner, envoy Timing, cfg actor.Config) time.Duration {
	linger := func(t Timing, eligible time.Duration) time.Duration {
		slack := min(eligible, t.LostThreshold) - t.PingInterval - wsconn.MaxJitter
		return min(t.PingInterval/10, slack/2)
	}
	return max(min(linger(runner, cfg.RunnerEligibleThreshold), linger(envoy, cfg.EnvoyEligibleThreshold)), 500*time.Microsecond)
}

// ping sends one ping, or closes the socket with ws.timed_out when no pong came for
// PingTimeout; it reports whether to ping again.
func (c *conn) ping() bool {
	select {
	case <-c.done:
		return false
	default:
	}
	c.pongMu.Lock()
	last := c.lastPong
	c.pongMu.Unlock()
	if time.Since(last) > c.t.PingTimeout {
		c.fail(rerr.WSTimedOut())
		return false
	}
	if err := c.send(pingMsg{ts: time.Now().UnixMilli()}); err != nil {
		c.fail(nil)
		return false
	}
	return true
}

// pong takes the host's answer to the ping sent at ts: the socket's last pong time at
// once, and the host's ping in a transaction of the pong workers.
func (c *conn) pong(ts int64) {
	now := time.Now()
	c.pongMu.Lock()
	c.lastPong = now
	c.pongMu.Unlock()
	rtt := min(max(now.UnixMilli()-ts, 0), int64(^uint32(0)))
	c.s.pongs.Push(pongJob{c: c, at: now, rttMs: uint32(rtt)})
}

// pongJob is one pong waiting to be recorded.
type pongJob struct {
	c     *conn
	at    time.Time // when it arrived
	rttMs uint32
	began time.Time // when its batch's transaction began (after its wait in the queue)

	// What recording it found (protocol.recordPong).
	indexed    bool  // the host is in its pool's allocation index
	prevPingTs int64 // the host's previous ping, in ms
	err        error // the pong's own outcome within its batch
}

// recordPongs records the pongs of batch in one transaction, then each socket acts on its
// pong's outcome. Each pong is fenced by its own socket's connection id: one refused with a
// host error (a stale socket, an expired or unknown host) has written nothing and gets that
// error without failing the others; a store error fails the whole batch, and each pong
// gets it.
//
// A batch that conflicts is not retried whole: its pongs are recorded one transaction each
// (at once, so that they still share commits). Each pong reads its host serializably, so a
// batch conflicts with any slot taken on any of its hosts meanwhile; under steady creates a
// batch of 59 runners retried nine times over three seconds and its pings went unrecorded
// while the creates lasted, where one runner's pong rarely meets a take (docs/scaling.md).
func (s *Server) recordPongs(batch []pongJob) {
	began := time.Now()
	err := s.recordTogether(batch, len(batch) > 1)
	if len(batch) > 1 && udb.IsRetryableNotCommitted(err) {
		var wg sync.WaitGroup
		for i := range batch {
			wg.Go(func() { _ = s.recordTogether(batch[i:i+1], false) })
		}
		wg.Wait()
	}
	for i := range batch {
		batch[i].began = began
		batch[i].c.p.afterPong(batch[i].c, batch[i])
	}
}

// recordTogether records the pongs of batch in one transaction, setting each one's error,
// and returns the store's error, if any; once tries a single time.
func (s *Server) recordTogether(batch []pongJob, once bool) error {
	err := udb.Update(s.ctx, s.o.DB, func(tx udb.Transaction) error {
		if once {
			if err := tx.Options().SetRetryLimit(0); err != nil {
				return err
			}
		}
		for i := range batch {
			j := &batch[i]
			j.err = j.c.p.recordPong(s.ctx, tx, j)
			if _, ok := rerr.As(j.err); j.err != nil && !ok {
				return j.err
			}
		}
		return nil
	})
	if err != nil {
		for i := range batch {
			batch[i].err = err
		}
	}
	return err
}

// pongRefused acts on the refusal of a recorded pong common to all hosts: a stale socket
// (a newer one registered the host, maybe on another node) is evicted with 1000
// ws.eviction; nothing is logged while the server closes. It reports whether err was
// handled.
func (c *conn) pongRefused(err error) bool {
	switch {
	case stale(err):
		c.closeWith(evicted, true)
	case c.s.ctx.Err() != nil:
	default:
		return false
	}
	return true
}
