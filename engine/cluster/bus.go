package cluster

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/berthhq/berth/pkg/id"
	proto "github.com/berthhq/berth/pkg/protocol/runner"
	"github.com/berthhq/berth/pkg/pubsub"
	"github.com/berthhq/berth/pkg/rerr"
)

// busMessage is one runner control message on the bus.
type busMessage struct {
	Op     string `json:"op"` // "commands", "close" or "evict"
	Runner string `json:"runner,omitempty"`
	Conn   string `json:"conn,omitempty"`
	// Commands is ToClientCommands encoded at the latest protocol version.
	Commands []byte `json:"commands,omitempty"`
	// Group and Code are the close error of "close".
	Group string `json:"group,omitempty"`
	Code  string `json:"code,omitempty"`
}

func (n *Node) publish(m busMessage) {
	b, err := json.Marshal(m)
	if err == nil {
		// Not a request's context: the publish is one buffered write to the bus.
		err = n.o.Bus.Publish(context.Background(), n.subject, b)
	}
	if err != nil && !errors.Is(err, pubsub.ErrClosed) {
		// The runner gets stored commands again when it reconnects.
		n.o.Log.Warn("cluster: publish runner message", "op", m.Op, "runner_id", m.Runner, "error", err)
	}
}

// SendCommands forwards commands for runner rid to the node holding its socket.
func (n *Node) SendCommands(rid id.ID, cmds []proto.CommandWrapper) {
	b, err := proto.EncodeToClient(proto.ToClientCommands(cmds), proto.LatestVersion)
	if err != nil {
		n.o.Log.Error("cluster: encode commands", "runner_id", rid.String(), "error", err)
		return
	}
	n.publish(busMessage{Op: "commands", Runner: rid.String(), Commands: b})
}

// CloseRunner asks the node holding runner rid's socket to close it with err.
func (n *Node) CloseRunner(rid id.ID, err error) {
	m := busMessage{Op: "close", Runner: rid.String(), Group: "ws", Code: "eviction"}
	if e, ok := rerr.As(err); ok {
		m.Group, m.Code = e.Group, e.Code
	}
	n.publish(m)
}

// Evict asks the node holding the socket with connection id connID to close it with
// ws.eviction (a newer socket of the same runner registered elsewhere).
func (n *Node) Evict(connID id.ID) {
	n.publish(busMessage{Op: "evict", Conn: connID.String()})
}

// deliverLoop hands the bus's messages to the local sockets until ctx ends.
func (n *Node) deliverLoop(ctx context.Context, sub pubsub.Subscription) {
	for {
		msg, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, pubsub.ErrClosed) {
				n.o.Log.Error("cluster: bus subscription ended", "error", err)
			}
			return
		}
		n.deliver(msg.Data)
	}
}

func (n *Node) deliver(data []byte) {
	var m busMessage
	if err := json.Unmarshal(data, &m); err != nil {
		n.o.Log.Warn("cluster: bad bus message", "error", err)
		return
	}
	switch m.Op {
	case "commands":
		rid, err := id.Parse(m.Runner)
		if err != nil {
			return
		}
		dec, err := proto.DecodeToClient(m.Commands, proto.LatestVersion)
		if err != nil {
			n.o.Log.Warn("cluster: bad commands on the bus", "runner_id", m.Runner, "error", err)
			return
		}
		if cmds, ok := dec.(proto.ToClientCommands); ok {
			n.local.SendCommandsHere(rid, cmds)
		}
	case "close":
		if rid, err := id.Parse(m.Runner); err == nil {
			n.local.CloseRunnerHere(rid, rerr.New(m.Group, m.Code))
		}
	case "evict":
		if cid, err := id.Parse(m.Conn); err == nil {
			n.local.EvictHere(cid)
		}
	}
}
