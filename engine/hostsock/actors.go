package hostsock

import (
	"sync"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
)

// The actor side of a host socket: commands out (replayed after registration, then live),
// events and command acknowledgements in, all through the lifecycle (engine/pegboard).

// replay runs once the socket is registered and reachable: the stored commands the host
// must get again (starts not confirmed, stops under way) go first, then those held
// meanwhile (without duplicates), and the pool's waiting actors may now be placed here.
func (c *conn) replay() {
	replay, err := c.s.o.Actors.HostReplay(c.s.ctx, c.host)
	if err != nil && c.s.ctx.Err() == nil {
		c.s.o.Log.Warn(c.p.info().kind+" socket: replay commands", c.logAttrs("error", err)...)
	}
	c.cmds.Open(replay)
	c.s.o.Actors.MovePool(c.pool)
}

// events applies the host's events and acknowledges them in one batch.
func (c *conn) events(evs []actor.Event) {
	acks, err := c.s.o.Actors.HostEvents(c.s.ctx, c.host, evs)
	if err != nil {
		if c.s.ctx.Err() == nil {
			c.s.o.Log.Warn(c.p.info().kind+" socket: events", c.logAttrs("error", err)...)
		}
		return // not acknowledged: the host sends them again after a reconnect
	}
	if len(acks) > 0 {
		c.reply(ackEventsMsg(acks))
	}
}

// ackCommands clears the commands the host acknowledged, off the read loop: the socket's
// next message does not wait for the commit (a woken actor's first SQLite read comes right
// behind the acknowledgement of its start), and the acknowledgements that arrive while one
// commit is under way are merged into the next. The socket is released only after the last
// of them is committed; a host that reconnects before a commit gets those commands again,
// as after a crash of the engine.
func (c *conn) ackCommands(cps []actor.Checkpoint) {
	q := &c.acks
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending == nil {
		q.pending = make(map[ackKey]int64)
	}
	for _, cp := range cps {
		k := ackKey{cp.ActorID, cp.Generation}
		if i, ok := q.pending[k]; !ok || cp.Index > i {
			q.pending[k] = cp.Index
		}
	}
	if q.flushing || len(q.pending) == 0 {
		return
	}
	q.flushing = true
	q.flusher.Add(1)
	go c.flushAcks()
}

// flushAcks commits the pending acknowledgements until none is left.
func (c *conn) flushAcks() {
	q := &c.acks
	defer q.flusher.Done()
	for {
		q.mu.Lock()
		pending := q.pending
		q.pending = nil
		if len(pending) == 0 {
			q.flushing = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		cps := make([]actor.Checkpoint, 0, len(pending))
		for k, i := range pending {
			cps = append(cps, actor.Checkpoint{ActorID: k.actor, Generation: k.generation, Index: i})
		}
		if err := c.s.o.Actors.HostAckCommands(c.s.ctx, c.host, cps); err != nil && c.s.ctx.Err() == nil {
			c.s.o.Log.Warn(c.p.info().kind+" socket: ack commands", c.logAttrs("error", err)...)
		}
	}
}

// ackQueue holds a socket's command acknowledgements until they are committed.
type ackQueue struct {
	mu       sync.Mutex
	pending  map[ackKey]int64 // the highest index acknowledged per actor generation
	flushing bool             // a flushAcks runs
	flusher  sync.WaitGroup   // waited for before the socket is released
}

type ackKey struct {
	actor      id.ID
	generation uint32
}

// stopping handles the host's stopping message (protocol.stopping): a socket a newer one
// replaced is evicted.
func (c *conn) stopping() {
	switch err := c.p.stopping(c); {
	case err == nil:
	case stale(err):
		c.closeWith(evicted, true)
	case c.s.ctx.Err() != nil:
	default:
		c.s.o.Log.Warn(c.p.info().kind+" socket: stopping", c.logAttrs("error", err)...)
	}
}
