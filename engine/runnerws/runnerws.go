// Package runnerws serves the runner WebSocket, GET /runners/connect (and
// /runners/connect/), as the Rivet engine does for runner protocol v5–v7
// (rivet-protocol.md §2, §6.1).
//
// Handshake: the token (when an admin token is configured) travels in the
// subprotocol rivet_token.<t> (or the x-rivet-token header); before the
// upgrade, a missing one is answered 400 guard.missing_header and a wrong one
// 403 api.forbidden. The server accepts the upgrade answering subprotocol "rivet"
// when offered, then checks the query (protocol_version, namespace,
// runner_key) and closes a bad request with 1011 "group.code#ray_id". The
// first binary frame must be ToServerInit within InitTimeout (5 s), else
// 1011 ws.timed_out_waiting_for_init; a frame that does not decode closes
// with 1011 ws.invalid_packet (a text first frame with
// ws.invalid_initial_packet). The runner is registered through
// ops/runner.Register with a fresh connection id (its prepopulateActorNames join the
// namespace's actor names), the pool's config is ensured and older versions drained when
// the config says so (engine/pegboard.Runners.Registered), and it is answered ToClientInit.
//
// After init: a socket registered later with the same (namespace, name,
// runner_key) evicts this one with 1000 ws.eviction; the server sends
// ToClientPing every PingInterval (plus 0–127 ms jitter), records each
// ToServerPong through ops/runner.UpdatePing, and closes the socket with
// 1011 ws.timed_out after PingTimeout without a pong. ToServerStopping drains
// the runner (engine/pegboard.Runners.Drain); when the runner stops, its socket
// is closed with 1000 ws.eviction (CloseRunner). A socket that ends without
// being evicted is disconnected (ops/runner.Disconnect).
package runnerws

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/engine/metrics"
	"github.com/berthhq/berth/engine/pegboard"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/namespace"
	oprunner "github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/id"
	proto "github.com/berthhq/berth/pkg/protocol/runner"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Defaults observed on the Rivet engine (rivet-protocol.md §2, §3.2).
const (
	DefaultInitTimeout         = 5 * time.Second
	DefaultPingInterval        = 3 * time.Second
	DefaultPingTimeout         = 15 * time.Second
	DefaultRunnerLostThreshold = 15000   // ms, ToClientInit
	DefaultActorStopThreshold  = 1800000 // ms, ToClientInit (v6+)
	// MaxFrame bounds one incoming frame: the 20 MiB payload limit plus room for the envelope.
	MaxFrame = 20<<20 + 1<<20
)

// Options configures a Server.
type Options struct {
	DB udb.Database
	// Label is the local datacenter label, for new runner, connection and ray ids.
	Label uint16
	// AdminToken, when set, must be given in the rivet_token.<t> subprotocol.
	AdminToken string
	Log        *slog.Logger
	// Runners drains a runner that sends ToServerStopping and follows up
	// registrations (pool config, version-upgrade drains); its Actors take the
	// runner's events. Nil means a lifecycle of the Server's own (with ActorConfig,
	// or the default one), whose loops the owner runs.
	Runners     *pegboard.Runners
	ActorConfig *actor.Config
	// Datacenter is the local datacenter's name, for the actors' API objects.
	Datacenter string
	// Version is the engine's version, stored in the metadata of actor KV values.
	Version string
	// Metrics records ping transactions and live sockets; nil means a
	// registry of the Server's own.
	Metrics *metrics.Metrics
	// ResolveNamespace finds the namespace named in the connect URL; nil means this store
	// (right in the leader datacenter, which owns namespaces; other datacenters pass
	// api-peer's resolver, which asks the leader).
	ResolveNamespace func(ctx context.Context, name string) (namespace.Namespace, error)
	// Zero values mean the defaults above.
	InitTimeout         time.Duration
	PingInterval        time.Duration
	PingTimeout         time.Duration
	RunnerLostThreshold int64
	ActorStopThreshold  int64
	// Cluster, when set, makes this server one of several nodes sharing the store
	// (engine/cluster): sockets are recorded as held here, released when they end, and
	// commands, closes and evictions for runners held elsewhere go to their node.
	Cluster wsconn.Cluster
	// AnnounceActors, when set, tells the other nodes of the actors the lifecycle changed
	// (engine/cluster.Node.AnnounceActors; pegboard.ActorsOptions.Announce).
	AnnounceActors func(actors []id.ID)
}

// Server is the runner WebSocket endpoint and the registry of its live sockets.
type Server struct {
	o      Options
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	conns    map[id.ID]*conn // live, initialised sockets by connection id
	byRunner map[id.ID]*conn // the same sockets by runner id (the newest one)
	closed   bool

	gateway proto.GatewayID         // this process's gateway id, random
	tunnels map[tunnelKey]*Tunnel   // open gateway requests
	pongs   wsconn.Batcher[pongJob] // pongs waiting to be recorded (ping.go)
	wg      sync.WaitGroup
	active  atomic.Int64 // socket handlers running, releases included
}

// New returns a Server; Close ends its sockets.
func New(o Options) *Server {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.InitTimeout <= 0 {
		o.InitTimeout = DefaultInitTimeout
	}
	if o.PingInterval <= 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.PingTimeout <= 0 {
		o.PingTimeout = DefaultPingTimeout
	}
	if o.RunnerLostThreshold == 0 {
		o.RunnerLostThreshold = DefaultRunnerLostThreshold
	}
	if o.ActorStopThreshold == 0 {
		o.ActorStopThreshold = DefaultActorStopThreshold
	}
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	if o.ResolveNamespace == nil {
		o.ResolveNamespace = func(ctx context.Context, name string) (namespace.Namespace, error) {
			res, err := o.DB.ReadTransact(ctx, func(tx udb.ReadTransaction) (any, error) {
				return namespace.ResolveByName(ctx, tx, namespace.ResolveByNameInput{Name: name})
			})
			if err != nil {
				return namespace.Namespace{}, err
			}
			return res.(namespace.Namespace), nil
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{o: o, ctx: ctx, cancel: cancel, conns: map[id.ID]*conn{}, byRunner: map[id.ID]*conn{}, tunnels: map[tunnelKey]*Tunnel{}}
	_, _ = crand.Read(s.gateway[:])
	s.pongs = wsconn.Batcher[pongJob]{Run: s.recordPongs, WG: &s.wg, Workers: 1, Linger: 500 * time.Microsecond}
	if s.o.Runners == nil {
		cfg := actor.DefaultConfig()
		if o.ActorConfig != nil {
			cfg = *o.ActorConfig
		}
		actors := pegboard.NewActors(pegboard.ActorsOptions{
			DB: o.DB, Sockets: s, Log: o.Log, Metrics: o.Metrics, Config: cfg, Label: o.Label, Datacenter: o.Datacenter,
			Announce: o.AnnounceActors,
		})
		s.o.Runners = pegboard.NewRunners(pegboard.Options{
			DB: o.DB, Sockets: s, Log: o.Log, Metrics: o.Metrics, Actors: actors,
			LostThreshold: time.Duration(o.RunnerLostThreshold) * time.Millisecond,
		})
	}
	return s
}

// Runners is the runner lifecycle the server drains and registers through.
func (s *Server) Runners() *pegboard.Runners { return s.o.Runners }

// IsConnectPath reports whether path is the runner socket's path.
func IsConnectPath(path string) bool {
	return path == "/runners/connect" || path == "/runners/connect/"
}

// IsRunnerTarget reports whether r names the runner socket by target, as Rivet's guard
// routes after the path rules: a rivet_target.runner subprotocol, or x-rivet-target: runner.
// Paths under /gateway/ belong to the actor gateway and are never runner targets.
func IsRunnerTarget(r *http.Request) bool { return wsconn.IsTarget(r, "runner") }

// Wrap serves the runner socket in front of next, which gets every other request: the
// /runners/connect paths, and any other path whose target is the runner (IsRunnerTarget).
func (s *Server) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsConnectPath(r.URL.Path) || IsRunnerTarget(r) {
			s.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Close closes every live socket with 1011 ws.going_away (the runner reconnects) and waits
// for their handlers to end. Sockets opened afterwards are refused the same way.
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
	live := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		live = append(live, c)
	}
	s.mu.Unlock()
	for _, c := range live {
		c.fail(rerr.WS("going_away"))
	}
}

// Active is how many socket handlers are running, their disconnects and releases included.
func (s *Server) Active() int64 { return s.active.Load() }

// Holds reports whether this server holds a live socket of runner rid.
func (s *Server) Holds(rid id.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byRunner[rid] != nil
}

// ServeHTTP accepts one runner socket, which is served until it ends (Close waits for it).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !wsconn.CheckUpgrade(w, r, s.o.AdminToken, s.o.Label) {
		return
	}
	ws, err := websocket.Accept(wsconn.SmallBuffers{ResponseWriter: w, MaxFrame: wsconn.MaxFrame}, r, &websocket.AcceptOptions{
		Subprotocols:   []string{"rivet"},
		OriginPatterns: []string{"*"}, // runners are not browsers; Rivet checks no origin
	})
	if err != nil {
		return // Accept has answered the request
	}
	ws.SetReadLimit(-1) // readFrame enforces MaxFrame, closing with ws.invalid_packet as Rivet does
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.wg.Add(1)
	}
	s.mu.Unlock()
	ray := id.New(s.o.Label).String()
	if closed {
		_ = ws.Close(websocket.StatusCode(rerr.CloseError), rerr.CloseReason(rerr.WS("going_away"), ray))
		return
	}
	c := &conn{s: s, ws: ws, ray: ray, done: make(chan struct{})}
	c.cmds = wsconn.CommandGate[actor.Command, actor.Checkpoint]{Key: checkpointOf, Write: c.writeCommands}
	s.active.Add(1)
	// The socket is served on a goroutine of its own and the handler returns, so that
	// net/http lets go of the connection's state and 8 KiB of buffers (hijack.go).
	go func() {
		defer s.wg.Done()
		defer s.active.Add(-1)
		c.run(r)
	}()
}

// conn is one runner socket.
type conn struct {
	s   *Server
	ws  *websocket.Conn
	ray string

	version  int
	nsID     id.ID
	key      string
	connID   id.ID
	runnerID id.ID
	epoch    int64 // of the ownership record (Options.Cluster); 0 when none was claimed

	closeOnce sync.Once
	done      chan struct{} // closed by the first close
	evicted   bool          // set before done closes

	pongMu   sync.Mutex
	lastPong time.Time
	hb       wsconn.Heartbeat // the heartbeat schedule (ping.go)

	pool actor.Pool // the runner's pool, for its pending queue

	// cmds holds commands until ToClientInit is out and the stored ones are replayed.
	cmds wsconn.CommandGate[actor.Command, actor.Checkpoint]

	open wsconn.OpenSet[*Tunnel] // this socket's tunnels, closed with it
}

// closeWith closes the socket once with err's code and reason; later calls do nothing.
func (c *conn) closeWith(err error, evicted bool) {
	c.closeOnce.Do(func() {
		c.evicted = evicted
		close(c.done)
		c.open.CloseAll()
		code := websocket.StatusCode(rerr.CloseCode(err))
		// The handler still holds the WaitGroup here (its last defer comes after the close),
		// so Server.Close also waits for the close handshakes.
		c.s.wg.Add(1)
		go func() {
			defer c.s.wg.Done()
			_ = c.ws.Close(code, rerr.CloseReason(err, c.ray))
		}()
	})
}

func (c *conn) fail(err error) { c.closeWith(err, false) }

func (c *conn) run(r *http.Request) {
	defer func() {
		// Make sure the socket is closed and the reader is released.
		c.fail(nil)
		<-c.done
	}()
	if err := c.checkQuery(r); err != nil {
		c.fail(err)
		c.drain()
		return
	}
	init, err := c.readInit()
	if err != nil {
		c.fail(err)
		c.drain()
		return
	}
	err = c.register(init)
	if !c.runnerID.IsZero() {
		defer c.disconnect()
		defer c.s.remove(c)
	}
	if err != nil {
		c.fail(err)
		c.drain()
		return
	}
	c.hb.Start(wsconn.Jitter(c.s.o.PingInterval), c.s.o.PingInterval, c.ping)
	defer func() {
		c.fail(nil) // a running ping's write ends with the socket
		c.hb.Stop()
	}()
	c.afterInit(c.pool)
	c.readLoop()
}

// drain reads until the close handshake completes, so Close gets the peer's answer.
func (c *conn) drain() {
	for {
		_, r, err := c.ws.Reader(context.Background())
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			return
		}
	}
}

// readFrame reads one message of at most MaxFrame bytes; a longer one is ws.invalid_packet.
func (c *conn) readFrame() (websocket.MessageType, []byte, error) {
	typ, r, err := c.ws.Reader(context.Background())
	if err != nil {
		return 0, nil, err
	}
	b, err := io.ReadAll(io.LimitReader(r, MaxFrame+1))
	if err != nil {
		return 0, nil, err
	}
	if len(b) > MaxFrame {
		return 0, nil, rerr.WS("invalid_packet").WithCause(errors.New("payload too large"))
	}
	return typ, b, nil
}

func (c *conn) checkQuery(r *http.Request) error {
	q := r.URL.Query()
	pv, ns, key := q.Get("protocol_version"), q.Get("namespace"), q.Get("runner_key")
	if pv == "" || ns == "" || key == "" {
		return rerr.WS("invalid_url")
	}
	v, err := strconv.ParseUint(pv, 10, 16)
	if err != nil {
		return rerr.WS("invalid_url")
	}
	// An unsupported version fails the init decode with ws.invalid_packet, as on Rivet.
	c.version = int(v)
	res, err := c.s.o.ResolveNamespace(c.s.ctx, ns)
	if err != nil {
		if c.s.ctx.Err() != nil {
			return rerr.WS("going_away")
		}
		if _, ok := rerr.As(err); !ok {
			c.s.o.Log.Error("runner socket: resolve namespace", "namespace", ns, "ray_id", c.ray, "error", err)
		}
		return err
	}
	c.nsID = res.NamespaceID
	c.key = key
	return nil
}

type frame struct {
	typ  websocket.MessageType
	data []byte
	err  error
}

func (c *conn) readInit() (proto.ToServerInit, error) {
	got := make(chan frame, 1)
	go func() {
		typ, b, err := c.readFrame()
		got <- frame{typ, b, err}
	}()
	t := time.NewTimer(c.s.o.InitTimeout)
	defer t.Stop()
	select {
	case f := <-got:
		switch {
		case f.err != nil:
			return proto.ToServerInit{}, f.err
		case f.typ != websocket.MessageBinary:
			return proto.ToServerInit{}, rerr.WS("invalid_initial_packet")
		}
		m, err := proto.DecodeToServer(f.data, c.version)
		if err != nil {
			return proto.ToServerInit{}, rerr.WS("invalid_packet").WithCause(err)
		}
		init, ok := m.(proto.ToServerInit)
		if !ok {
			return proto.ToServerInit{}, rerr.WS("invalid_initial_packet")
		}
		return init, nil
	case <-t.C:
		c.fail(rerr.WS("timed_out_waiting_for_init"))
		<-got // the reader ends with the close handshake
		return proto.ToServerInit{}, rerr.WS("timed_out_waiting_for_init")
	case <-c.s.ctx.Done():
		c.fail(rerr.WS("going_away"))
		<-got
		return proto.ToServerInit{}, rerr.WS("going_away")
	}
}

func (c *conn) register(init proto.ToServerInit) error {
	c.connID = id.New(c.s.o.Label)
	in := oprunner.RegisterInput{
		Namespace: c.nsID, Name: init.Name, Key: c.key, Version: init.Version,
		TotalSlots: init.TotalSlots, ProtocolVersion: uint16(c.version),
		ConnID: c.connID, NewRunnerID: id.New(c.s.o.Label), NowMs: time.Now().UnixMilli(),
	}
	if init.Metadata != nil {
		in.Metadata = json.RawMessage(*init.Metadata)
	}
	for _, n := range init.PrepopulateActorNames {
		an := oprunner.ActorName{Name: n.Name}
		if n.Metadata != "" {
			an.Metadata = json.RawMessage(n.Metadata)
		}
		in.ActorNames = append(in.ActorNames, an)
	}
	res, err := c.s.o.DB.Transact(c.s.ctx, func(tx udb.Transaction) (any, error) {
		return oprunner.Register(c.s.ctx, tx, in)
	})
	if err != nil {
		if c.s.ctx.Err() != nil {
			return rerr.WS("going_away")
		}
		if _, ok := rerr.As(err); !ok {
			c.s.o.Log.Error("runner socket: register", "ray_id", c.ray, "error", err)
		}
		return err
	}
	out := res.(oprunner.RegisterOutput)
	c.runnerID = out.RunnerID
	// Live before ToClientInit goes out, so that Close and a later eviction see the socket.
	if !c.s.add(c) {
		return rerr.WS("going_away")
	}
	if cl := c.s.o.Cluster; cl != nil {
		epoch, err := cl.ClaimSocket(c.s.ctx, actor.RunnerHost(c.runnerID))
		if err != nil {
			if c.s.ctx.Err() != nil {
				return rerr.WS("going_away")
			}
			c.s.o.Log.Error("runner socket: claim ownership", "runner_id", c.runnerID.String(), "ray_id", c.ray, "error", err)
			return rerr.Internal(err)
		}
		c.epoch = epoch
	}
	if !out.PrevConnID.IsZero() {
		c.s.evict(out.PrevConnID)
	}
	// The pool's config exists before the runner is told it is connected (on Rivet a create
	// right after the first connect could find none).
	if err := c.s.o.Runners.Registered(c.s.ctx, in); err != nil {
		if c.s.ctx.Err() != nil {
			return rerr.WS("going_away")
		}
		if _, ok := rerr.As(err); !ok {
			c.s.o.Log.Error("runner socket: after registration", "runner_id", c.runnerID.String(), "ray_id", c.ray, "error", err)
		}
		return err
	}
	b, err := proto.EncodeToClient(proto.ToClientInit{
		RunnerID: c.runnerID.String(),
		Metadata: proto.ProtocolMetadata{
			RunnerLostThreshold: c.s.o.RunnerLostThreshold,
			ActorStopThreshold:  c.s.o.ActorStopThreshold,
		},
	}, c.version)
	if err != nil {
		return rerr.Internal(err)
	}
	c.pongMu.Lock()
	c.lastPong = time.Now()
	c.pongMu.Unlock()
	c.pool = actor.Pool{Namespace: c.nsID, Selector: init.Name}
	// Not c.s.ctx: a write whose context ends closes the connection without a close frame.
	ctx, cancel := context.WithTimeout(context.Background(), c.s.o.InitTimeout)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageBinary, b)
}

// add records c as live; false when the server is closing.
func (s *Server) add(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c.connID] = c
	s.byRunner[c.runnerID] = c
	s.o.Metrics.RunnerSockets.Set(float64(len(s.conns)))
	return true
}

func (s *Server) remove(c *conn) {
	s.mu.Lock()
	if s.conns[c.connID] == c {
		delete(s.conns, c.connID)
	}
	if s.byRunner[c.runnerID] == c {
		delete(s.byRunner, c.runnerID)
	}
	s.o.Metrics.RunnerSockets.Set(float64(len(s.conns)))
	s.mu.Unlock()
}

// CloseRunner closes the socket of runner rid with err, if this server holds it: a runner
// that stopped is told with 1000 ws.eviction not to come back.
// With Options.Cluster, a socket held by another node is closed there.
func (s *Server) CloseRunner(rid id.ID, err error) {
	if !s.CloseRunnerHere(rid, err) && s.o.Cluster != nil {
		s.o.Cluster.CloseSocket(actor.RunnerHost(rid), err)
	}
}

// CloseRunnerHere is CloseRunner for a socket on this node only; false when none is here.
func (s *Server) CloseRunnerHere(rid id.ID, err error) bool {
	s.mu.Lock()
	c := s.byRunner[rid]
	s.mu.Unlock()
	if c != nil {
		c.closeWith(err, true)
	}
	return c != nil
}

// evict closes the socket with that connection id with 1000 ws.eviction, wherever it is.
func (s *Server) evict(connID id.ID) {
	if !s.EvictHere(connID) && s.o.Cluster != nil {
		s.o.Cluster.Evict(connID)
	}
}

// EvictHere closes the socket with that connection id with 1000 ws.eviction if it is live
// on this node; false when it is not.
func (s *Server) EvictHere(connID id.ID) bool {
	s.mu.Lock()
	c := s.conns[connID]
	s.mu.Unlock()
	if c != nil {
		c.closeWith(rerr.WS("eviction"), true)
	}
	return c != nil
}

// readLoop handles frames until the socket ends or a frame is invalid.
func (c *conn) readLoop() {
	for {
		typ, b, err := c.readFrame()
		if err != nil {
			if e, ok := rerr.As(err); ok {
				c.fail(e)
				c.drain()
			} else {
				c.fail(nil)
			}
			return
		}
		if typ != websocket.MessageBinary {
			continue // Rivet ignores non-binary frames after init
		}
		m, err := proto.DecodeToServer(b, c.version)
		if err != nil {
			c.fail(rerr.WS("invalid_packet").WithCause(err))
			c.drain()
			return
		}
		switch m := m.(type) {
		case proto.ToServerPong:
			c.pong(m)
		case proto.ToServerStopping:
			c.stopping()
		case proto.ToServerEvents:
			c.events(m)
		case proto.ToServerAckCommands:
			c.ackCommands(m)
		case proto.ToServerKvRequest:
			c.kvRequest(m)
		case proto.ToServerTunnelMessage:
			c.tunnelMessage(m)
		}
	}
}

// stopping drains the runner, which asked to stop (ToServerStopping); with no actor on it,
// it stops at once and its socket closes with ws.eviction.
func (c *conn) stopping() {
	err := c.s.o.Runners.Drain(c.s.ctx, c.runnerID, c.connID)
	switch {
	case err == nil:
	case rerr.Is(err, "runner", "stale_connection"):
		c.closeWith(rerr.WS("eviction"), true)
	case c.s.ctx.Err() != nil:
	default:
		c.s.o.Log.Warn("runner socket: drain on stopping", "runner_id", c.runnerID.String(), "ray_id", c.ray, "error", err)
	}
}

// disconnect takes the runner out of the allocation index when its socket ended without
// being evicted; a newer socket's registration makes it a no-op (stale connection).
func (c *conn) disconnect() {
	<-c.done
	if cl := c.s.o.Cluster; cl != nil && c.epoch != 0 {
		// The ownership record goes with the disconnect, in one bounded (batched) release.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.s.ctx), 20*time.Second)
		defer cancel()
		cl.ReleaseSocket(ctx, actor.RunnerHost(c.runnerID), c.epoch, func(ctx context.Context, tx udb.Transaction) error {
			if c.evicted {
				return nil
			}
			return oprunner.Disconnect(ctx, tx, oprunner.DisconnectInput{RunnerID: c.runnerID, ConnID: c.connID})
		})
		return
	}
	if c.evicted {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.s.ctx), 10*time.Second)
	defer cancel()
	c.disconnectNow(ctx)
}

// disconnectNow runs ops/runner.Disconnect for this socket.
func (c *conn) disconnectNow(ctx context.Context) {
	in := oprunner.DisconnectInput{RunnerID: c.runnerID, ConnID: c.connID}
	_, err := c.s.o.DB.Transact(ctx, func(tx udb.Transaction) (any, error) {
		return nil, oprunner.Disconnect(ctx, tx, in)
	})
	if err != nil && !rerr.Is(err, "runner", "stale_connection") {
		c.s.o.Log.Warn("runner socket: disconnect", "runner_id", c.runnerID.String(), "ray_id", c.ray, "error", err)
	}
}
