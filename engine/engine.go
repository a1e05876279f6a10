package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	apipeer "github.com/berthhq/berth/api-peer"
	apipublic "github.com/berthhq/berth/api-public"
	"github.com/berthhq/berth/engine/cluster"
	"github.com/berthhq/berth/engine/config"
	"github.com/berthhq/berth/engine/hostsock"
	"github.com/berthhq/berth/engine/internal/connlimit"
	"github.com/berthhq/berth/engine/pegboard"
	"github.com/berthhq/berth/engine/reqlog"
	"github.com/berthhq/berth/engine/serverless"
	"github.com/berthhq/berth/guard"
	"github.com/berthhq/berth/guard/core"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/ops/schema"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/outbound"
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
	// Reload, when set, makes Run read the TLS certificate files again at each value received
	// (berth start sends SIGHUP there).
	Reload <-chan os.Signal
	// Notify, when set, is told Run's state in the words of systemd's sd_notify protocol:
	// "READY=1" with a STATUS line once serving, "RELOADING=1" then "READY=1" around a
	// reload, "STOPPING=1" when a drain begins.
	Notify func(state string)
	// WrapStore, when set, wraps the store once it is open, before anything uses it
	// (tests/storecost counts the store's operations through it).
	WrapStore func(udb.Database) udb.Database
}

// Engine is a running berth node. Its listeners serve until Shutdown.
type Engine struct {
	// requests is the inspector's live request log: this node's gateway requests, handed
	// to whoever watches their actor.
	requests  reqlog.Log
	log       *slog.Logger
	db        udb.Database
	peers     *apihttp.PeerClient
	public    *listener // guard port: api-public
	peer      *listener // api-peer
	metrics   *listener // Prometheus /metrics
	hosts     *hostsock.Server
	lifecycle *pegboard.Lifecycle
	// serverless polls the serverless pools' /metadata.
	serverless *serverless.Service
	// scaler keeps the serverless runner pools' /start requests open.
	scaler  *serverless.Scaler
	timeout time.Duration
	obs     *observability
	tls     tlsConfigs
	trusted core.Trusted // guard.trusted_proxies
	auth    *auth.Authenticator

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
// on api_peer.host:api_peer.port and /metrics on metrics.host:metrics.port, and the
// lifecycle loops. It returns once all listen, or an error after undoing whatever it had
// started.
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
	e := &Engine{log: obs.log, timeout: opts.ShutdownTimeout, failed: make(chan error, 3), obs: obs,
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
	undo = append(undo, func() { _ = obs.tracing.Shutdown(context.Background()) })
	if e.tls, err = loadTLS(cfg); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	undo = append(undo, e.tls.outbound.CloseIdleConnections)
	e.trusted = cfg.Guard.TrustedPrefixes()
	if e.auth, err = auth.New(auth.Options{AdminToken: cfg.Auth.AdminToken, TokensFile: cfg.Auth.TokensFile, Log: obs.log}); err != nil {
		return nil, fmt.Errorf("engine: auth.tokens_file: %w", err)
	}
	topo := Topology(cfg.Advertised())
	if undo, err = e.openStore(ctx, cfg, topo, opts.WrapStore, undo); err != nil {
		return nil, err
	}
	svc, err := e.build(cfg, topo, opts.Build)
	if err != nil {
		return nil, err
	}
	undo = append(undo, e.peers.Close, e.hosts.Close)
	if undo, err = e.listen(ctx, cfg, svc, undo); err != nil {
		return nil, err
	}
	e.startLoops(ctx, opts.Observability.CensusInterval, cfg.PubSub.URL != "")
	if cfg.Anonymous() {
		e.log.Warn("berth serves without an admin token on addresses other machines can reach (auth.allow_anonymous): " +
			"anyone who reaches them can create and destroy actors, read their KV and drain runners; set auth.admin_token")
	} else if !cfg.Open() {
		e.log.Info("no admin token: listening on loopback only; set auth.admin_token to serve other machines")
	}
	local, _ := cfg.Topology.Local()
	e.log.Info("berth started", "public", e.public.ln.Addr().String(), "peer", e.peer.ln.Addr().String(),
		"metrics", e.metrics.ln.Addr().String(), "runner_lost_threshold_ms", cfg.Pegboard.RunnerLostThreshold,
		"datacenter", local.Name, "label", local.DatacenterLabel, "db", redactURL(cfg.Database.URL),
		"auth", cfg.Auth.AdminToken != "", "scoped_tokens", e.auth.Tokens(), "version", opts.Build.Version, "node", e.cluster.ID(),
		"pubsub", cfg.PubSub.URL != "")
	return e, nil
}

// openStore opens the store (with the default namespace at the leader's first start) and
// the datacenter's bus: NATS with several nodes, the memory bus for one.
func (e *Engine) openStore(ctx context.Context, cfg *config.Config, topo apihttp.Topology, wrap func(udb.Database) udb.Database, undo []func()) ([]func(), error) {
	db, err := udb.Open(ctx, cfg.Database.URL)
	if err != nil {
		return undo, fmt.Errorf("engine: open store: %w", err)
	}
	if wrap != nil {
		db = wrap(db)
	}
	undo = append(undo, func() { _ = db.Close() })
	e.db = e.obs.metrics.InstrumentDB(db)
	from, to, err := schema.Upgrade(ctx, e.db, schema.Migrations, e.log)
	if err != nil {
		return undo, fmt.Errorf("engine: store %s: %w", config.RedactURL(cfg.Database.URL), err)
	}
	if from != to {
		e.log.Info("store upgraded", "from_schema_version", from, "schema_version", to)
	}
	if err := ensureDefaultNamespace(ctx, e.db, topo); err != nil {
		return undo, err
	}
	if cfg.PubSub.URL == "" {
		e.bus = pubsub.NewMemory()
	} else if e.bus, err = pubsub.DialNATS(cfg.PubSub.URL); err != nil {
		return undo, fmt.Errorf("engine: %w", err)
	}
	return append(undo, func() { _ = e.bus.Close() }), nil
}

// serverlessPolicy is the outbound policy of pegboard.serverless.
func serverlessPolicy(c config.PegboardServerless) outbound.Policy {
	return outbound.Policy{AllowPrivate: c.AllowPrivateURLs, AllowedCIDRs: c.AllowedPrefixes()}
}

// metadataTimeout bounds a serverless /metadata call: the reference's 10 s, but shorter than
// api-public's datacenter timeout, so that a health check or refresh-metadata of a hanging
// endpoint answers request_timed_out rather than the datacenter's own timeout.
func metadataTimeout(dcTimeout time.Duration) time.Duration {
	return max(min(serverless.MetadataTimeout, dcTimeout-500*time.Millisecond), time.Second)
}

// services is the handlers build made for the listeners.
type services struct {
	public http.Handler // the guard port: the gateway, the host sockets, api-public
	peer   http.Handler // api-peer, with the cluster's relays
}

// build makes every service once, each from those it depends on: the host sockets'
// registry and the actors' watchers, the cluster (which reaches the hosts through the
// registry and wakes the watchers), the lifecycle (which reaches the hosts through the
// cluster), api-peer, the host-socket server, the gateway and api-public.
func (e *Engine) build(cfg *config.Config, topo apihttp.Topology, build apihttp.BuildInfo) (*services, error) {
	m, pb, log := e.obs.metrics, cfg.Pegboard, e.log
	registry := hostsock.NewRegistry(m, int(cfg.Guard.MaxTunnelsPerHost))
	watchers := pegboard.NewWatchers()
	e.cluster = cluster.New(cluster.Options{
		DB: e.db, Bus: e.bus, ID: cfg.Node.ID, Label: topo.Local, Lease: config.Ms(cfg.Node.LeaseMs),
		Releases: e.shutdown.Releases, Auth: e.auth, Log: log, HTTP: &http.Client{Transport: e.tls.outbound},
		Local: registry, Changes: watchers,
	})
	// With several nodes, the others wake what waits on an actor there (gateway requests,
	// cached routes) when it changes here.
	var announce func([]id.ID)
	if cfg.PubSub.URL != "" {
		announce = e.cluster.AnnounceActors
	}
	// api-peer and the key reservations reach other datacenters through this peer client;
	// api-public's serves this datacenter in process through api-peer's handler.
	e.peers = apihttp.NewPeerClient(apihttp.PeerOptions{Token: cfg.Auth.AdminToken, Timeout: cfg.APIPublic.DatacenterTimeout(),
		HTTP: &http.Client{Transport: e.tls.outbound}})
	// With several datacenters keys are reserved at the leader (engine/pegboard, keys.go).
	var keySvc pegboard.KeyService
	if len(topo.Datacenters) > 1 {
		keySvc = &apipeer.KeyClient{DB: e.db, Topology: topo, Peers: e.peers}
	}
	// Serverless endpoints are the users' URLs: called through the checked client, with the
	// system's roots and never this node's client certificate.
	slClient := outbound.NewClient(outbound.Options{Policy: serverlessPolicy(pb.Serverless)})
	starter := &serverless.Starter{DB: e.db, Client: slClient, Policy: serverlessPolicy(pb.Serverless),
		Endpoint: topo.LocalDatacenter().PublicURL, Token: cfg.Auth.AdminToken, UserAgent: "berth/" + build.Version, Log: log}
	actorCfg := ActorConfig(pb)
	actorCfg.Here = registry.Holds // placement prefers runners connected to this node
	lc := pegboard.NewLifecycle(pegboard.LifecycleOptions{
		DB: e.db, Hosts: e.cluster, Watchers: watchers, Log: log, Metrics: m, Config: actorCfg,
		RunnerLostThreshold: config.Ms(pb.RunnerLostThreshold), EnvoyLostThreshold: config.Ms(pb.EnvoyLostThreshold),
		Label: topo.Local, Datacenter: topo.LocalDatacenter().Name, Announce: announce, Keys: keySvc, Serverless: starter,
	})
	e.lifecycle = lc
	svc := &services{}
	bodies := apihttp.BodyLimits{Large: int64(cfg.Guard.MaxAPIBodyBytes), Small: int64(cfg.Guard.MaxAPISmallBodyBytes)}
	e.serverless = serverless.New(e.db, serverless.Fetcher{
		Client: slClient,
		Policy: serverlessPolicy(pb.Serverless), UserAgent: "berth/" + build.Version,
		Timeout: metadataTimeout(cfg.APIPublic.DatacenterTimeout()),
	}, log)
	e.scaler = serverless.NewScaler(serverless.Scaler{DB: e.db, Starter: starter, NodeID: e.cluster.ID(), Log: log,
		Drain:      func(ctx context.Context, rid id.ID) error { return lc.Runners.Drain(ctx, rid, id.ID{}) },
		MovePool:   func(ns id.ID, name string) { lc.Actors.MovePool(actor.Pool{Namespace: ns, Selector: name}) },
		DrainGrace: config.Ms(pb.ServerlessDrainGracePeriodMs),
	})
	peer := apipeer.New(apipeer.Deps{
		DB: e.db, Topology: topo, Peers: e.peers, Build: build, Auth: e.auth, Log: log,
		Runners: lc.Runners, Envoys: lc.Envoys, Actors: lc.Actors, Bodies: bodies, Serverless: scaledPools{e.serverless, e.scaler},
	})
	peerAPI := peer.Handler()
	var err error
	// The host sockets (/runners/connect, /envoys/connect) share the public listener, as on Rivet.
	e.hosts, err = hostsock.New(hostsock.Options{
		DB: e.db, Label: topo.Local, Auth: e.auth, Log: log, Metrics: m, Version: build.Version,
		Registry: registry, Cluster: e.cluster, Actors: lc.Actors, Runners: lc.Runners, Envoys: lc.Envoys,
		ResolveNamespace:     peer.ResolveNamespace,
		Runner:               hostsock.Timing{PingInterval: config.Ms(pb.RunnerUpdatePingIntervalMs), PingTimeout: config.Ms(pb.RunnerPingTimeoutMs), LostThreshold: config.Ms(pb.RunnerLostThreshold)},
		Envoy:                hostsock.Timing{PingInterval: config.Ms(pb.EnvoyUpdatePingInterval), PingTimeout: config.Ms(pb.EnvoyPingTimeout), LostThreshold: config.Ms(pb.EnvoyLostThreshold)},
		ActorStopThreshold:   config.Ms(pb.ActorStopThreshold),
		ServerlessDrainGrace: config.Ms(pb.ServerlessDrainGracePeriodMs),
	})
	if err != nil {
		e.peers.Close()
		return nil, fmt.Errorf("engine: %w", err)
	}
	// The /metadata poller drains the pools' hosts and takes their poll leases as this node.
	e.serverless.Hosts, e.serverless.NodeID = lc, e.cluster.ID()
	api := apipublic.New(apipublic.Deps{
		DB: e.db, Topology: topo, Peers: e.peers.WithLocal(topo.Local, peerAPI), DatacenterTimeout: cfg.APIPublic.DatacenterTimeout(),
		Build: build, Auth: e.auth, Log: log, Local: peer, Bodies: bodies, Outbound: serverlessPolicy(pb.Serverless),
	}).Handler()
	// The actor gateway comes first, as on Rivet: /gateway/... never reaches the API.
	gateway := guard.New(guard.Options{
		DB: e.db, Hosts: e.cluster, Actors: lc.Actors, Topology: topo, Log: log,
		// Query routing (rvt-namespace) resolves namespaces as the API does: at the leader.
		ResolveNamespace:     peer.ResolveNamespace,
		RateLimit:            core.RateLimit{Requests: limitOrOff(cfg.Guard.RateLimitRequests), InFlight: limitOrOff(cfg.Guard.RateLimitInFlight)},
		MaxRequestsPerActor:  int(cfg.Guard.MaxRequestsPerActor),
		TrustedProxies:       e.trusted,
		Transport:            e.tls.outbound,
		ActorReadyTimeout:    config.Ms(cfg.Guard.ActorReadyTimeout),
		FetchActorTimeout:    config.Ms(cfg.Guard.RoutePegboardFetchActor),
		WakeSignalTimeout:    config.Ms(cfg.Guard.RoutePegboardWakeSignal),
		ResolveQueryTimeout:  config.Ms(cfg.Guard.RoutePegboardResolveQuery),
		ResponseStartTimeout: config.Ms(cfg.Guard.GatewayResponseStartTimeout),
		WebSocketOpenTimeout: config.Ms(cfg.Guard.GatewayWebSocketOpenTimeout),
		Telemetry:            e.gatewayTelemetry(),
	})
	// WebSockets are counted per client before anything else looks at them.
	sockets := connlimit.NewSockets(int(cfg.Guard.MaxWebSocketsPerClient), func(r *http.Request) string { return core.ClientIP(r, e.trusted) })
	e.obs.newSampler(e.sampleHosts)
	svc.public = e.obs.public(sockets.Wrap(gateway.Wrap(e.hosts.Wrap(api))), e.dashboard(api, peer, topo.Local))
	svc.peer = e.obs.peer(e.shutdownHandler(cfg.Auth.AdminToken, peerAPI))
	return svc, nil
}

// listen opens the three listeners and registers the node in the cluster, at the address
// other nodes relay to, before any socket can be claimed.
func (e *Engine) listen(ctx context.Context, cfg *config.Config, svc *services, undo []func()) ([]func(), error) {
	var err error
	lim := limitsOf(cfg.Guard)
	if e.public, err = listen(ctx, "api-public", "guard", cfg.ListenAddrs(cfg.Guard.Host, cfg.Guard.Port), e.admit.wrap(svc.public), lim, e.log); err != nil {
		return undo, err
	}
	if cfg.Guard.ProxyProtocol {
		e.public.ln = proxyProtocol(e.public.ln, e.trusted, lim.readHeader)
	}
	// The connection cap sits under TLS, which counts the heads' plaintext above it.
	e.public.ln = connlimit.New(e.public.ln, int(cfg.Guard.MaxConnectionsPerClient), e.trusted.Contains, e.tls.guard != nil)
	e.public.serveHeads(e.tls.guard)
	undo = append(undo, func() { _ = e.public.ln.Close() })
	if e.peer, err = listen(ctx, "api-peer", "api_peer", cfg.ListenAddrs(cfg.APIPeer.Host, cfg.APIPeer.Port), svc.peer, lim, e.log); err != nil {
		return undo, err
	}
	e.peer.serveHeads(e.tls.peer)
	undo = append(undo, func() { _ = e.peer.ln.Close() })
	if err := e.cluster.Start(ctx, nodeAddress(cfg, scheme(e.tls.peer), e.peer.ln.Addr())); err != nil {
		return undo, fmt.Errorf("engine: %w", err)
	}
	undo = append(undo, e.cluster.Stop)
	if e.metrics, err = listen(ctx, "metrics", "metrics", cfg.ListenAddrs(cfg.Metrics.Host, cfg.Metrics.Port), e.obs.metrics.Handler(cfg.Metrics.Pprof), lim, e.log); err != nil {
		return undo, err
	}
	e.metrics.serveHeads(nil)
	return undo, nil
}

// startLoops starts the lifecycle loops, the census and the listeners' serve loops; with
// several nodes, the request log shared with the others.
func (e *Engine) startLoops(ctx context.Context, censusInterval time.Duration, severalNodes bool) {
	loopCtx, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	e.stopLoops = stopLoops
	if severalNodes {
		if err := e.requests.Share(loopCtx, e.bus, e.cluster.ID()); err != nil {
			e.log.Warn("the inspector's request log shows this node's requests only", "err", err)
		}
	}
	e.loops.Go(func() { e.lifecycle.Run(loopCtx) })
	e.loops.Go(func() { e.serverless.Run(loopCtx) })
	e.loops.Go(func() { e.scaler.Run(loopCtx) })
	e.loops.Go(func() { e.obs.runCensus(loopCtx, e.db, censusInterval) })
	e.loops.Go(func() { e.obs.samples.Run(loopCtx) })
	for _, l := range []*listener{e.public, e.peer, e.metrics} {
		go func() {
			if err := l.serve(); err != nil {
				e.failed <- err
			}
		}()
	}
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
		e.hosts.Close()
		e.cluster.Stop()
		e.stopLoops()
		e.loops.Wait()
		err := stopAll(ctx, e.public, e.peer, e.metrics)
		e.peers.Close()
		e.tls.outbound.CloseIdleConnections()
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
	notify := opts.Notify
	if notify == nil {
		notify = func(string) {}
	}
	notify(fmt.Sprintf("READY=1\nSTATUS=serving: public %s, api-peer %s, metrics %s",
		e.public.ln.Addr(), e.peer.ln.Addr(), e.metrics.ln.Addr()))
	mode := Handoff
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case mode = <-e.shutdownReq:
			break wait
		case <-opts.Reload:
			notify("RELOADING=1")
			_ = e.ReloadTLS() // logged; the previous certificates stay in use
			notify("READY=1")
		case cause := <-e.Failed():
			notify("STOPPING=1")
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.timeout)
			defer cancel()
			return errors.Join(cause, e.Shutdown(sctx))
		}
	}
	notify("STOPPING=1")
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
func nodeAddress(cfg *config.Config, scheme string, peer net.Addr) string {
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
	return scheme + "://" + net.JoinHostPort(host, port)
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
	if _, err := udb.Transact(ctx, db, func(tx udb.Transaction) (namespace.EnsureDefaultOutput, error) {
		return namespace.EnsureDefault(ctx, tx, in)
	}); err != nil {
		return fmt.Errorf("engine: create the default namespace: %w", err)
	}
	return nil
}
