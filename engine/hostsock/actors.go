package hostsock

import (
	"github.com/berthhq/berth/ops/actor"
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

// ackCommands clears the commands the host acknowledged.
func (c *conn) ackCommands(cps []actor.Checkpoint) {
	if err := c.s.o.Actors.HostAckCommands(c.s.ctx, c.host, cps); err != nil && c.s.ctx.Err() == nil {
		c.s.o.Log.Warn(c.p.info().kind+" socket: ack commands", c.logAttrs("error", err)...)
	}
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
