package envoyws

import (
	"context"
	"errors"
	"sync"

	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/protocol/bridge"
	proto "github.com/berthhq/berth/pkg/protocol/envoy"
	rp "github.com/berthhq/berth/pkg/protocol/runner"
)

// The tunnel: gateway requests to actors hosted on envoys travel over the envoy's socket as
// ToEnvoyTunnelMessage and come back as ToRivetTunnelMessage, matched by request id. A
// Tunnel speaks the runner protocol's tunnel shapes, which the gateway (guard) uses for
// every host, and translates at the socket (pkg/protocol/bridge). Hibernated requests are
// not resumed through envoys.

// ErrNoEnvoySocket: this server holds no socket of the envoy.
var ErrNoEnvoySocket = errors.New("envoyws: no socket of that envoy here")

// ErrTunnelClosed: the envoy's socket ended, or the tunnel was closed.
var ErrTunnelClosed = errors.New("envoyws: tunnel closed")

// tunnelBuffer bounds the envoy messages waiting for a tunnel's reader; a reader that falls
// further behind loses its tunnel.
const tunnelBuffer = 1024

// Tunnel is one gateway request to an actor through its envoy's socket. Send and Recv may be
// used from different goroutines; Close ends it.
type Tunnel struct {
	c   *conn
	rid proto.RequestID
	*wsconn.Inbox[rp.ToServerTunnelMessageKind]

	sendMu sync.Mutex
	next   uint16 // index of the next message sent
}

// OpenEnvoyTunnel starts a request to an actor on envoy (ns, envoyKey), or fails with
// ErrNoEnvoySocket.
func (s *Server) OpenEnvoyTunnel(ns id.ID, envoyKey string) (*Tunnel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.byEnvoy[envoyRef{ns, envoyKey}]
	if c == nil {
		return nil, ErrNoEnvoySocket
	}
	t := &Tunnel{c: c}
	t.rid = wsconn.NewRequestID(func(id [4]byte) bool { _, taken := s.tunnels[id]; return taken })
	t.Inbox = wsconn.NewInbox[rp.ToServerTunnelMessageKind](tunnelBuffer, func() {
		s.mu.Lock()
		if s.tunnels[t.rid] == t {
			delete(s.tunnels, t.rid)
		}
		s.mu.Unlock()
	})
	s.tunnels[t.rid] = t
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-c.done:
			t.Close()
		case <-t.Done():
		}
	}()
	return t, nil
}

// Send sends one message of the request, with the next message index.
func (t *Tunnel) Send(kind rp.ToClientTunnelMessageKind) error {
	k := bridge.ToEnvoyTunnel(kind)
	if k == nil {
		return nil // nothing the envoy protocol carries
	}
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	select {
	case <-t.Done():
		return ErrTunnelClosed
	default:
	}
	m := proto.ToEnvoyTunnelMessage{
		MessageID:   proto.MessageID{GatewayID: t.c.s.gateway, RequestID: t.rid, MessageIndex: t.next},
		MessageKind: k,
	}
	if err := t.c.write(m); err != nil {
		t.c.fail(nil)
		return ErrTunnelClosed
	}
	t.next++
	return nil
}

// Recv returns the envoy's next message for the request.
func (t *Tunnel) Recv(ctx context.Context) (rp.ToServerTunnelMessageKind, error) {
	return t.Inbox.Recv(ctx, ErrTunnelClosed)
}

// tunnelMessage routes an envoy's tunnel message to its request.
func (c *conn) tunnelMessage(m proto.ToRivetTunnelMessage) {
	if m.MessageID.GatewayID != c.s.gateway {
		return // for another gateway (a previous process): nobody waits for it here
	}
	kind := bridge.ToServerTunnel(m.MessageKind)
	if kind == nil {
		return // flow control the gateway does not use
	}
	c.s.mu.Lock()
	t := c.s.tunnels[m.MessageID.RequestID]
	c.s.mu.Unlock()
	if t == nil || t.c != c {
		return
	}
	t.Deliver(kind)
}
