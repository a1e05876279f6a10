package hostsock

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/engine/metrics"
	"github.com/berthhq/berth/engine/pegboard"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Defaults, as on the Rivet engine (docs/protocol.md).
const (
	DefaultInitTimeout        = 5 * time.Second
	DefaultPingInterval       = 3 * time.Second
	DefaultPingTimeout        = 15 * time.Second
	DefaultLostThreshold      = 15 * time.Second
	DefaultActorStopThreshold = 30 * time.Minute
	// DefaultServerlessDrainGrace is how long before the end of its GET /start request a
	// serverless runner is drained (pegboard.serverless_drain_grace_period_ms).
	DefaultServerlessDrainGrace = 10 * time.Second
	// MaxResponsePayload is the largest payload a host may send in one message; envoys are
	// told it at init (envoy_max_response_payload_size).
	MaxResponsePayload = 20 << 20
	// MaxMessage bounds one message from a host: the payload plus room for its envelope. A
	// longer one is ws.invalid_packet, as on Rivet.
	MaxMessage = MaxResponsePayload + 1<<20
)

// Cluster is what the server needs of the datacenter's nodes (engine/cluster.Node).
type Cluster interface {
	// ClaimSocket records that this node holds h's socket, returning the epoch to release
	// it with.
	ClaimSocket(ctx context.Context, h actor.Host) (int64, error)
	// ReleaseSocket releases the record held under epoch in one transaction with before
	// (whose *rerr.Error means it wrote nothing, and is ignored).
	ReleaseSocket(ctx context.Context, h actor.Host, epoch int64, before func(context.Context, udb.Transaction) error)
	// Evict closes the socket with that connection id with ws.eviction, wherever it is.
	Evict(connID id.ID)
}

// Timing is one kind of host's heartbeat; zero fields mean the defaults above.
type Timing struct {
	PingInterval time.Duration
	PingTimeout  time.Duration
	// LostThreshold is told to the hosts at init: how long the engine waits for a ping
	// before it considers the host lost.
	LostThreshold time.Duration
}

func (t Timing) withDefaults() Timing {
	if t.PingInterval <= 0 {
		t.PingInterval = DefaultPingInterval
	}
	if t.PingTimeout <= 0 {
		t.PingTimeout = DefaultPingTimeout
	}
	if t.LostThreshold <= 0 {
		t.LostThreshold = DefaultLostThreshold
	}
	return t
}

// Options configures a Server. DB, Registry, Cluster, Actors, Runners, Envoys and
// ResolveNamespace are required.
type Options struct {
	DB udb.Database
	// Label is the local datacenter label, for new runner, connection and ray ids.
	Label uint16
	// Auth, when enabled, wants a token in the rivet_token.<t> subprotocol or the
	// x-rivet-token header: the admin token, or an admin or runner token of the socket's
	// namespace.
	Auth *auth.Authenticator
	Log  *slog.Logger
	// Metrics records pings and live sockets; nil means a registry of the Server's own.
	Metrics *metrics.Metrics
	// Version is the engine's version, stored in the metadata of actor KV values; empty
	// means the build's.
	Version string

	Registry *Registry
	Cluster  Cluster
	// Actors, Runners and Envoys are the lifecycle the hosts' messages go to.
	Actors  *pegboard.Actors
	Runners *pegboard.Runners
	Envoys  *pegboard.Envoys
	// ResolveNamespace finds the namespace named in a connect URL (api-peer's resolver: the
	// leader datacenter owns namespaces).
	ResolveNamespace func(ctx context.Context, name string) (namespace.Namespace, error)

	// Runner and Envoy are the heartbeats of each kind of host.
	Runner, Envoy Timing
	// ActorStopThreshold is told to the hosts at init; zero means the default.
	ActorStopThreshold time.Duration
	// ServerlessDrainGrace is told at init to the runners of serverless pools (the
	// ToClientInit field serverlessDrainGracePeriod); zero means the default.
	ServerlessDrainGrace time.Duration
	// InitTimeout bounds the wait for a host's first message; zero means the default.
	InitTimeout time.Duration
}

// Server accepts the host sockets (Wrap) and serves them until Close.
type Server struct {
	o   Options
	reg *Registry

	ctx    context.Context // ends at Close
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool           // no socket is accepted after this
	wg     sync.WaitGroup // socket handlers, close handshakes, pong workers
	active atomic.Int64   // socket handlers running, releases included

	pongs wsconn.Batcher[pongJob] // pongs waiting to be recorded (ping.go)
}

// New returns a Server; Close ends its sockets.
func New(o Options) (*Server, error) {
	switch {
	case o.DB == nil, o.Registry == nil, o.Cluster == nil, o.Actors == nil, o.Runners == nil, o.Envoys == nil, o.ResolveNamespace == nil:
		return nil, errors.New("hostsock: DB, Registry, Cluster, Actors, Runners, Envoys and ResolveNamespace are required")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	if o.InitTimeout <= 0 {
		o.InitTimeout = DefaultInitTimeout
	}
	if o.ActorStopThreshold <= 0 {
		o.ActorStopThreshold = DefaultActorStopThreshold
	}
	if o.ServerlessDrainGrace <= 0 {
		o.ServerlessDrainGrace = DefaultServerlessDrainGrace
	}
	o.Runner, o.Envoy = o.Runner.withDefaults(), o.Envoy.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{o: o, reg: o.Registry, ctx: ctx, cancel: cancel}
	s.pongs = wsconn.Batcher[pongJob]{Run: s.recordPongs, WG: &s.wg, Workers: 1, Done: ctx.Done(),
		Linger: pongLinger(o.Runner, o.Envoy, o.Actors.Config())}
	return s, nil
}

// Wrap serves the host sockets in front of next, which gets every other request: the
// connect paths, and any other path that names a host kind as its target
// (rivet_target.<kind> subprotocol, or x-rivet-target), as Rivet's guard routes.
func (s *Server) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := protocolFor(r); p != nil {
			s.serve(w, r, p)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// protocolFor returns the protocol r connects with, or nil when r is not a host socket.
func protocolFor(r *http.Request) protocol {
	switch p := r.URL.Path; {
	case p == "/envoys/connect" || p == "/envoys/connect/" || wsconn.IsTarget(r, "envoy"):
		return &envoyProtocol{}
	case p == "/runners/connect" || p == "/runners/connect/" || wsconn.IsTarget(r, "runner"):
		return &runnerProtocol{}
	}
	return nil
}

// serve accepts one socket of protocol p, which is served until it ends (Close waits).
func (s *Server) serve(w http.ResponseWriter, r *http.Request, p protocol) {
	allow := func(g auth.Grant) *rerr.Error { return g.AllowHost(r.URL.Query().Get("namespace")) }
	if !wsconn.CheckUpgrade(w, r, s.o.Auth, allow, s.o.Label) {
		return
	}
	// rivetkit's envoy writes without TCP_NODELAY: its small frames wait for our ACKs.
	quick := p.info().kind == kindEnvoy
	ws, err := websocket.Accept(wsconn.SmallBuffers{ResponseWriter: w, MaxFrame: wsconn.MaxFrame, QuickAck: quick}, r, &websocket.AcceptOptions{
		Subprotocols:   []string{"rivet"},
		OriginPatterns: []string{"*"}, // hosts are not browsers; Rivet checks no origin
	})
	if err != nil {
		return // Accept has answered the request
	}
	ws.SetReadLimit(-1) // readFrame enforces MaxMessage, closing with ws.invalid_packet
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.wg.Add(1)
	}
	s.mu.Unlock()
	ray := id.New(s.o.Label).String()
	if closed {
		_ = ws.Close(websocket.StatusCode(rerr.CloseError), rerr.CloseReason(rerr.WSGoingAway(), ray))
		return
	}
	c := newConn(s, p, ws, ray)
	s.active.Add(1)
	// The socket is served on a goroutine of its own and the handler returns, so that
	// net/http lets go of the connection's state and buffers (wsconn.SmallBuffers).
	go func() {
		defer s.wg.Done()
		defer s.active.Add(-1)
		c.run(r)
	}()
}

// Close closes every live socket with 1011 ws.going_away (the host reconnects) and waits for
// their handlers to end. Sockets opened afterwards are refused the same way.
func (s *Server) Close() {
	s.CloseSockets()
	s.cancel()
	s.wg.Wait()
}

// CloseSockets closes every live socket with 1011 ws.going_away, as Close does, and refuses
// new ones, but returns at once: each socket's handler ends on its own, releasing what it
// held (Active counts them down).
func (s *Server) CloseSockets() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.reg.closeAll(rerr.WSGoingAway())
}

// Active is how many socket handlers are running, their disconnects and releases included.
func (s *Server) Active() int64 { return s.active.Load() }

// serverlessDrainGrace is the serverlessDrainGracePeriod told to a runner at init: the
// grace in ms for a runner of a serverless pool, none for any other.
func (o *Options) serverlessDrainGrace(serverless bool) *int64 {
	if !serverless {
		return nil
	}
	ms := o.ServerlessDrainGrace.Milliseconds()
	return &ms
}
