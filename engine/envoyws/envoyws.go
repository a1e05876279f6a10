package envoyws

import (
	"context"
	crand "crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/internal/wsconn"
	"github.com/berthhq/berth/engine/metrics"
	"github.com/berthhq/berth/engine/pegboard"
	"github.com/berthhq/berth/ops/actor"
	openvoy "github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	proto "github.com/berthhq/berth/pkg/protocol/envoy"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Defaults, as on the Rivet engine (rivet-engine.md §8, Numbers).
const (
	DefaultInitTimeout        = 5 * time.Second
	DefaultPingInterval       = 3 * time.Second // envoy_update_ping_interval
	DefaultPingTimeout        = 15 * time.Second
	DefaultEnvoyLostThreshold = 15000   // ms, ToEnvoyInit
	DefaultActorStopThreshold = 1800000 // ms, ToEnvoyInit
	// MaxResponsePayloadSize is envoy_max_response_payload_size, told in ToEnvoyInit.
	MaxResponsePayloadSize = 20 << 20
	// MaxFrame bounds one incoming frame: the payload limit plus room for the envelope.
	MaxFrame = MaxResponsePayloadSize + 1<<20
)

// Options configures a Server.
type Options struct {
	DB udb.Database
	// Label is the local datacenter label, for connection and ray ids.
	Label uint16
	// AdminToken, when set, must be given in the rivet_token.<t> subprotocol.
	AdminToken string
	Log        *slog.Logger
	// Envoys is the envoy lifecycle (stopping, disconnection, the expiry loop); nil means one
	// of the Server's own, whose loop the owner runs, on Actors.
	Envoys *pegboard.Envoys
	// Actors is the actor lifecycle the envoys' actors go through, when Envoys is nil; nil
	// means one of the Server's own. The Server attaches itself to it (AttachEnvoys) to
	// receive the commands of the actors placed on envoys.
	Actors *pegboard.Actors
	// Version is the engine's version, stored in the metadata of actor KV values.
	Version []byte
	// ResolveNamespace finds the namespace named in the connect URL; nil means this store.
	ResolveNamespace func(ctx context.Context, name string) (namespace.Namespace, error)
	// Zero values mean the defaults above.
	InitTimeout        time.Duration
	PingInterval       time.Duration
	PingTimeout        time.Duration
	EnvoyLostThreshold int64 // ms
	ActorStopThreshold int64 // ms
	// Metrics, when set, records the pongs' round-trip times.
	Metrics *metrics.Metrics
	// Cluster, when set, makes this server one of several nodes sharing the store
	// (engine/cluster), as for runners: sockets are recorded as held here, released when they
	// end, and commands, closes and evictions for envoys held elsewhere go to their node.
	Cluster wsconn.Cluster
}

// Server is the envoy WebSocket endpoint and the registry of its live sockets.
type Server struct {
	o      Options
	ctx    context.Context // ends at Close
	cancel context.CancelFunc

	mu      sync.Mutex
	conns   map[id.ID]*conn             // live, registered sockets by connection id
	byEnvoy map[envoyRef]*conn          // the same sockets by envoy (the newest one)
	tunnels map[proto.RequestID]*Tunnel // open gateway requests (tunnel.go)
	closed  bool
	gateway proto.GatewayID // this process's gateway id, random

	pongs  wsconn.Batcher[pongJob] // pongs waiting to be recorded (ping.go)
	wg     sync.WaitGroup          // socket handlers, close handshakes, pong workers
	active atomic.Int64            // socket handlers running, releases included
}

// envoyRef names an envoy: keys are unique within a namespace.
type envoyRef struct {
	ns  id.ID
	key string
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
	if o.EnvoyLostThreshold == 0 {
		o.EnvoyLostThreshold = DefaultEnvoyLostThreshold
	}
	if o.ActorStopThreshold == 0 {
		o.ActorStopThreshold = DefaultActorStopThreshold
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
	s := &Server{o: o, ctx: ctx, cancel: cancel, conns: map[id.ID]*conn{}, byEnvoy: map[envoyRef]*conn{}, tunnels: map[proto.RequestID]*Tunnel{}}
	_, _ = crand.Read(s.gateway[:])
	if len(s.o.Version) == 0 {
		s.o.Version = []byte("dev")
	}
	s.pongs = wsconn.Batcher[pongJob]{Run: s.recordBatch, WG: &s.wg}
	if s.o.Envoys == nil {
		s.o.Envoys = pegboard.NewEnvoys(pegboard.EnvoysOptions{
			DB: o.DB, Sockets: s, Log: o.Log, Actors: o.Actors,
			LostThreshold: time.Duration(o.EnvoyLostThreshold) * time.Millisecond,
		})
	}
	s.o.Envoys.Actors().AttachEnvoys(s)
	return s
}

// Envoys is the envoy lifecycle the server goes through.
func (s *Server) Envoys() *pegboard.Envoys { return s.o.Envoys }

// IsConnectPath reports whether path is the envoy socket's path.
func IsConnectPath(path string) bool {
	return path == "/envoys/connect" || path == "/envoys/connect/"
}

// IsEnvoyTarget reports whether r names the envoy socket by target (rivet_target.envoy, or
// x-rivet-target: envoy), as Rivet's guard routes after the path rules.
func IsEnvoyTarget(r *http.Request) bool { return wsconn.IsTarget(r, "envoy") }

// Wrap serves the envoy socket in front of next, which gets every other request.
func (s *Server) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsConnectPath(r.URL.Path) || IsEnvoyTarget(r) {
			s.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Close closes every live socket with 1011 ws.going_away (the envoy reconnects) and waits for
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

// Holds reports whether this server holds a live socket of envoy (ns, envoyKey).
func (s *Server) Holds(ns id.ID, envoyKey string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byEnvoy[envoyRef{ns, envoyKey}] != nil
}

// ServeHTTP accepts one envoy socket, which is served until it ends (Close waits for it).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !wsconn.CheckUpgrade(w, r, s.o.AdminToken, s.o.Label) {
		return
	}
	ws, err := websocket.Accept(wsconn.SmallBuffers{ResponseWriter: w, MaxFrame: wsconn.MaxFrame}, r, &websocket.AcceptOptions{
		Subprotocols:   []string{"rivet"},
		OriginPatterns: []string{"*"}, // envoys are not browsers; Rivet checks no origin
	})
	if err != nil {
		return // Accept has answered the request
	}
	ws.SetReadLimit(-1) // readFrame enforces MaxFrame
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
	c.cmds = wsconn.CommandGate[actor.Command, actor.Checkpoint]{Key: hostCheckpoint, Write: c.writeCommands}
	s.active.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.active.Add(-1)
		c.run(r)
	}()
}

// conn is one envoy socket.
type conn struct {
	// Static after construction.
	s   *Server
	ws  *websocket.Conn
	ray string

	// Set by run before registration, then static.
	version int
	nsID    id.ID
	key     string
	pool    string
	appVer  uint32
	connID  id.ID
	epoch   int64 // of the ownership record (Options.Cluster); 0 when none was claimed

	closeOnce sync.Once
	done      chan struct{} // closed by the first close

	pongMu   sync.Mutex
	lastPong time.Time // guarded by pongMu
	hb       wsconn.Heartbeat

	// cmds holds commands until the stored ones are replayed after registration.
	cmds wsconn.CommandGate[actor.Command, actor.Checkpoint]

	open wsconn.OpenSet[*Tunnel] // this socket's tunnels, closed with it
}

// closeWith closes the socket once with err's code and reason; later calls do nothing.
func (c *conn) closeWith(err error) {
	c.closeOnce.Do(func() {
		close(c.done)
		c.open.CloseAll()
		code := websocket.StatusCode(rerr.CloseCode(err))
		// The handler still holds the WaitGroup here, so Server.Close also waits for the
		// close handshake.
		c.s.wg.Add(1)
		go func() {
			defer c.s.wg.Done()
			_ = c.ws.Close(code, rerr.CloseReason(err, c.ray))
		}()
	})
}

func (c *conn) fail(err error) { c.closeWith(err) }

func (c *conn) run(r *http.Request) {
	defer func() {
		c.fail(nil)
		<-c.done
	}()
	if err := c.checkQuery(r); err != nil {
		c.fail(err)
		c.drain()
		return
	}
	if err := c.write(proto.ToEnvoyInit{Metadata: proto.ProtocolMetadata{
		EnvoyLostThreshold:     c.s.o.EnvoyLostThreshold,
		ActorStopThreshold:     c.s.o.ActorStopThreshold,
		MaxResponsePayloadSize: MaxResponsePayloadSize,
	}}); err != nil {
		c.fail(nil)
		return
	}
	first, err := c.readFirst()
	if err != nil {
		c.fail(err)
		c.drain()
		return
	}
	md, _ := first.(proto.ToRivetMetadata)
	err = c.register(md)
	if !c.connID.IsZero() {
		defer c.disconnect()
		defer c.s.remove(c)
	}
	if err != nil {
		c.fail(err)
		c.drain()
		return
	}
	c.pongMu.Lock()
	c.lastPong = time.Now()
	c.pongMu.Unlock()
	// Rivet pings at once, then every interval plus jitter.
	c.hb.Start(0, c.s.o.PingInterval, c.ping)
	defer func() {
		c.fail(nil) // a running ping's write ends with the socket
		c.hb.Stop()
	}()
	c.afterRegister()
	if _, ok := first.(proto.ToRivetMetadata); !ok {
		c.handle(first)
	}
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

// write sends one message within InitTimeout. Not the server's context: a write whose
// context ends closes the connection without a close frame.
func (c *conn) write(m proto.ToEnvoy) error {
	b, err := proto.EncodeToEnvoy(m, c.version)
	if err != nil {
		return rerr.Internal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.s.o.InitTimeout)
	defer cancel()
	return c.writeBytes(ctx, b)
}

func (c *conn) writeBytes(ctx context.Context, b []byte) error {
	return c.ws.Write(ctx, websocket.MessageBinary, b)
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

// invalidRequest is ws.invalid_request, Rivet's close reason for a bad connect URL.
func invalidRequest(field, why string) error {
	return rerr.WS("invalid_request").WithCause(errors.New(field + ": " + why))
}

// checkQuery validates the connect URL and the pool's runner config, before ToEnvoyInit.
func (c *conn) checkQuery(r *http.Request) error {
	q := r.URL.Query()
	pv, err := strconv.ParseUint(q.Get("protocol_version"), 10, 16)
	switch {
	case err != nil:
		return invalidRequest("protocol_version", "missing or not a number")
	case pv < proto.MinVersion || pv > proto.LatestVersion:
		return invalidRequest("protocol_version", "unsupported, this engine speaks "+strconv.Itoa(proto.LatestVersion))
	}
	c.version = int(pv)
	ns := q.Get("namespace")
	if ns == "" {
		return invalidRequest("namespace", "missing")
	}
	c.pool = q.Get("pool_name")
	if err := checkPoolName(c.pool); err != nil {
		return err
	}
	c.key = q.Get("envoy_key")
	if err := checkEnvoyKey(c.key); err != nil {
		return err
	}
	v, err := strconv.ParseUint(q.Get("version"), 10, 32)
	if err != nil {
		return invalidRequest("version", "missing or not a u32")
	}
	c.appVer = uint32(v)
	res, err := c.s.o.ResolveNamespace(c.s.ctx, ns)
	if err != nil {
		return c.storeErr("resolve namespace", err)
	}
	c.nsID = res.NamespaceID
	_, err = c.s.o.DB.ReadTransact(c.s.ctx, func(tx udb.ReadTransaction) (any, error) {
		return runnerconfig.Get(c.s.ctx, tx, runnerconfig.GetInput{Namespace: c.nsID, Name: c.pool})
	})
	if err != nil {
		return c.configErr(err)
	}
	return nil
}

// configErr maps a failed runner-config read: none is ws.no_runner_config.
func (c *conn) configErr(err error) error {
	if rerr.Is(err, "runner_config", "not_found") {
		return rerr.New("ws", "no_runner_config", "pool_name", c.pool)
	}
	return c.storeErr("read runner config", err)
}

// storeErr maps a failed store call: ws.going_away while the server closes; rerr errors
// as they are; anything else is logged and internal.
func (c *conn) storeErr(what string, err error) error {
	if c.s.ctx.Err() != nil {
		return rerr.WS("going_away")
	}
	if _, ok := rerr.As(err); !ok {
		c.s.o.Log.Error("envoy socket: "+what, "envoy_key", c.key, "ray_id", c.ray, "error", err)
	}
	return err
}

func checkPoolName(p string) error {
	switch {
	case p == "":
		return invalidRequest("pool_name", "missing")
	case len(p) > openvoy.MaxPoolNameLen:
		return invalidRequest("pool_name", "longer than "+strconv.Itoa(openvoy.MaxPoolNameLen)+" bytes")
	case !utf8.ValidString(p):
		return invalidRequest("pool_name", "not UTF-8")
	}
	return nil
}

// checkEnvoyKey applies Rivet's rule: 3 to 128 of [A-Za-z0-9_-], not starting or ending with
// '-' (ops/envoy.Register checks the same).
func checkEnvoyKey(k string) error {
	if len(k) < openvoy.MinEnvoyKeyLen || len(k) > openvoy.MaxEnvoyKeyLen {
		return invalidRequest("envoy_key", "must be 3 to 128 characters")
	}
	if k[0] == '-' || k[len(k)-1] == '-' {
		return invalidRequest("envoy_key", "must not start or end with '-'")
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return invalidRequest("envoy_key", "may hold only letters, digits, '-' and '_'")
		}
	}
	return nil
}

type frame struct {
	msg proto.ToRivet
	err error
}

// readFirst reads the envoy's first message within InitTimeout: normally ToRivetMetadata.
func (c *conn) readFirst() (proto.ToRivet, error) {
	got := make(chan frame, 1)
	go func() {
		typ, b, err := c.readFrame()
		switch {
		case err != nil:
		case typ != websocket.MessageBinary:
			err = rerr.WS("invalid_initial_packet")
		default:
			var m proto.ToRivet
			if m, err = proto.DecodeToRivet(b, c.version); err != nil {
				err = rerr.WS("invalid_packet").WithCause(err)
			}
			got <- frame{m, err}
			return
		}
		got <- frame{nil, err}
	}()
	t := time.NewTimer(c.s.o.InitTimeout)
	defer t.Stop()
	select {
	case f := <-got:
		return f.msg, f.err
	case <-t.C:
		c.fail(rerr.WS("timed_out_waiting_for_init"))
		<-got // the reader ends with the close handshake
		return nil, rerr.WS("timed_out_waiting_for_init")
	case <-c.s.ctx.Done():
		c.fail(rerr.WS("going_away"))
		<-got
		return nil, rerr.WS("going_away")
	}
}

// register registers the envoy under a fresh connection id in one transaction, with the
// pool's runner config read serializably (a concurrent delete of it conflicts), records
// the socket as held by this node (Options.Cluster), and evicts the socket it replaced,
// wherever it is.
func (c *conn) register(md proto.ToRivetMetadata) error {
	connID := id.New(c.s.o.Label)
	in := openvoy.RegisterInput{
		Namespace: c.nsID, EnvoyKey: c.key, PoolName: c.pool, Version: c.appVer,
		ProtocolVersion: uint16(c.version), ConnID: connID, NowMs: time.Now().UnixMilli(),
	}
	if md.Metadata != nil {
		in.Metadata = []byte(*md.Metadata)
	}
	res, err := c.s.o.DB.Transact(c.s.ctx, func(tx udb.Transaction) (any, error) {
		if _, err := runnerconfig.Get(c.s.ctx, tx, runnerconfig.GetInput{Namespace: c.nsID, Name: c.pool, Serializable: true}); err != nil {
			return nil, err
		}
		return openvoy.Register(c.s.ctx, tx, in)
	})
	switch {
	case rerr.Is(err, "runner_config", "not_found"):
		return c.configErr(err)
	case rerr.Is(err, "api", "bad_request"):
		return rerr.WS("invalid_packet").WithCause(err) // the metadata
	case err != nil:
		return c.storeErr("register", err)
	}
	out := res.(openvoy.RegisterOutput)
	c.connID = connID
	if !c.s.add(c) {
		return rerr.WS("going_away")
	}
	if cl := c.s.o.Cluster; cl != nil {
		epoch, err := cl.ClaimSocket(c.s.ctx, c.host())
		if err != nil {
			return c.storeErr("claim ownership", err)
		}
		c.epoch = epoch
	}
	if !out.PrevConnID.IsZero() {
		c.s.evict(out.PrevConnID)
	}
	c.s.o.Log.Debug("envoy registered", "namespace_id", c.nsID.String(), "envoy_key", c.key, "pool_name", c.pool,
		"new", out.New, "conn_id", connID.String(), "ray_id", c.ray)
	return nil
}

// add records c as live; false when the server is closing.
func (s *Server) add(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c.connID] = c
	s.byEnvoy[envoyRef{c.nsID, c.key}] = c
	return true
}

func (s *Server) remove(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns[c.connID] == c {
		delete(s.conns, c.connID)
	}
	if ref := (envoyRef{c.nsID, c.key}); s.byEnvoy[ref] == c {
		delete(s.byEnvoy, ref)
	}
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
		c.closeWith(rerr.WS("eviction"))
	}
	return c != nil
}

// CloseEnvoy closes the socket of envoy (ns, envoyKey) with err, if this server holds it,
// else (with Options.Cluster) on the node that does.
func (s *Server) CloseEnvoy(ns id.ID, envoyKey string, err error) {
	if !s.CloseEnvoyHere(ns, envoyKey, err) && s.o.Cluster != nil {
		s.o.Cluster.CloseSocket(actor.EnvoyHost(ns, envoyKey), err)
	}
}

// CloseEnvoyHere is CloseEnvoy for a socket on this node only; false when none is here.
func (s *Server) CloseEnvoyHere(ns id.ID, envoyKey string, err error) bool {
	s.mu.Lock()
	c := s.byEnvoy[envoyRef{ns, envoyKey}]
	s.mu.Unlock()
	if c != nil {
		c.closeWith(err)
	}
	return c != nil
}

// Live reports how many registered sockets this server holds.
func (s *Server) Live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
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
			continue // as for runners, non-binary frames after init are ignored
		}
		m, err := proto.DecodeToRivet(b, c.version)
		if err != nil {
			c.fail(rerr.WS("invalid_packet").WithCause(err))
			c.drain()
			return
		}
		c.handle(m)
	}
}

// handle acts on one message from the envoy.
func (c *conn) handle(m proto.ToRivet) {
	switch m := m.(type) {
	case proto.ToRivetPong:
		c.pong(m)
	case proto.ToRivetStopping:
		c.stopping()
	case proto.ToRivetMetadata:
		// Registration took the metadata of the envoy's first message; ops/envoy has no
		// update of metadata alone, and a second Register would clear a stop in progress.
		c.s.o.Log.Debug("envoy socket: later metadata ignored", "envoy_key", c.key, "ray_id", c.ray)
	case proto.ToRivetKvRequest:
		c.kvRequest(m)
	case proto.ToRivetEvents:
		c.events(m)
	case proto.ToRivetAckCommands:
		c.ackCommands(m)
	case proto.ToRivetTunnelMessage:
		c.tunnelMessage(m)
	default:
		c.sqliteRequest(m)
	}
}

// reply writes an answer; a failed write ends the socket.
func (c *conn) reply(m proto.ToEnvoy) {
	if err := c.write(m); err != nil {
		c.fail(nil)
	}
}

// stopping handles ToRivetStopping (engine/pegboard.Envoys.Stopping).
func (c *conn) stopping() {
	err := c.s.o.Envoys.Stopping(c.s.ctx, c.nsID, c.key, c.connID)
	switch {
	case err == nil:
	case rerr.Is(err, "envoy", "stale_connection"):
		c.closeWith(rerr.WS("eviction"))
	case c.s.ctx.Err() != nil:
	default:
		c.s.o.Log.Warn("envoy socket: stopping", "envoy_key", c.key, "ray_id", c.ray, "error", err)
	}
}

// disconnect expires the envoy when its socket ended, unless a newer socket took it over;
// with Options.Cluster, in one (batched) transaction with the release of its ownership
// record.
func (c *conn) disconnect() {
	<-c.done
	if cl := c.s.o.Cluster; cl != nil && c.epoch != 0 {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.s.ctx), 20*time.Second)
		defer cancel()
		cl.ReleaseSocket(ctx, c.host(), c.epoch, func(ctx context.Context, tx udb.Transaction) error {
			// envoy.stale_connection (a newer socket took over) writes nothing and is ignored.
			_, err := openvoy.Expire(ctx, tx, openvoy.ExpireInput{Namespace: c.nsID, EnvoyKey: c.key, ConnID: c.connID, NowMs: time.Now().UnixMilli()})
			return err
		})
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.s.ctx), 10*time.Second)
	defer cancel()
	if err := c.s.o.Envoys.Disconnected(ctx, c.nsID, c.key, c.connID); err != nil {
		c.s.o.Log.Warn("envoy socket: disconnect", "envoy_key", c.key, "ray_id", c.ray, "error", err)
	}
}
