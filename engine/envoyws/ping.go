package envoyws

import (
	"context"
	"time"

	openvoy "github.com/berthhq/berth/ops/envoy"
	proto "github.com/berthhq/berth/pkg/protocol/envoy"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Heartbeats (seed 001, pegboard-envoy's ping_task): a ToEnvoyPing at once and then every
// PingInterval plus 0–127 ms of jitter, on the timer heap (wsconn.Heartbeat); a socket with
// no pong for PingTimeout is closed with ws.timed_out. Pongs are recorded by the Server's
// shared workers (wsconn.Batcher), several to a transaction.

// ping sends one ToEnvoyPing, or closes the socket with ws.timed_out when no pong came for
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
	b, err := proto.EncodeToEnvoy(proto.ToEnvoyPing{Ts: time.Now().UnixMilli()}, c.version)
	if err != nil {
		c.fail(rerr.Internal(err))
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.s.o.PingTimeout) // a socket that takes no write for that long is as dead as one that does not pong
	defer cancel()
	if err := c.writeBytes(ctx, b); err != nil {
		c.fail(nil)
		return false
	}
	return true
}

// pong records a ToRivetPong: the socket's last pong time at once, and the envoy's ping (last
// ping, RTT in ms, load-balancer entry) through the pong workers.
func (c *conn) pong(m proto.ToRivetPong) {
	now := time.Now()
	c.pongMu.Lock()
	c.lastPong = now
	c.pongMu.Unlock()
	rtt := min(max(now.UnixMilli()-m.Ts, 0), int64(^uint32(0)))
	if c.s.o.Metrics != nil {
		c.s.o.Metrics.EnvoyPingRTT.Observe(float64(rtt) / 1000)
	}
	c.s.pongs.Push(pongJob{c: c, in: openvoy.UpdatePingInput{
		Namespace: c.nsID, EnvoyKey: c.key, ConnID: c.connID, RttMs: uint32(rtt), NowMs: now.UnixMilli(),
	}})
}

// pongJob is one pong waiting to be recorded.
type pongJob struct {
	c   *conn
	in  openvoy.UpdatePingInput
	err error // the pong's own outcome within its batch
}

// recordBatch records the pongs of batch in one transaction. Each is fenced by its own
// socket's connection id: one refused with an envoy error (stale socket, expired or unknown
// envoy) has written nothing and gets that error without failing the others. A store error
// retries or fails the whole batch. Then each socket acts on its pong's outcome.
func (s *Server) recordBatch(batch []pongJob) {
	_, err := s.o.DB.Transact(s.ctx, func(tx udb.Transaction) (any, error) {
		for i := range batch {
			j := &batch[i]
			_, j.err = openvoy.UpdatePing(s.ctx, tx, j.in)
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
		batch[i].c.afterPong(batch[i].err)
	}
}

// afterPong acts on the outcome of the socket's recorded pong: a stale socket (a newer one
// registered the envoy, maybe on another node) is evicted with 1000 ws.eviction; the socket
// of an expired envoy is closed with 1011 envoy.expired, so that the envoy reconnects and
// registers again.
func (c *conn) afterPong(err error) {
	switch {
	case err == nil:
	case rerr.Is(err, "envoy", "stale_connection"):
		c.closeWith(rerr.WS("eviction"))
	case rerr.Is(err, "envoy", "expired"), rerr.Is(err, "envoy", "not_found"):
		c.fail(err)
	case c.s.ctx.Err() != nil:
	default:
		c.s.o.Log.Warn("envoy socket: update ping", "envoy_key", c.key, "ray_id", c.ray, "error", err)
	}
}
