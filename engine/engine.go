package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	apipeer "github.com/berthhq/berth/api-peer"
	apipublic "github.com/berthhq/berth/api-public"
	"github.com/berthhq/berth/engine/cluster"
	"github.com/berthhq/berth/engine/config"
	"github.com/berthhq/berth/engine/envoyws"
	"github.com/berthhq/berth/engine/runnerws"
	"github.com/berthhq/berth/guard"
	"github.com/berthhq/berth/guard/core"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	proto "github.com/berthhq/berth/pkg/protocol/runner"
	"github.com/berthhq/berth/pkg/pubsub"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded" // file:// and mem://
	_ "github.com/berthhq/berth/pkg/udb/driver/fdb"      // fdb:// (built with -tags fdb)
	_ "github.com/berthhq/berth/pkg/udb/driver/postgres" // postgres://
)

// DefaultShutdownTimeout is how long in-flight requests get to finish at shutdown.
const DefaultShutdownTimeout = 10 * time.Second

// Options configures Start.
type Options struct {
	// Config is the engine configuration; Start validates it again.
	Config *config.Config
	// Build is reported by /health and /metadata.
	Build apihttp.BuildInfo
	// Log is the engine's logger; nil means slog.Default().
	Log *slog.Logger
	// ShutdownTimeout bounds how long Run's shutdown waits for in-flight requests; zero means
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Observability holds test hooks of the tracing and the store census (observe.go).
	Observability ObservabilityOptions
}

// Engine is a running berth node. Its listeners serve until Shutdown.
type Engine struct {
	log     *slog.Logger
	db      udb.Database
	peers   *apihttp.PeerClient
	public  *listener // guard port: api-public
	peer    *listener // api-peer
	metrics *listener // Prometheus /metrics
	runners *runnerws.Server
	envoys  *envoyws.Server
	timeout time.Duration
	obs     *observability

	bus         pubsub.PubSub // the datacenter's nodes' bus (memory for a single node)
	cluster     *cluster.Node
	admit       admission
	shutdown    shutdownSettings
	shutdownReq chan ShutdownMode // POST /shutdown

	// stopLoops ends the background loops (pegboard); loops waits for them.
	stopLoops context.CancelFunc
	loops     sync.WaitGroup

	// failed receives the first error of a listener that stopped on its own.
	failed chan error

	stopOnce sync.Once
	stopErr  error
}

// Start opens the store and starts serving api-public on guard.host:guard.port, api-peer
// on api_peer.host:api_peer.port and /metrics on metrics.host:metrics.port, and the pegboard
// loop. It returns once all listen, or an error after undoing whatever it had started.
func Start(ctx context.Context, opts Options) (_ *Engine, err error) {
	cfg := opts.Config
	if cfg == nil {
		return nil, errors.New("engine: no config")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("engine: invalid config:\n%w", err)
	}
	obs, err := newObservability(opts)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	log := obs.log
	e := &Engine{log: log, timeout: opts.ShutdownTimeout, failed: make(chan error, 3), obs: obs,
		shutdown:    shutdownSettings{Releases: int(cfg.Node.Releases), DrainTimeout: config.Ms(cfg.Node.ShutdownDrainMs)},
		shutdownReq: make(chan ShutdownMode, 1)}
	if e.timeout <= 0 {
		e.timeout = DefaultShutdownTimeout
	}
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()

	e.db, err = udb.Open(ctx, cfg.Database.URL)
	if err != nil {
		return nil, fmt.Errorf("engine: open store: %w", err)
	}
	undo = append(undo, func() { _ = e.db.Close() }, func() { _ = obs.tracing.Shutdown(context.Background()) })
	e.db = obs.metrics.InstrumentDB(e.db)

	topo := Topology(cfg.Topology)
	if err := ensureDefaultNamespace(ctx, e.db, topo); err != nil {
		return nil, err
	}
	// The peer client serves the local datacenter through peerAPI in process; api-peer uses
	// it only to reach the leader, so peerAPI is set before any request can need it.
	var peerAPI http.Handler
	e.peers = apihttp.NewPeerClient(apihttp.PeerOptions{
		Token: cfg.Auth.AdminToken, Timeout: cfg.APIPublic.DatacenterTimeout(),
		LocalLabel: topo.Local, Local: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { peerAPI.ServeHTTP(w, r) }),
	})
	undo = append(undo, e.peers.Close)
	// Several nodes share the store and talk over NATS; a single node uses the memory bus.
	if cfg.PubSub.URL != "" {
		nb, err := pubsub.DialNATS(cfg.PubSub.URL)
		if err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		e.bus = nb
	} else {
		e.bus = pubsub.NewMemory()
	}
	undo = append(undo, func() { _ = e.bus.Close() })
	e.cluster = cluster.New(cluster.Options{
		DB: e.db, Bus: e.bus, ID: cfg.Node.ID, Label: topo.Local, Lease: config.Ms(cfg.Node.LeaseMs),
		Releases: e.shutdown.Releases, AdminToken: cfg.Auth.AdminToken, Log: log,
	})
	m := obs.metrics
	pb := cfg.Pegboard
	var peer *apipeer.Server
	// With several nodes, the others wake what waits on an actor there (gateway requests,
	// cached routes) when it changes here.
	var announce func([]id.ID)
	if cfg.PubSub.URL != "" {
		announce = e.cluster.AnnounceActors
	}
	// The runner socket (/runners/connect) shares the public listener, as on Rivet.
	actorCfg := ActorConfig(pb)
	e.runners = runnerws.New(runnerws.Options{
		DB: e.db, Label: topo.Local, AdminToken: cfg.Auth.AdminToken, Log: log, Metrics: m,
		ActorConfig: &actorCfg, Datacenter: topo.LocalDatacenter().Name, Version: opts.Build.Version,
		ResolveNamespace: func(ctx context.Context, name string) (namespace.Namespace, error) {
			return peer.ResolveNamespace(ctx, name)
		},
		PingInterval:        config.Ms(pb.RunnerUpdatePingIntervalMs),
		PingTimeout:         config.Ms(pb.RunnerPingTimeoutMs),
		RunnerLostThreshold: int64(pb.RunnerLostThreshold),
		ActorStopThreshold:  int64(pb.ActorStopThreshold),
		Cluster:             e.cluster,
		AnnounceActors:      announce,
	})
	undo = append(undo, e.runners.Close)
	// So does the envoy socket (/envoys/connect).
	e.envoys = envoyws.New(envoyws.Options{
		DB: e.db, Label: topo.Local, AdminToken: cfg.Auth.AdminToken, Log: log,
		ResolveNamespace: func(ctx context.Context, name string) (namespace.Namespace, error) {
			return peer.ResolveNamespace(ctx, name)
		},
		PingInterval:       config.Ms(pb.EnvoyUpdatePingInterval),
		PingTimeout:        config.Ms(pb.EnvoyPingTimeout),
		EnvoyLostThreshold: int64(pb.EnvoyLostThreshold),
		ActorStopThreshold: int64(pb.ActorStopThreshold),
		Metrics:            m,
		// Envoys host actors of the same lifecycle as runners.
		Actors:  e.runners.Runners().Actors(),
		Version: []byte(opts.Build.Version),
		Cluster: e.cluster,
	})
	undo = append(undo, e.envoys.Close)
	lifecycle := e.runners.Runners()
	peer = apipeer.New(apipeer.Deps{
		DB: e.db, Topology: topo, Peers: e.peers, Build: opts.Build, AdminToken: cfg.Auth.AdminToken, Log: log,
		DrainRunner: func(ctx context.Context, rid id.ID) error { return lifecycle.Drain(ctx, rid, id.ID{}) },
		Actors:      lifecycle.Actors(),
	})
	peerAPI = peer.Handler()
	publicAPI := apipublic.New(apipublic.Deps{
		DB: e.db, Topology: topo, Peers: e.peers, DatacenterTimeout: cfg.APIPublic.DatacenterTimeout(),
		Build: opts.Build, AdminToken: cfg.Auth.AdminToken, Log: log,
	}).Handler()
	apiOnly := publicAPI
	publicAPI = e.envoys.Wrap(e.runners.Wrap(publicAPI))
	// The actor gateway comes first, as on Rivet: /gateway/... never reaches the API.
	gateway := guard.New(guard.Options{
		DB: e.db, Tunnels: tunnels{e.runners, e.cluster}, Actors: lifecycle.Actors(), Topology: topo, Log: log,
		Envoys: envoyTunnels{e.envoys, e.cluster},
		Hosts:  hostLinks{localSockets{e.runners, e.envoys}, e.cluster},
		// Query routing (rvt-namespace) resolves namespaces as the API does: at the leader.
		ResolveNamespace:     peer.ResolveNamespace,
		RateLimit:            core.RateLimit{Requests: limitOrOff(cfg.Guard.RateLimitRequests), InFlight: limitOrOff(cfg.Guard.RateLimitInFlight)},
		ActorReadyTimeout:    config.Ms(cfg.Guard.ActorReadyTimeout),
		FetchActorTimeout:    config.Ms(cfg.Guard.RoutePegboardFetchActor),
		WakeSignalTimeout:    config.Ms(cfg.Guard.RoutePegboardWakeSignal),
		ResolveQueryTimeout:  config.Ms(cfg.Guard.RoutePegboardResolveQuery),
		ResponseStartTimeout: config.Ms(cfg.Guard.GatewayResponseStartTimeout),
		WebSocketOpenTimeout: config.Ms(cfg.Guard.GatewayWebSocketOpenTimeout),
		Telemetry:            obs.gateway(),
	})
	publicAPI = obs.public(gateway.Wrap(publicAPI), apiOnly, cfg, e.db, topo.Local)

	if e.public, err = listen(ctx, "api-public", cfg.Guard.Addr(), e.admit.wrap(publicAPI), log); err != nil {
		return nil, err
	}
	undo = append(undo, func() { _ = e.public.ln.Close() })
	if e.peer, err = listen(ctx, "api-peer", cfg.APIPeer.Addr(), obs.peer(e.shutdownHandler(cfg.Auth.AdminToken, peerAPI)), log); err != nil {
		return nil, err
	}
	undo = append(undo, func() { _ = e.peer.ln.Close() })
	// The node registers before any socket can be claimed, at the address others relay to.
	if err := e.cluster.Start(ctx, localSockets{e.runners, e.envoys}, nodeAddress(cfg, e.peer.ln.Addr())); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	undo = append(undo, e.cluster.Stop)
	if e.metrics, err = listen(ctx, "metrics", cfg.Metrics.Addr(), m.Handler(cfg.Metrics.Pprof), log); err != nil {
		return nil, err
	}
	loopCtx, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	e.stopLoops = stopLoops
	e.loops.Go(func() { lifecycle.Run(loopCtx) })
	e.loops.Go(func() { lifecycle.Actors().Run(loopCtx) })
	e.loops.Go(func() { e.envoys.Envoys().Run(loopCtx) })
	e.loops.Go(func() { obs.runCensus(loopCtx, e.db, opts.Observability.CensusInterval) })
	for _, l := range []*listener{e.public, e.peer, e.metrics} {
		go func() {
			if err := l.serve(); err != nil {
				e.failed <- err
			}
		}()
	}
	local, _ := cfg.Topology.Local()
	log.Info("berth started", "public", e.public.ln.Addr().String(), "peer", e.peer.ln.Addr().String(),
		"metrics", e.metrics.ln.Addr().String(), "runner_lost_threshold_ms", pb.RunnerLostThreshold,
		"datacenter", local.Name, "label", local.DatacenterLabel, "db", redactURL(cfg.Database.URL),
		"auth", cfg.Auth.AdminToken != "", "version", opts.Build.Version, "node", e.cluster.ID(),
		"pubsub", cfg.PubSub.URL != "")
	return e, nil
}

// PublicAddr is the address api-public listens on (the guard port).
func (e *Engine) PublicAddr() net.Addr { return e.public.ln.Addr() }

// PeerAddr is the address api-peer listens on.
func (e *Engine) PeerAddr() net.Addr { return e.peer.ln.Addr() }

// MetricsAddr is the address the Prometheus endpoint listens on.
func (e *Engine) MetricsAddr() net.Addr { return e.metrics.ln.Addr() }

// DB is the engine's store.
func (e *Engine) DB() udb.Database { return e.db }

// Failed delivers the error of a listener that stopped on its own (not through Shutdown).
func (e *Engine) Failed() <-chan error { return e.failed }

// Shutdown stops accepting connections, waits for in-flight requests until ctx ends (then
// closes their connections), and closes the store. It is safe to call more than once; later
// calls return the first result.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.stopOnce.Do(func() {
		e.log.Info("berth stopping")
		// Runner and envoy sockets are hijacked connections the HTTP servers do not track:
		// close them (ws.going_away) while the store is still open for their disconnects.
		e.runners.Close()
		e.envoys.Close()
		e.cluster.Stop()
		e.stopLoops()
		e.loops.Wait()
		err := stopAll(ctx, e.public, e.peer, e.metrics)
		e.peers.Close()
		_ = e.bus.Close()
		if cerr := e.db.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close store: %w", cerr))
		}
		if terr := e.obs.tracing.Shutdown(ctx); terr != nil {
			e.log.Warn("tracing: spans not exported at shutdown", "error", terr)
		}
		e.stopErr = err
		e.log.Info("berth stopped", "error", err)
	})
	return e.stopErr
}

// Run starts the engine and serves until ctx ends (SIGTERM: a handoff drain), POST /shutdown
// asks for a drain, or a listener fails (then it shuts down, giving in-flight requests
// Options.ShutdownTimeout). After a drain it closes what it can within a second and returns:
// the caller exits right away, and nothing left running may hold the exit up.
func Run(ctx context.Context, opts Options) error {
	e, err := Start(ctx, opts)
	if err != nil {
		return err
	}
	var cause error
	mode := Handoff
	select {
	case <-ctx.Done():
	case mode = <-e.shutdownReq:
	case cause = <-e.Failed():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.timeout)
		defer cancel()
		return errors.Join(cause, e.Shutdown(sctx))
	}
	e.Drain(mode)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = e.Shutdown(sctx)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		e.log.Warn("berth: exiting with the store or listeners still closing")
	}
	return nil
}

// nodeAddress is where other nodes reach this one's internal listener: node.address, else
// the api-peer listener's address (127.0.0.1 for an unspecified host).
func nodeAddress(cfg *config.Config, peer net.Addr) string {
	if cfg.Node.Address != "" {
		return cfg.Node.Address
	}
	host, port, err := net.SplitHostPort(peer.String())
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// redactURL hides the password of a store URL for logs.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// limitOrOff maps a configured limit to guard/core's: 0 (off) is negative there.
func limitOrOff(n uint32) int {
	if n == 0 {
		return -1
	}
	return int(n)
}

// tunnels adapts the runner sockets to the gateway's Tunnels: a socket on this node, else
// one another node holds, relayed there (engine/cluster).
type tunnels struct {
	s *runnerws.Server
	c *cluster.Node
}

func (t tunnels) OpenTunnel(rid id.ID) (guard.Tunnel, error) {
	tun, err := t.s.OpenTunnel(rid)
	if errors.Is(err, runnerws.ErrNoRunnerSocket) {
		return t.c.OpenRemoteTunnel(actor.RunnerHost(rid), t.s.GatewayID())
	}
	if err != nil {
		return nil, err
	}
	return tun, nil
}

// ResumeTunnel resumes a hibernated request of this node's gateway on the runner now
// hosting its actor: here, or through the node holding the runner's socket.
func (t tunnels) ResumeTunnel(rid id.ID, req proto.RequestID, next uint16) (guard.Tunnel, error) {
	tun, err := t.s.ResumeTunnel(rid, req, next)
	if errors.Is(err, runnerws.ErrNoRunnerSocket) {
		return t.c.ResumeRemoteTunnel(rid, t.s.GatewayID(), req, next)
	}
	if err != nil {
		return nil, err
	}
	return tun, nil
}

func (t tunnels) GatewayID() proto.GatewayID { return t.s.GatewayID() }

// envoyTunnels adapts the envoy sockets to the gateway's EnvoyTunnels: a socket on this
// node, else one another node holds, relayed there (engine/cluster).
type envoyTunnels struct {
	s *envoyws.Server
	c *cluster.Node
}

func (t envoyTunnels) OpenEnvoyTunnel(ns id.ID, envoyKey string) (guard.Tunnel, error) {
	tun, err := t.s.OpenEnvoyTunnel(ns, envoyKey)
	if errors.Is(err, envoyws.ErrNoEnvoySocket) {
		return t.c.OpenRemoteTunnel(actor.EnvoyHost(ns, envoyKey), proto.GatewayID{})
	}
	if err != nil {
		return nil, err
	}
	return tun, nil
}

// hostLinks tells the gateway whether a host's socket is held in the datacenter: here, or by
// another live node.
type hostLinks struct {
	local localSockets
	c     *cluster.Node
}

func (l hostLinks) Connected(ctx context.Context, h actor.Host) (bool, error) {
	if l.local.Holds(h) {
		return true, nil
	}
	return l.c.HeldElsewhere(ctx, h)
}

// localSockets is this node's runner and envoy sockets as the cluster sees them (its
// Local): each call goes to the server of the host's kind.
type localSockets struct {
	runners *runnerws.Server
	envoys  *envoyws.Server
}

func (l localSockets) SendCommandsHere(h actor.Host, cmds []actor.Command) bool {
	if h.IsEnvoy() {
		return l.envoys.SendEnvoyCommandsHere(h, cmds)
	}
	return l.runners.SendCommandsHere(h.RunnerID, cmds)
}

func (l localSockets) CloseHere(h actor.Host, err error) bool {
	if h.IsEnvoy() {
		return l.envoys.CloseEnvoyHere(h.Namespace, h.EnvoyKey, err)
	}
	return l.runners.CloseRunnerHere(h.RunnerID, err)
}

func (l localSockets) ActorsChanged(actors []id.ID) { l.runners.Runners().Actors().Changed(actors) }

func (l localSockets) OpenTunnelFor(h actor.Host, gw proto.GatewayID, req proto.RequestID, next uint16) (cluster.Tunnel, error) {
	if h.IsEnvoy() {
		return nil, envoyws.ErrNoEnvoySocket // envoy relays are numbered by the envoy's tunnel
	}
	tun, err := l.runners.OpenTunnelFor(h.RunnerID, gw, req, next)
	if err != nil {
		return nil, err
	}
	return tun, nil
}

// EvictHere: connection ids are unique across runners and envoys.
func (l localSockets) EvictHere(connID id.ID) bool {
	return l.runners.EvictHere(connID) || l.envoys.EvictHere(connID)
}

func (l localSockets) Holds(h actor.Host) bool {
	if h.IsEnvoy() {
		return l.envoys.Holds(h.Namespace, h.EnvoyKey)
	}
	return l.runners.Holds(h.RunnerID)
}

func (l localSockets) OpenTunnel(h actor.Host) (cluster.Tunnel, error) {
	if h.IsEnvoy() {
		if tun, err := l.envoys.OpenEnvoyTunnel(h.Namespace, h.EnvoyKey); err == nil {
			return tun, nil
		}
		return nil, envoyws.ErrNoEnvoySocket
	}
	if tun, err := l.runners.OpenTunnel(h.RunnerID); err == nil {
		return tun, nil
	}
	return nil, runnerws.ErrNoRunnerSocket
}

// ActorConfig is the actor lifecycle's part of the pegboard config.
func ActorConfig(pb config.Pegboard) actor.Config {
	c := actor.DefaultConfig()
	c.RunnerEligibleThreshold = config.Ms(pb.RunnerEligibleThreshold)
	c.EnvoyEligibleThreshold = config.Ms(pb.EnvoyEligibleThreshold)
	c.EnvoyLostThreshold = config.Ms(pb.EnvoyLostThreshold)
	c.EnvoyPlacement = pb.EnvoyPlacement
	c.ActorStartThreshold = config.Ms(pb.ActorStartThreshold)
	c.ActorStopThreshold = config.Ms(pb.ActorStopThreshold)
	c.BaseRetryTimeout = config.Ms(pb.BaseRetryTimeout)
	c.RetryResetDuration = config.Ms(pb.RetryResetDuration)
	c.RescheduleBackoffMaxExponent = int(pb.RescheduleBackoffMaxExponent)
	c.HibernatingRequestEligibleThreshold = config.Ms(pb.HibernatingRequestEligibleThreshold)
	return c
}

// Topology converts the configured topology into the APIs' view of it, ordered by label.
func Topology(t config.Topology) apihttp.Topology {
	out := apihttp.Topology{Local: t.DatacenterLabel}
	for _, dc := range t.SortedDatacenters() {
		out.Datacenters = append(out.Datacenters, apihttp.Datacenter{
			Name: dc.Name, Label: dc.DatacenterLabel, IsLeader: dc.IsLeader,
			PublicURL: dc.PublicURL, PeerURL: dc.PeerURL, ProxyURL: dc.ProxyURL,
		})
	}
	return out
}

// ensureDefaultNamespace creates the "default" namespace at the first start of the leader
// datacenter, which owns namespaces; other datacenters resolve namespace names at the leader
// (see api-peer/namespaces.go), so that a namespace has one id everywhere.
func ensureDefaultNamespace(ctx context.Context, db udb.Database, topo apihttp.Topology) error {
	if !topo.LocalDatacenter().IsLeader {
		return nil
	}
	// One quick local transaction, done even when ctx is already cancelled (as Run allows).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	in := namespace.EnsureDefaultInput{NamespaceID: id.New(topo.Local), NowMs: time.Now().UnixMilli()}
	if _, err := db.Transact(ctx, func(tx udb.Transaction) (any, error) {
		return namespace.EnsureDefault(ctx, tx, in)
	}); err != nil {
		return fmt.Errorf("engine: create the default namespace: %w", err)
	}
	return nil
}

// listener is one HTTP server on its own socket.
type listener struct {
	name   string
	ln     net.Listener
	srv    *http.Server
	served chan struct{} // closed when serve returns

	// fresh holds the connections accepted that have not begun a request: net/http's
	// Shutdown waits up to 5 s for those (an http.Transport's spare dial never sends one).
	mu    sync.Mutex
	fresh map[net.Conn]struct{}
}

// track follows the connections that have not begun a request.
func (l *listener) track(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st == http.StateNew {
		l.fresh[c] = struct{}{}
	} else {
		delete(l.fresh, c)
	}
}

// closeFresh closes the connections that have not begun a request: at shutdown they have
// nothing in flight, and a client that sends one later retries elsewhere.
func (l *listener) closeFresh() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.fresh {
		_ = c.Close()
		delete(l.fresh, c)
	}
}

func listen(ctx context.Context, name, addr string, h http.Handler, log *slog.Logger) (*listener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("engine: %s: listen on %s: %w", name, addr, err)
	}
	l := &listener{
		name: name,
		ln:   ln,
		srv: &http.Server{
			Handler:           finishBody(h),
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       2 * time.Minute,
			ErrorLog:          slog.NewLogLogger(log.With("server", name).Handler(), slog.LevelWarn),
		},
		served: make(chan struct{}),
		fresh:  map[net.Conn]struct{}{},
	}
	l.srv.ConnState = l.track
	return l, nil
}

// serve runs until the server is shut down (nil) or fails (the error).
func (l *listener) serve() error {
	defer close(l.served)
	if err := l.srv.Serve(l.ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("engine: %s stopped: %w", l.name, err)
	}
	return nil
}

// stopAll shuts the servers down together: they stop accepting at once, and in-flight
// requests get until ctx ends; connections still busy then are closed. It returns when every
// serve loop has returned.
func stopAll(ctx context.Context, ls ...*listener) error {
	errs := make([]error, len(ls))
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Go(func() {
			l.srv.RegisterOnShutdown(l.closeFresh)
			if err := l.srv.Shutdown(ctx); err != nil {
				_ = l.srv.Close()
				errs[i] = fmt.Errorf("%s: in-flight requests cut off: %w", l.name, err)
			}
			<-l.served
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
