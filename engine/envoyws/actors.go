package envoyws

import (
	"context"
	"time"

	"github.com/berthhq/berth/engine/internal/kvserve"
	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/protocol/bridge"
	proto "github.com/berthhq/berth/pkg/protocol/envoy"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// The actor side of an envoy socket: commands out (live, and replayed after registration),
// events, command acknowledgements and KV requests in. Events and KV requests are
// translated to the runner protocol's shapes (pkg/protocol/bridge) and go through the same
// lifecycle and KV code as a runner's.

// host is the socket's envoy as an actor host.
func (c *conn) host() actor.Host { return actor.EnvoyHost(c.nsID, c.key) }

// SendEnvoyCommands sends commands to envoy h if this server holds its socket, else (with
// Options.Cluster) to the node that does. Commands that come before the socket replayed its
// stored ones wait for the replay (sendCommands).
func (s *Server) SendEnvoyCommands(h actor.Host, cmds []actor.Command) {
	if !s.SendEnvoyCommandsHere(h, cmds) && s.o.Cluster != nil {
		s.o.Cluster.SendCommands(h, cmds)
	}
}

// SendEnvoyCommandsHere is SendEnvoyCommands for a socket on this node only; false when
// none is here.
func (s *Server) SendEnvoyCommandsHere(h actor.Host, cmds []actor.Command) bool {
	s.mu.Lock()
	c := s.byEnvoy[envoyRef{h.Namespace, h.EnvoyKey}]
	s.mu.Unlock()
	if c != nil {
		c.sendCommands(cmds)
	}
	return c != nil
}

// sendCommands writes cmds, or keeps them until the replay is out (c.cmds).
func (c *conn) sendCommands(cmds []actor.Command) { c.cmds.Send(cmds) }

// writeCommands writes one ToEnvoyCommands (c.cmds' writer). A failed write fails the
// socket: the envoy reconnects and gets the stored commands again.
func (c *conn) writeCommands(cmds []actor.Command) {
	out := make(proto.ToEnvoyCommands, len(cmds))
	for i, cmd := range wsconn.CommandsToRunner(cmds) {
		out[i] = bridge.CommandToEnvoy(cmd, proto.StopActorReason(cmds[i].StopReason))
	}
	c.addPreloadedKv(out)
	if err := c.write(out); err != nil {
		c.fail(nil)
	}
}

func hostCheckpoint(c actor.Command) actor.Checkpoint { return c.Checkpoint }

// afterRegister runs once the socket is registered and reachable: the stored commands the
// envoy must get again go first, then those held meanwhile (without duplicates), and the
// pool's waiting actors may now be placed here.
func (c *conn) afterRegister() {
	actors := c.s.o.Envoys.Actors()
	replay, err := actors.HostReplay(c.s.ctx, c.host())
	if err != nil && c.s.ctx.Err() == nil {
		c.s.o.Log.Warn("envoy socket: replay commands", "envoy_key", c.key, "ray_id", c.ray, "error", err)
	}
	c.cmds.Open(replay)
	actors.MovePool(actor.Pool{Namespace: c.nsID, Selector: c.pool})
}

// events applies the envoy's events and acknowledges them in one batch.
func (c *conn) events(evs proto.ToRivetEvents) {
	acks, err := c.s.o.Envoys.Actors().HostEvents(c.s.ctx, c.host(), wsconn.EventsFromRunner(bridge.EventsToRunner(evs)))
	if err != nil {
		if c.s.ctx.Err() == nil {
			c.s.o.Log.Warn("envoy socket: events", "envoy_key", c.key, "ray_id", c.ray, "error", err)
		}
		return // not acknowledged: the envoy sends them again after a reconnect
	}
	if len(acks) > 0 {
		c.reply(proto.ToEnvoyAckEvents{LastEventCheckpoints: bridge.CheckpointsToEnvoy(wsconn.CheckpointsToRunner(acks))})
	}
}

// ackCommands clears the commands the envoy acknowledged.
func (c *conn) ackCommands(m proto.ToRivetAckCommands) {
	err := c.s.o.Envoys.Actors().HostAckCommands(c.s.ctx, c.host(), wsconn.CheckpointsFromRunner(bridge.CheckpointsToRunner(m.LastCommandCheckpoints)))
	if err != nil && c.s.ctx.Err() == nil {
		c.s.o.Log.Warn("envoy socket: ack commands", "envoy_key", c.key, "ray_id", c.ray, "error", err)
	}
}

// kvRequest runs one KV request (kvserve, as for runners) and answers it; a socket a newer
// one replaced is closed with ws.eviction.
func (c *conn) kvRequest(m proto.ToRivetKvRequest) {
	req := bridge.KvRequestToRunner(m.Data)
	if req == nil {
		c.reply(proto.ToEnvoyKvResponse{RequestID: m.RequestID, Data: proto.KvErrorResponse{Message: "unknown KV request"}})
		return
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, kvTimeout)
	defer cancel()
	data, stale := kvserve.Answer(ctx, c.s.o.DB, c.kvHosted, m.ActorID, req, c.s.o.Version, func(err error) {
		if c.s.ctx.Err() == nil {
			c.s.o.Log.Error("envoy socket: kv request", "envoy_key", c.key, "actor_id", m.ActorID, "ray_id", c.ray, "error", err)
		}
	})
	if stale {
		c.closeWith(rerr.WS("eviction"))
		return
	}
	c.reply(proto.ToEnvoyKvResponse{RequestID: m.RequestID, Data: bridge.KvResponseToEnvoy(data)})
}

// kvHosted checks, serializably, that this socket is its envoy's current one and that
// the actor is placed on the envoy.
func (c *conn) kvHosted(ctx context.Context, r udb.ReadTransaction, aid id.ID) error {
	cur, _, err := keys.Get(ctx, r, keys.EnvoyConnIDKey{Namespace: c.nsID, EnvoyKey: c.key})
	if err != nil {
		return err
	}
	if cur != c.connID {
		return rerr.EnvoyStaleConnection(c.key)
	}
	_, placed, err := keys.Get(ctx, r, keys.EnvoyActorKey{Namespace: c.nsID, EnvoyKey: c.key, ActorID: aid})
	if err != nil {
		return err
	}
	return kvserve.CheckPlaced(ctx, r, aid, placed, kvserve.NotEnvoys)
}

// kvTimeout bounds one KV request's transaction, retries included.
const kvTimeout = 10 * time.Second
