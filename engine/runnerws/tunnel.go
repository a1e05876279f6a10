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
	rid proto.RequestID
	*wsconn.Inbox[proto.ToServerTunnelMessageKind]

	sendMu sync.Mutex
	next   uint16 // index of the next message sent
}

// GatewayID is this server's gateway id, fixed for the life of the process.
func (s *Server) GatewayID() proto.GatewayID { return s.gateway }

// OpenTunnel starts a request to an actor on runner rid, or fails with ErrNoRunnerSocket.
func (s *Server) OpenTunnel(rid id.ID) (*Tunnel, error) {
	return s.openTunnel(rid, nil, 0)
}

// ResumeTunnel continues request req on runner rid, its next message numbered next: a
// hibernated WebSocket whose actor woke up (its runner restored the socket from the start
// command's hibernating requests). ErrTunnelClosed if the request is open here already.
func (s *Server) ResumeTunnel(rid id.ID, req proto.RequestID, next uint16) (*Tunnel, error) {
	return s.openTunnel(rid, &req, next)
}

func (s *Server) openTunnel(rid id.ID, req *proto.RequestID, next uint16) (*Tunnel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.byRunner[rid]
	if c == nil {
		return nil, ErrNoRunnerSocket
	}
	t := &Tunnel{c: c, next: next}
	if req != nil {
		if _, taken := s.tunnels[*req]; taken {
			return nil, ErrTunnelClosed
		}
		t.rid = *req
	} else {
		t.rid = wsconn.NewRequestID(func(id [4]byte) bool { _, taken := s.tunnels[id]; return taken })
	}
	t.Inbox = wsconn.NewInbox[proto.ToServerTunnelMessageKind](tunnelBuffer, func() {
		s.mu.Lock()
		if s.tunnels[t.rid] == t {
			delete(s.tunnels, t.rid)
		}
		s.mu.Unlock()
		c.open.Remove(t)
	})
	if !c.open.Add(t) { // the socket is closing
		return nil, ErrNoRunnerSocket
	}
	s.tunnels[t.rid] = t
	return t, nil
}

// RequestID is the request's id on the tunnel.
func (t *Tunnel) RequestID() proto.RequestID { return t.rid }

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
		MessageID:   proto.MessageID{GatewayID: t.c.s.gateway, RequestID: t.rid, MessageIndex: idx},
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

// tunnelMessage routes a runner's tunnel message to its request.
func (c *conn) tunnelMessage(m proto.ToServerTunnelMessage) {
	if m.MessageID.GatewayID != c.s.gateway {
		return // for another gateway (a previous process): nobody waits for it here
	}
	c.s.mu.Lock()
	t := c.s.tunnels[m.MessageID.RequestID]
	c.s.mu.Unlock()
	if t == nil || t.c != c {
		return
	}
	t.Deliver(m.MessageKind)
}
