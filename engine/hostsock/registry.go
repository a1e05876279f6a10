package hostsock

import (
	crand "crypto/rand"
	"sync"

	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/engine/metrics"
	"github.com/berthhq/berth/guard"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// Registry is this node's live host sockets, by connection id and by host, and the gateway
// requests open on them. It is what the cluster reaches on this node (engine/cluster's
// Local): each call acts on a socket held here and reports false, or fails with
// wsconn.ErrNoSocket, when there is none.
type Registry struct {
	metrics    *metrics.Metrics
	gateway    proto.GatewayID // this process's gateway id, random
	maxTunnels int             // per socket; 0: no bound

	mu      sync.Mutex
	conns   map[id.ID]*conn       // registered sockets by connection id
	hosts   map[actor.Host]*conn  // the same sockets by host (the newest one)
	tunnels map[tunnelKey]*Tunnel // open gateway requests
	runners int                   // runner sockets among conns, for the gauge
	closed  bool                  // nothing is added after this
}

// NewRegistry returns an empty registry; m (nil: none) counts its runner sockets, and
// maxTunnels (0: no bound) bounds the tunnels open on one socket at once.
func NewRegistry(m *metrics.Metrics, maxTunnels int) *Registry {
	r := &Registry{metrics: m, maxTunnels: maxTunnels, conns: map[id.ID]*conn{}, hosts: map[actor.Host]*conn{}, tunnels: map[tunnelKey]*Tunnel{}}
	_, _ = crand.Read(r.gateway[:])
	return r
}

// GatewayID is this node's gateway id, fixed for the life of the process.
func (r *Registry) GatewayID() proto.GatewayID { return r.gateway }

// add records c as live; false when the registry is closing.
func (r *Registry) add(c *conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c.connID] = c
	r.hosts[c.host] = c
	if !c.host.IsEnvoy() {
		r.runners++
		r.setGauge()
	}
	return true
}

func (r *Registry) remove(c *conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns[c.connID] != c {
		return
	}
	delete(r.conns, c.connID)
	if r.hosts[c.host] == c {
		delete(r.hosts, c.host)
	}
	if !c.host.IsEnvoy() {
		r.runners--
		r.setGauge()
	}
}

func (r *Registry) setGauge() {
	if r.metrics != nil {
		r.metrics.RunnerSockets.Set(float64(r.runners))
	}
}

// closeAll closes every socket with err and refuses later ones.
func (r *Registry) closeAll(err error) {
	r.mu.Lock()
	r.closed = true
	live := make([]*conn, 0, len(r.conns))
	for _, c := range r.conns {
		live = append(live, c)
	}
	r.mu.Unlock()
	for _, c := range live {
		c.fail(err)
	}
}

func (r *Registry) byHost(h actor.Host) *conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hosts[h]
}

// Holds reports whether a socket of h is live here.
func (r *Registry) Holds(h actor.Host) bool { return r.byHost(h) != nil }

// Live is how many registered sockets are here.
func (r *Registry) Live() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.conns)
}

// SendCommandsHere sends cmds to h's socket, if it is here. Commands that come before the
// socket's stored commands are replayed wait for them, so the host sees them in order.
func (r *Registry) SendCommandsHere(h actor.Host, cmds []actor.Command) bool {
	c := r.byHost(h)
	if c != nil {
		c.cmds.Send(cmds)
	}
	return c != nil
}

// CloseHere closes h's socket with err, if it is here: a host that stopped is told with
// 1000 ws.eviction not to come back.
func (r *Registry) CloseHere(h actor.Host, err error) bool {
	c := r.byHost(h)
	if c != nil {
		c.closeWith(err, true)
	}
	return c != nil
}

// EvictHere closes the socket with that connection id with 1000 ws.eviction, if it is here.
func (r *Registry) EvictHere(connID id.ID) bool {
	r.mu.Lock()
	c := r.conns[connID]
	r.mu.Unlock()
	if c != nil {
		c.closeWith(evicted, true)
	}
	return c != nil
}

// OpenTunnel opens a gateway request to an actor on h's socket: a fresh request of gateway
// gw when req is nil, else request req of gw, its next message numbered next (a hibernated
// WebSocket that resumes, or a request another node relays here). wsconn.ErrNoSocket when
// h's socket is not here; wsconn.ErrTunnelClosed when req is open here already; 503
// guard.host_overloaded when the socket carries the most tunnels it may.
func (r *Registry) OpenTunnel(h actor.Host, gw proto.GatewayID, req *proto.RequestID, next uint16) (guard.ResumableTunnel, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.hosts[h]
	if c == nil {
		return nil, wsconn.ErrNoSocket
	}
	// Tunnels are added under r.mu only, so the count cannot pass the bound.
	if r.maxTunnels > 0 && c.open.Len() >= r.maxTunnels {
		return nil, rerr.GuardHostOverloaded(r.maxTunnels)
	}
	t := &Tunnel{c: c, next: next, key: tunnelKey{gateway: gw}}
	if req != nil {
		t.key.request = *req
		if _, taken := r.tunnels[t.key]; taken {
			return nil, wsconn.ErrTunnelClosed
		}
	} else {
		t.key.request = wsconn.NewRequestID(func(id [4]byte) bool { _, taken := r.tunnels[tunnelKey{gw, id}]; return taken })
	}
	if c.p.info().windowed {
		t.window = newBodyWindow()
	}
	t.Inbox = wsconn.NewInbox[proto.ToServerTunnelMessageKind](tunnelBuffer, func() {
		r.mu.Lock()
		if r.tunnels[t.key] == t {
			delete(r.tunnels, t.key)
		}
		r.mu.Unlock()
		c.open.Remove(t)
	})
	if !c.open.Add(t) { // the socket is closing
		return nil, wsconn.ErrNoSocket
	}
	r.tunnels[t.key] = t
	return t, nil
}

// tunnel is the open request named key on c, or nil.
func (r *Registry) tunnel(c *conn, key tunnelKey) *Tunnel {
	r.mu.Lock()
	t := r.tunnels[key]
	r.mu.Unlock()
	if t == nil || t.c != c {
		return nil
	}
	return t
}
