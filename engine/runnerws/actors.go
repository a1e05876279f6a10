package runnerws

import (
	"context"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	proto "github.com/berthhq/berth/pkg/protocol/runner"
	"github.com/berthhq/berth/pkg/rerr"
)

// The actor side of a runner socket: commands out (live, and replayed after init), events
// and command acknowledgements in.

// SendCommands sends commands to runner rid if this server holds its socket, else (with
// Options.Cluster) to the node that does. Commands that come before the socket's
// ToClientInit is out wait for it, so the runner always sees its init first.
func (s *Server) SendCommands(rid id.ID, cmds []actor.Command) {
	if !s.SendCommandsHere(rid, cmds) && s.o.Cluster != nil {
		s.o.Cluster.SendCommands(actor.RunnerHost(rid), cmds)
	}
}

// SendCommandsHere is SendCommands for a socket on this node only; false when none is here.
func (s *Server) SendCommandsHere(rid id.ID, cmds []actor.Command) bool {
	s.mu.Lock()
	c := s.byRunner[rid]
	s.mu.Unlock()
	if c != nil {
		c.sendCommands(cmds)
	}
	return c != nil
}

// sendCommands writes cmds, or keeps them until the init is out (c.cmds).
func (c *conn) sendCommands(cmds []actor.Command) { c.cmds.Send(cmds) }

// writeCommands writes one ToClientCommands (c.cmds' writer). A failed write fails the
// socket: the runner reconnects and gets the stored commands again.
func (c *conn) writeCommands(cmds []actor.Command) {
	if err := c.write(proto.ToClientCommands(wsconn.CommandsToRunner(cmds))); err != nil {
		c.fail(nil)
	}
}

func checkpointOf(c actor.Command) actor.Checkpoint { return c.Checkpoint }

// write encodes m for the socket's protocol version and writes it.
func (c *conn) write(m proto.ToClient) error {
	b, err := proto.EncodeToClient(m, c.version)
	if err != nil {
		return rerr.Internal(err)
	}
	// Not c.s.ctx: a write whose context ends closes the connection without a close frame.
	ctx, cancel := context.WithTimeout(context.Background(), c.s.o.PingTimeout) // a socket that takes no write for that long is as dead as one that does not pong
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageBinary, b)
}

// afterInit runs once ToClientInit is out: the stored commands the runner must get again
// (starts not confirmed, stops under way) go first, then those held meanwhile, and the
// pool's waiting actors may now be placed here.
func (c *conn) afterInit(pool actor.Pool) {
	replay, err := c.s.o.Runners.Actors().HostReplay(c.s.ctx, actor.RunnerHost(c.runnerID))
	if err != nil && c.s.ctx.Err() == nil {
		c.s.o.Log.Warn("runner socket: replay commands", "runner_id", c.runnerID.String(), "ray_id", c.ray, "error", err)
	}
	c.cmds.Open(replay)
	c.s.o.Runners.Actors().MovePool(pool)
}

// events applies the runner's events and acknowledges them in one batch.
func (c *conn) events(evs proto.ToServerEvents) {
	acks, err := c.s.o.Runners.Actors().HostEvents(c.s.ctx, actor.RunnerHost(c.runnerID), wsconn.EventsFromRunner(evs))
	if err != nil {
		if c.s.ctx.Err() == nil {
			c.s.o.Log.Warn("runner socket: events", "runner_id", c.runnerID.String(), "ray_id", c.ray, "error", err)
		}
		return // not acknowledged: the runner sends them again after a reconnect
	}
	if len(acks) == 0 {
		return
	}
	if err := c.write(proto.ToClientAckEvents{LastEventCheckpoints: wsconn.CheckpointsToRunner(acks)}); err != nil {
		c.fail(nil)
	}
}

// ackCommands clears the commands the runner acknowledged.
func (c *conn) ackCommands(m proto.ToServerAckCommands) {
	err := c.s.o.Runners.Actors().HostAckCommands(c.s.ctx, actor.RunnerHost(c.runnerID), wsconn.CheckpointsFromRunner(m.LastCommandCheckpoints))
	if err != nil && c.s.ctx.Err() == nil {
		c.s.o.Log.Warn("runner socket: ack commands", "runner_id", c.runnerID.String(), "ray_id", c.ray, "error", err)
	}
}

// eligibleAgain reports whether a ping after prevPingTs makes the runner eligible again
// (its previous ping was older than the eligibility threshold), so its pool's queue may move.
func (c *conn) eligibleAgain(prevPingTs int64, now time.Time) bool {
	return now.UnixMilli()-prevPingTs > c.s.o.Runners.Actors().Config().RunnerEligibleThreshold.Milliseconds()
}
