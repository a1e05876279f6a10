package cluster

import (
	"context"
	"errors"

	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/guard"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// The gateway reaches the hosts through the node (guard.Hosts): a socket held here is used
// directly, one another live node holds is relayed there (relay.go).
var _ guard.Hosts = (*Node)(nil)

// OpenTunnel starts a gateway request to an actor on h.
func (n *Node) OpenTunnel(h actor.Host) (guard.Tunnel, error) {
	gw := n.local.GatewayID()
	tun, err := n.local.OpenTunnel(h, gw, nil, 0)
	if errors.Is(err, wsconn.ErrNoSocket) {
		return n.OpenRemoteTunnel(h, gw)
	}
	if err != nil {
		return nil, err
	}
	return tun, nil
}

// ResumeTunnel continues request req of this node's gateway on runner rid, its next message
// numbered next: a hibernated WebSocket whose actor woke up on rid.
func (n *Node) ResumeTunnel(rid id.ID, req proto.RequestID, next uint16) (guard.Tunnel, error) {
	gw := n.local.GatewayID()
	tun, err := n.local.OpenTunnel(actor.RunnerHost(rid), gw, &req, next)
	if errors.Is(err, wsconn.ErrNoSocket) {
		return n.ResumeRemoteTunnel(rid, gw, req, next)
	}
	if err != nil {
		return nil, err
	}
	return tun, nil
}

// GatewayID is this node's gateway id.
func (n *Node) GatewayID() proto.GatewayID { return n.local.GatewayID() }

// Connected reports whether h's socket is held in the datacenter: here, or by another live
// node.
func (n *Node) Connected(ctx context.Context, h actor.Host) (bool, error) {
	if n.local.Holds(h) {
		return true, nil
	}
	return n.HeldElsewhere(ctx, h)
}
