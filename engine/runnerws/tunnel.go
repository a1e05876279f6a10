package runnerws

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"

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
	in  chan proto.ToServerTunnelMessageKind

	sendMu sync.Mutex
	next   uint16 // index of the next message sent

	closeOnce sync.Once
	closed    chan struct{}
}

// GatewayID is this server's gateway id, fixed for the life of the process.
func (s *Server) GatewayID() proto.GatewayID { return s.gateway }

// OpenTunnel starts a request to an actor on runner rid, or fails with ErrNoRunnerSocket.
func (s *Server) OpenTunnel(rid id.ID) (*Tunnel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.byRunner[rid]
	if c == nil {
		return nil, ErrNoRunnerSocket
	}
	t := &Tunnel{c: c, in: make(chan proto.ToServerTunnelMessageKind, tunnelBuffer), closed: make(chan struct{})}
	for {
		_, _ = rand.Read(t.rid[:])
		if _, taken := s.tunnels[t.rid]; !taken {
			break
		}
	}
	s.tunnels[t.rid] = t
	c.tunnels.Add(1)
	go func() {
		select {
		case <-c.done:
			t.Close()
		case <-t.closed:
		}
		c.tunnels.Done()
	}()
	return t, nil
}

// Send sends one message of the request, with the next message index.
func (t *Tunnel) Send(kind proto.ToClientTunnelMessageKind) error {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	select {
	case <-t.closed:
		return ErrTunnelClosed
	default:
	}
	m := proto.ToClientTunnelMessage{
		MessageID:   proto.MessageID{GatewayID: t.c.s.gateway, RequestID: t.rid, MessageIndex: t.next},
		MessageKind: kind,
	}
	t.next++
	if err := t.c.write(m); err != nil {
		t.c.fail(nil)
		return ErrTunnelClosed
	}
	return nil
}

// Recv returns the runner's next message for the request.
func (t *Tunnel) Recv(ctx context.Context) (proto.ToServerTunnelMessageKind, error) {
	select {
	case m := <-t.in:
		return m, nil
	default:
	}
	select {
	case m := <-t.in:
		return m, nil
	case <-t.closed:
		return nil, ErrTunnelClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close ends the tunnel; later runner messages for it are dropped.
func (t *Tunnel) Close() {
	t.closeOnce.Do(func() {
		close(t.closed)
		s := t.c.s
		s.mu.Lock()
		if s.tunnels[t.rid] == t {
			delete(s.tunnels, t.rid)
		}
		s.mu.Unlock()
	})
}

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
	select {
	case t.in <- m.MessageKind:
	default:
		t.Close() // the reader fell too far behind
	}
}
