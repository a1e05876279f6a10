package cluster

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/pubsub"
	"github.com/berthhq/berth/pkg/rerr"
)

// busMessage is one control message for a runner's or an envoy's socket on the bus.
type busMessage struct {
	Op string `json:"op"` // "commands", "close", "evict" or "actors"
	// Runner names a runner; Namespace and Envoy name an envoy.
	Runner    string `json:"runner,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Envoy     string `json:"envoy,omitempty"`
	Conn      string `json:"conn,omitempty"`
	// Commands are the commands of "commands".
	Commands []busCommand `json:"commands,omitempty"`
	// Group and Code are the close error of "close".
	Group string `json:"group,omitempty"`
	Code  string `json:"code,omitempty"`
	// Actors are the actors an "actors" message says changed, on node From.
	Actors []string `json:"actors,omitempty"`
	From   string   `json:"from,omitempty"`
}

// busCommand is one actor.Command on the bus (its host is the message's).
type busCommand struct {
	Actor      id.ID            `json:"actor"`
	Generation uint32           `json:"generation"`
	Index      int64            `json:"index"`
	Start      *actor.Start     `json:"start,omitempty"`
	StopReason actor.StopReason `json:"stop_reason,omitempty"`
}

// busMessageFor is a message of op for h's socket.
func busMessageFor(op string, h actor.Host) busMessage {
	if h.IsEnvoy() {
		return busMessage{Op: op, Namespace: h.Namespace.String(), Envoy: h.EnvoyKey}
	}
	return busMessage{Op: op, Runner: h.RunnerID.String()}
}

// host is the socket the message is for.
func (m busMessage) host() (actor.Host, error) {
	if m.Envoy != "" {
		ns, err := id.Parse(m.Namespace)
		return actor.EnvoyHost(ns, m.Envoy), err
	}
	rid, err := id.Parse(m.Runner)
	return actor.RunnerHost(rid), err
}

func (n *Node) publish(m busMessage) {
	b, err := json.Marshal(m)
	if err == nil {
		// Not a request's context: the publish is one buffered write to the bus.
		err = n.o.Bus.Publish(context.Background(), n.subject, b)
	}
	if err != nil && !errors.Is(err, pubsub.ErrClosed) {
		// The runner or envoy gets stored commands again when it reconnects.
		n.o.Log.Warn("cluster: publish socket message", "op", m.Op, "runner_id", m.Runner, "envoy_key", m.Envoy, "error", err)
	}
}

// SendCommands sends commands to h's socket: here, or through the bus to the node that
// holds it.
func (n *Node) SendCommands(h actor.Host, cmds []actor.Command) {
	if n.local.SendCommandsHere(h, cmds) {
		return
	}
	m := busMessageFor("commands", h)
	m.Commands = make([]busCommand, len(cmds))
	for i, c := range cmds {
		cp := c.Checkpoint
		m.Commands[i] = busCommand{Actor: cp.ActorID, Generation: cp.Generation, Index: cp.Index, Start: c.Start, StopReason: c.StopReason}
	}
	n.publish(m)
}

// CloseSocket closes h's socket with err: here, or through the bus on the node that holds
// it.
func (n *Node) CloseSocket(h actor.Host, err error) {
	if n.local.CloseHere(h, err) {
		return
	}
	m := busMessageFor("close", h)
	e, ok := rerr.As(err)
	if !ok {
		e = rerr.WSEviction()
	}
	m.Group, m.Code = e.Group, e.Code
	n.publish(m)
}

// Evict closes the socket with connection id connID with ws.eviction (a newer socket of the
// same runner or envoy registered): here, or through the bus on the node that holds it.
func (n *Node) Evict(connID id.ID) {
	if n.local.EvictHere(connID) {
		return
	}
	n.publish(busMessage{Op: "evict", Conn: connID.String()})
}

// AnnounceActors tells the other nodes that the actors changed (pegboard's
// ActorsOptions.Announce): each node wakes what waits on them there (Options.Changes).
func (n *Node) AnnounceActors(actors []id.ID) {
	m := busMessage{Op: "actors", From: n.o.ID, Actors: make([]string, len(actors))}
	for i, aid := range actors {
		m.Actors[i] = aid.String()
	}
	n.publish(m)
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
	case "evict":
		if cid, err := id.Parse(m.Conn); err == nil {
			n.local.EvictHere(cid)
		}
		return
	case "actors":
		if m.From == n.o.ID {
			return // this node's own, already applied
		}
		actors := make([]id.ID, 0, len(m.Actors))
		for _, s := range m.Actors {
			if aid, err := id.Parse(s); err == nil {
				actors = append(actors, aid)
			}
		}
		n.o.Changes.Changed(actors)
		return
	}
	h, err := m.host()
	if err != nil {
		return
	}
	switch m.Op {
	case "commands":
		n.local.SendCommandsHere(h, m.commands(h))
	case "close":
		n.local.CloseHere(h, rerr.FromWire(m.Group, m.Code))
	}
}

// commands are the commands of a "commands" message for h.
func (m busMessage) commands(h actor.Host) []actor.Command {
	out := make([]actor.Command, len(m.Commands))
	for i, c := range m.Commands {
		out[i] = actor.Command{Host: h, Checkpoint: actor.Checkpoint{ActorID: c.Actor, Generation: c.Generation, Index: c.Index},
			Start: c.Start, StopReason: c.StopReason}
	}
	return out
}
