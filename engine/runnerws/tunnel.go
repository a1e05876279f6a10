package runnerws

import (
	"context"
	"errors"
	"sync"

	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/pkg/id"
	proto "github.com/berthhq/berth/pkg/protocol/runner"
)

// The tunnel: gateway requests to actors travel over their runner's socket as
// ToClientTunnelMessage, and the runner's answers come back as ToServerTunnelMessage,
// matched by request id (rivet-protocol.md §3.5).

// ErrNoRunnerSocket: this server holds no socket of the runner (it is disconnected, or
// connected to another node).
var ErrNoRunnerSocket = errors.New("runnerws: no socket of that runner here")

// ErrTunnelClosed: the runner's socket ended, or the tunnel was closed.
var ErrTunnelClosed = errors.New("runnerws: tunnel closed")

// tunnelBuffer bounds the runner messages waiting for a tunnel's reader; a reader that
// falls further behind loses its tunnel.
const tunnelBuffer = 1024

// Tunnel is one gateway request to an actor through its runner's socket. Send and Recv
// may be used from different goroutines; Close ends it.
type Tunnel struct {
	c   *conn
	key tunnelKey
	*wsconn.Inbox[proto.ToServerTunnelMessageKind]

	sendMu sync.Mutex
	next   uint16 // index of the next message sent
}

// tunnelKey names a request: the gateway that opened it and its id there. A request this
// node's gateway opens carries this server's gateway id; one another node's gateway opens
// through this node (engine/cluster's relay) carries that node's, so that its hibernated
// WebSocket can resume wherever its actor's runner is next.
type tunnelKey struct {
	gateway proto.GatewayID
	request proto.RequestID
}

// GatewayID is this server's gateway id, fixed for the life of the process.
func (s *Server) GatewayID() proto.GatewayID { return s.gateway }

// OpenTunnel starts a request to an actor on runner rid, or fails with ErrNoRunnerSocket.
func (s *Server) OpenTunnel(rid id.ID) (*Tunnel, error) {
	return s.openTunnel(rid, s.gateway, nil, 0)
}

// ResumeTunnel continues request req of this server's gateway on runner rid, its next
// message numbered next: a hibernated WebSocket whose actor woke up (its runner restored
// the socket from the start command's hibernating requests). ErrTunnelClosed if the
// request is open here already.
func (s *Server) ResumeTunnel(rid id.ID, req proto.RequestID, next uint16) (*Tunnel, error) {
	return s.openTunnel(rid, s.gateway, &req, next)
}

// OpenTunnelFor opens request req of another node's gateway gw on runner rid, its next
// message numbered next (engine/cluster's relay: a new request, or a hibernated one that
// resumes here). ErrTunnelClosed if the request is open here already.
func (s *Server) OpenTunnelFor(rid id.ID, gw proto.GatewayID, req proto.RequestID, next uint16) (*Tunnel, error) {
	return s.openTunnel(rid, gw, &req, next)
}

func (s *Server) openTunnel(rid id.ID, gw proto.GatewayID, req *proto.RequestID, next uint16) (*Tunnel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.byRunner[rid]
	if c == nil {
		return nil, ErrNoRunnerSocket
	}
	t := &Tunnel{c: c, next: next, key: tunnelKey{gateway: gw}}
	if req != nil {
		t.key.request = *req
		if _, taken := s.tunnels[t.key]; taken {
			return nil, ErrTunnelClosed
		}
	} else {
		t.key.request = wsconn.NewRequestID(func(id [4]byte) bool { _, taken := s.tunnels[tunnelKey{gw, id}]; return taken })
	}
	t.Inbox = wsconn.NewInbox[proto.ToServerTunnelMessageKind](tunnelBuffer, func() {
		s.mu.Lock()
		if s.tunnels[t.key] == t {
			delete(s.tunnels, t.key)
		}
		s.mu.Unlock()
		c.open.Remove(t)
	})
	if !c.open.Add(t) { // the socket is closing
		return nil, ErrNoRunnerSocket
	}
	s.tunnels[t.key] = t
	return t, nil
}

// RequestID is the request's id on the tunnel.
func (t *Tunnel) RequestID() proto.RequestID { return t.key.request }

// Resumable: a runner restores the tunnel's hibernated WebSocket (guard.ResumableTunnel).
func (t *Tunnel) Resumable() bool { return true }

// NextIndex is the index the next message sent will carry.
func (t *Tunnel) NextIndex() uint16 {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	return t.next
}

// Send sends one message of the request, with the next message index.
func (t *Tunnel) Send(kind proto.ToClientTunnelMessageKind) error {
	_, err := t.SendIndexed(kind)
	return err
}

// SendIndexed is Send that also returns the index the message carried.
func (t *Tunnel) SendIndexed(kind proto.ToClientTunnelMessageKind) (uint16, error) {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	idx := t.next
	if err := t.send(idx, kind); err != nil {
		return 0, err
	}
	t.next++
	return idx, nil
}

// Resend sends again a message sent before under index idx (the replay of a hibernated
// WebSocket's unacknowledged messages); the next index does not move.
func (t *Tunnel) Resend(idx uint16, kind proto.ToClientTunnelMessageKind) error {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	return t.send(idx, kind)
}

func (t *Tunnel) send(idx uint16, kind proto.ToClientTunnelMessageKind) error {
	select {
	case <-t.Done():
		return ErrTunnelClosed
	default:
	}
	m := proto.ToClientTunnelMessage{
		MessageID:   proto.MessageID{GatewayID: t.key.gateway, RequestID: t.key.request, MessageIndex: idx},
		MessageKind: kind,
	}
	if err := t.c.write(m); err != nil {
		t.c.fail(nil)
		return ErrTunnelClosed
	}
	return nil
}

// Recv returns the runner's next message for the request.
func (t *Tunnel) Recv(ctx context.Context) (proto.ToServerTunnelMessageKind, error) {
	return t.Inbox.Recv(ctx, ErrTunnelClosed)
}

// Close (the Inbox's) ends the tunnel; later runner messages for it are dropped.

// tunnelMessage routes a runner's tunnel message to its request; one for a request nobody
// here waits for (of a previous process, or closed) is dropped.
func (c *conn) tunnelMessage(m proto.ToServerTunnelMessage) {
	c.s.mu.Lock()
	t := c.s.tunnels[tunnelKey{m.MessageID.GatewayID, m.MessageID.RequestID}]
	c.s.mu.Unlock()
	if t == nil || t.c != c {
		return
	}
	t.Deliver(m.MessageKind)
}
