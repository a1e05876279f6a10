package runnerws

import (
	"context"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/metrics"
	oprunner "github.com/berthhq/berth/ops/runner"
	proto "github.com/berthhq/berth/pkg/protocol/runner"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Heartbeats cost no goroutine per socket: a socket's pings run on the runtime's timer heap
// (wsconn.Heartbeat), every PingInterval plus 0–127 ms of jitter. A pong is recorded by a few
// shared workers (wsconn.Batcher), several pongs to a transaction, so that the socket's reader
// never runs a transaction for it.

// ping sends one ToClientPing, or closes the socket with ws.timed_out when no pong came for
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
	if time.Since(last) > c.s.o.PingTimeout {
		c.fail(rerr.WS("timed_out"))
		return false
	}
	b, err := proto.EncodeToClient(proto.ToClientPing{Ts: time.Now().UnixMilli()}, c.version)
	if err != nil {
		c.fail(rerr.Internal(err))
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.s.o.PingTimeout) // a socket that takes no write for that long is as dead as one that does not pong
	err = c.ws.Write(ctx, websocket.MessageBinary, b)
	cancel()
	if err != nil {
		c.fail(nil)
		return false
	}
	return true
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
	c.s.o.Metrics.RunnerPingRTT.Observe(float64(rtt) / 1000)
	c.s.pongs.Push(pongJob{c: c, at: now, in: oprunner.UpdatePingInput{
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

// recordPongs is the pong workers' batch: recorded in one transaction, then each socket
// acts on its pong's outcome.
func (s *Server) recordPongs(batch []pongJob) {
	s.recordBatch(batch)
	for i := range batch {
		batch[i].c.afterPong(batch[i])
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
