package config

import (
	"cmp"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"
)

// Config is the whole engine configuration. Every key is named by its json tag; the same names
// are used in files (JSON or YAML) and in environment variables (BERTH__guard__port).
//
// A Config from Load or Default has passed Validate, and ProxyURL is filled in for every
// datacenter; code that builds one by hand should call Validate before using it.
type Config struct {
	Topology  Topology  `json:"topology"`
	Auth      Auth      `json:"auth"`
	Guard     Guard     `json:"guard"`
	APIPublic APIPublic `json:"api_public"`
	APIPeer   APIPeer   `json:"api_peer"`
	Database  Database  `json:"database"`
	PubSub    PubSub    `json:"pubsub"`
	Node      Node      `json:"node"`
	Pegboard  Pegboard  `json:"pegboard"`
	Metrics   Metrics   `json:"metrics"`
	Log       Log       `json:"log"`
	OTel      OTel      `json:"otel"`
}

// Topology lists every datacenter and says which one this engine is.
type Topology struct {
	// DatacenterLabel is this engine's datacenter; it must be the label of one entry of
	// Datacenters. Default 1.
	DatacenterLabel uint16 `json:"datacenter_label"`
	// Datacenters maps a datacenter name to how it is reached. Default: one datacenter,
	// "default", label 1, leader, public http://127.0.0.1:6420, peer http://127.0.0.1:6421.
	// The default's URLs follow guard and api_peer: with --listen :7420 (or guard.port 7420)
	// /datacenters advertises http://127.0.0.1:7420. Giving any datacenter in a file or the
	// environment replaces the default one.
	Datacenters map[string]Datacenter `json:"datacenters"`
}

// Datacenter is one entry of the topology.
type Datacenter struct {
	// DatacenterLabel is the datacenter's u16 label, unique in the topology; ids created there
	// carry it.
	DatacenterLabel uint16 `json:"datacenter_label"`
	// IsLeader marks the one datacenter that owns namespaces.
	IsLeader bool `json:"is_leader"`
	// PublicURL is where clients reach the datacenter's guard and public API.
	PublicURL string `json:"public_url"`
	// PeerURL is where other datacenters reach its api-peer.
	PeerURL string `json:"peer_url"`
	// ProxyURL is where the datacenter's gateway is reached; it defaults to PublicURL.
	ProxyURL string `json:"proxy_url,omitempty"`
}

// Auth holds the API credentials.
type Auth struct {
	// AdminToken, when set, is required as "Authorization: Bearer <token>" on every API
	// endpoint except /health and /metadata. Unset means the API is open. It may not be set
	// to the empty string: leave it out instead.
	AdminToken string `json:"admin_token,omitempty"`
	// AllowAnonymous lets the listeners face other machines without an admin token: anyone
	// who reaches them can then create and destroy actors, read their KV and drain runners.
	// Without it (the default), an engine with no admin token listens on loopback only, and a
	// host key naming another interface is an error. berth logs a warning at start when it
	// serves anonymously beyond loopback.
	AllowAnonymous bool `json:"allow_anonymous"`
	// TokensFile is the path of a JSON file of scoped tokens, each limited to one namespace
	// and a role (admin, read or runner) and kept as its SHA-256 (see docs/security.md;
	// `berth tokens create` writes it). It is read again when it changes: tokens are added
	// and revoked without a restart. Needs admin_token. Default: none.
	TokensFile string `json:"tokens_file,omitempty"`
}

// Guard is the ingress listener, which also serves the public API.
type Guard struct {
	// Host to listen on: an IP address or host name. "" (the default) means every interface,
	// IPv4 and IPv6, when auth.admin_token is set (or auth.allow_anonymous), and loopback only
	// (127.0.0.1 and ::1) when the API has no token. "::" and "0.0.0.0" name every interface
	// explicitly, and need a token too (or auth.allow_anonymous).
	Host string `json:"host"`
	// Port to listen on; default 6420. 0 picks a free port.
	Port uint16 `json:"port"`
	// RateLimitRequests bounds the actor-gateway requests of one client IP per 60 s, and
	// RateLimitInFlight those in flight at once (429 guard.rate_limit); 0 turns a limit
	// off. Defaults 10000 and 2000, as on Rivet.
	RateLimitRequests uint32 `json:"rate_limit_requests"`
	RateLimitInFlight uint32 `json:"rate_limit_in_flight"`
	// TrustedProxies lists the proxies (IP addresses or CIDR prefixes) allowed to say who the
	// client is. A client is its socket's address unless that address is trusted: then it is
	// the rightmost X-Forwarded-For entry that is not itself a trusted proxy (or, with
	// proxy_protocol, the PROXY protocol header's source). Empty by default: X-Forwarded-For
	// is never believed. The rate limits and the x-forwarded-for sent to actors use it. From
	// the environment or a flag: comma-separated.
	TrustedProxies []string `json:"trusted_proxies"`
	// MaxConnectionsPerClient bounds the connections one client address holds open on the
	// guard port at once (keep-alives, requests, WebSockets, runner sockets); a connection
	// over it gets 429 guard.too_many_connections and is closed. Trusted proxies are not
	// counted. Default 1024; 0 turns the bound off.
	MaxConnectionsPerClient uint32 `json:"max_connections_per_client"`
	// MaxWebSocketsPerClient bounds the WebSockets one client address (as for the rate
	// limits) holds open on the guard port: gateway WebSockets and runner and envoy sockets.
	// One over it gets 429 guard.too_many_websockets before the upgrade. Default 512; 0 turns
	// the bound off.
	MaxWebSocketsPerClient uint32 `json:"max_websockets_per_client"`
	// MaxHeaderBytes bounds the head of a request on every listener (guard, api_peer,
	// metrics), its request line and header lines as sent (431
	// guard.request_header_fields_too_large), and MaxHeaderCount its header fields (431
	// guard.too_many_request_headers). The connection is closed after the answer. Defaults
	// 65536 (1024 to 1048576) and 100, Rivet's count (1 to 10000).
	MaxHeaderBytes uint32 `json:"max_header_bytes"`
	MaxHeaderCount uint32 `json:"max_header_count"`
	// ReadHeaderTimeoutMs bounds how long a connection to any of the listeners (guard,
	// api_peer, metrics) may take to send a request's head, TLS handshake and PROXY header
	// included, counted from its first byte (from the connection's opening for the first
	// request); IdleTimeoutMs how long a kept-alive connection may wait before its next
	// request. Past either, the connection is closed. Defaults 10000 and 120000.
	ReadHeaderTimeoutMs uint32 `json:"read_header_timeout_ms"`
	IdleTimeoutMs       uint32 `json:"idle_timeout_ms"`
	// MaxTunnelsPerHost bounds the gateway requests and WebSockets one runner or envoy socket
	// carries at once; one more gets 503 guard.host_overloaded at once, rather than waiting.
	// Default 16384; 0 turns the bound off.
	MaxTunnelsPerHost uint32 `json:"max_tunnels_per_host"`
	// MaxRequestsPerActor bounds the gateway HTTP requests in flight to one actor through
	// one node (WebSockets are bounded per client and per host instead); one more gets 429
	// guard.actor_overloaded at once. Default 1024; 0 turns the bound off.
	MaxRequestsPerActor uint32 `json:"max_requests_per_actor"`
	// MaxAPIBodyBytes bounds a REST request body on the endpoints that carry data (POST and
	// PUT /actors, PUT /runner-configs/{name}): default 2097152, as on Rivet, room for about
	// 1.5 MiB of actor input (sent in base64). MaxAPISmallBodyBytes bounds it on those whose
	// body holds a few short fields (POST /namespaces, POST /actors/{id}/sleep and
	// /reschedule): default 65536. Both from 1024 to 20971520. A larger body gets 413
	// guard.invalid_request_body and is not read further; api-peer takes 6 times either
	// (at most 20 MiB), as api-public re-encodes what it forwards.
	MaxAPIBodyBytes      uint32 `json:"max_api_body_bytes"`
	MaxAPISmallBodyBytes uint32 `json:"max_api_small_body_bytes"`
	// TLS is the guard port's certificate: set, the public API, the gateway and the runner and
	// envoy sockets are served over TLS only (https, wss).
	TLS TLS `json:"tls"`
	// ProxyProtocol accepts a PROXY protocol (v1 or v2) header on guard connections that come
	// from a trusted proxy, as load balancers in TCP mode send it; other connections are read
	// as plain HTTP. Default false.
	ProxyProtocol bool `json:"proxy_protocol"`
	// The actor gateway's timeouts, in milliseconds, with Rivet's names and defaults:
	// actor_ready_timeout (30000) bounds the wait for an actor to become connectable
	// (guard.actor_ready_timeout); each read of the actor's state while routing
	// (route_pegboard_fetch_actor, 5000), each wake of a sleeping actor
	// (route_pegboard_wake_signal, 5000) and query routing's lookup or creation
	// (route_pegboard_resolve_query, 15000) fail with their own pegboard.route_*_timeout;
	// gateway_response_start_timeout (300000) bounds the wait for an actor's response and
	// gateway_websocket_open_timeout (15000) for it to accept a WebSocket.
	ActorReadyTimeout           uint32 `json:"actor_ready_timeout"`
	RoutePegboardFetchActor     uint32 `json:"route_pegboard_fetch_actor"`
	RoutePegboardWakeSignal     uint32 `json:"route_pegboard_wake_signal"`
	RoutePegboardResolveQuery   uint32 `json:"route_pegboard_resolve_query"`
	GatewayResponseStartTimeout uint32 `json:"gateway_response_start_timeout"`
	GatewayWebSocketOpenTimeout uint32 `json:"gateway_websocket_open_timeout"`
}

// TLS is a listener's certificate.
type TLS struct {
	// CertFile and KeyFile are PEM files of the certificate (its chain after it) and its key.
	// Both set: the listener serves TLS 1.2 or newer only, and reads the files again when they
	// change (a renewed certificate needs no restart). Both empty (the default): plain HTTP.
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file"`
}

// Enabled reports whether a certificate is configured.
func (t TLS) Enabled() bool { return t.CertFile != "" }

// PeerTLS is the TLS of api-peer and of the calls between nodes and datacenters.
type PeerTLS struct {
	// CertFile and KeyFile: api-peer's certificate, as for guard.tls; with client_auth also the
	// client certificate this node presents to other nodes and datacenters.
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file"`
	// CAFile is a PEM file of the authorities that sign the other nodes' and datacenters'
	// certificates: https peer_url, proxy_url and node addresses are verified against them
	// (and against the system's roots), and, with client_auth, the client certificates
	// api-peer requires. Unset: the system's roots only.
	CAFile string `json:"ca_file"`
	// ClientAuth makes api-peer require a client certificate signed by ca_file (mutual TLS
	// between nodes and datacenters). Default false.
	ClientAuth bool `json:"client_auth"`
}

// APIPublic configures the public API.
type APIPublic struct {
	// DatacenterTimeoutMs bounds each request the public API sends to a datacenter's api-peer
	// (forwarded calls and each leg of a fan-out), in milliseconds. Default 5000.
	DatacenterTimeoutMs uint32 `json:"datacenter_timeout_ms"`
}

// DatacenterTimeout returns DatacenterTimeoutMs as a duration.
func (a APIPublic) DatacenterTimeout() time.Duration { return Ms(a.DatacenterTimeoutMs) }

// APIPeer is the listener of the api-peer, the API other datacenters call.
type APIPeer struct {
	// Host to listen on, as for Guard.Host. Default "".
	Host string `json:"host"`
	// Port to listen on; default 6421. 0 picks a free port.
	Port uint16 `json:"port"`
	// TLS serves api-peer over TLS and sets how nodes and datacenters verify each other.
	TLS PeerTLS `json:"tls"`
}

// Metrics is the listener of the Prometheus endpoint, GET /metrics.
type Metrics struct {
	// Host to listen on, as for Guard.Host. Default "".
	Host string `json:"host"`
	// Port to listen on; default 6430. 0 picks a free port.
	Port uint16 `json:"port"`
	// Pprof also serves Go's runtime profiles at /debug/pprof/ on this listener (heap, CPU,
	// goroutines). Default false: profiles reveal internals, turn it on where the metrics
	// port is private.
	Pprof bool `json:"pprof"`
}

// Database names the store.
type Database struct {
	// URL of the store: file://PATH (default file://data/berth), mem:// (tests),
	// postgres://..., fdb://CLUSTER_FILE.
	URL string `json:"url"`
}

// PubSub is the message bus between the engine nodes of one datacenter.
type PubSub struct {
	// URL of the bus. Empty (the default) keeps the engine a single node with an in-process
	// bus; nats://HOST:PORT makes it one of several nodes sharing database.url (PostgreSQL or
	// FoundationDB), which reach each other's runner sockets through that NATS server.
	URL string `json:"url"`
}

// Node is this engine among the nodes of its datacenter.
type Node struct {
	// ID names the node in its lease and its ownership records. Default: a fresh random id at
	// each start. Give a node restarted after `POST /shutdown?handoff=preserve` the same id,
	// so that it finds the ownership records it kept.
	ID string `json:"id,omitempty"`
	// Address is the internal URL other nodes reach this node's api-peer listener at (gateway
	// requests for runners whose socket this node holds travel there). Default:
	// http://HOST:PORT of api_peer, with 127.0.0.1 for an unspecified host.
	Address string `json:"address,omitempty"`
	// LeaseMs is how long the node's lease lasts unless renewed (every third of it); a node
	// killed without a shutdown counts as gone once it runs out. Default 10000.
	LeaseMs uint32 `json:"lease_ms"`
	// GCHeapFloorMiB is the most heap, in MiB, that `berth start` lets Go's garbage collector
	// reach before a cycle while the live heap is small. With GOGC=100 alone it runs each
	// time a few MiB were allocated, ~30 times a second under gateway load on 2 cores
	// (engine CPU per gateway request 112–132 µs, against 79–115 µs with a floor).
	// The floor in effect follows the allocation rate (a quarter of a second of it, up to
	// this: 22–28 MiB for 16 gateway connections on 2 cores), so an idle engine holds no
	// garbage for it, and an engine that becomes idle gives its free heap back at once. Raise
	// it on machines that serve more than ~10,000 requests a second. 0 turns the floor off;
	// GOGC in the environment overrides it; GOMEMLIMIT still caps the heap. Default 32, at
	// most 16384.
	GCHeapFloorMiB uint32 `json:"gc_heap_floor_mib"`
	// KeepBinaryPages keeps berth's binary mapped as start-up left it. By default, on Linux,
	// a second after it first serves, `berth start` unmaps its code and read-only data and
	// drops the pages no other process maps from the page cache, so that only the pages it
	// goes on using come back, one at a time: recent kernels map a binary in folios of up to
	// 2 MiB, and the idle engine's resident memory is about half as large without them
	// (docs/benchmarks.md). The first run of code unused since start-up then reads its page
	// from disk; a graceful stop reads the binary back into the page cache for the next start.
	KeepBinaryPages bool `json:"keep_binary_pages"`
	// Releases bounds the ownership releases in flight during a graceful drain (environment
	// alias BERTH_RELEASES). Default 128.
	Releases uint32 `json:"releases"`
	// ShutdownDrainMs bounds a whole graceful drain, in milliseconds; keep it below the
	// supervisor's kill timeout (environment alias BERTH_SHUTDOWN_DRAIN_MS). Default 25000.
	ShutdownDrainMs uint32 `json:"shutdown_drain_ms"`
}

// Pegboard holds the control plane's timings, in milliseconds, named as on the Rivet engine.
type Pegboard struct {
	// RunnerLostThreshold is how long a runner may go without a ping before it is lost
	// (expired, its actors rescheduled), and how long a draining runner may take to stop its
	// actors; runners are told it in ToClientInit. Default 15000.
	RunnerLostThreshold uint32 `json:"runner_lost_threshold"`
	// RunnerEligibleThreshold: a runner not pinged for this long gets no new actors.
	// Default 10000.
	RunnerEligibleThreshold uint32 `json:"runner_eligible_threshold"`
	// RunnerUpdatePingIntervalMs is how often the engine pings each runner (plus 0–127 ms
	// jitter). Default 3000.
	RunnerUpdatePingIntervalMs uint32 `json:"runner_update_ping_interval_ms"`
	// RunnerPingTimeoutMs closes a runner socket that answered no ping for this long.
	// Default 15000.
	RunnerPingTimeoutMs uint32 `json:"runner_ping_timeout_ms"`
	// ActorStopThreshold is how long an actor may take to stop; runners are told it in
	// ToClientInit. Default 1800000.
	ActorStopThreshold uint32 `json:"actor_stop_threshold"`
	// ActorStartThreshold is how long a placed actor may take to report running before it
	// is lost. Default 30000.
	ActorStartThreshold uint32 `json:"actor_start_threshold"`
	// BaseRetryTimeout, RetryResetDuration and RescheduleBackoffMaxExponent shape the
	// backoff of an actor that keeps crashing: base·2^min(n, max) (plus up to 500 ms), the
	// count reset after RetryResetDuration without a crash. Defaults 2000, 600000, 8.
	BaseRetryTimeout             uint32 `json:"base_retry_timeout"`
	RetryResetDuration           uint32 `json:"retry_reset_duration"`
	RescheduleBackoffMaxExponent uint8  `json:"reschedule_backoff_max_exponent"`
	// HibernatingRequestEligibleThreshold: a client WebSocket kept open while its actor
	// sleeps is restored at the actor's next start if the gateway kept it alive this
	// recently. Default 90000.
	HibernatingRequestEligibleThreshold uint32 `json:"hibernating_request_eligible_threshold"`
	// EnvoyLostThreshold is how long an envoy may go without a ping before it is expired
	// (out of the load-balancer and active indexes); envoys are told it in ToEnvoyInit.
	// Default 15000.
	EnvoyLostThreshold uint32 `json:"envoy_lost_threshold"`
	// EnvoyPingTimeout closes an envoy socket that answered no ping for this long.
	// Default 15000.
	EnvoyPingTimeout uint32 `json:"envoy_ping_timeout"`
	// EnvoyUpdatePingInterval is how often the engine pings each envoy (plus 0–127 ms
	// jitter). Default 3000.
	EnvoyUpdatePingInterval uint32 `json:"envoy_update_ping_interval"`
	// EnvoyEligibleThreshold: an envoy not pinged for this long gets no new actors.
	// Default 10000.
	EnvoyEligibleThreshold uint32 `json:"envoy_eligible_threshold"`
	// EnvoyPlacement is how an actor's envoy is chosen in its pool: "hash_ring" (two
	// points drawn on a ring of 8 virtual nodes per envoy, newest version only; the less
	// loaded of the two) or "load_balancer" (the least loaded of the first fresh envoys
	// of the load-balancer index, newest version first). Default "hash_ring".
	EnvoyPlacement string `json:"envoy_placement"`
	// ServerlessDrainGracePeriodMs is how long before the end of a serverless runner pool's
	// GET /start request its runner is drained and a replacement requested (at most half the
	// request's lifespan); the runners of serverless pools are told it at init. Default 10000.
	ServerlessDrainGracePeriodMs uint32 `json:"serverless_drain_grace_period_ms"`
	// Serverless is where the engine may call serverless pools' endpoints.
	Serverless PegboardServerless `json:"serverless"`
}

// PegboardServerless is the destination policy of calls to serverless endpoints
// (docs/security.md, "Outbound calls"). By default only public addresses may be called:
// loopback, private, link-local and the other special-purpose ranges are refused, for
// literal addresses when a config is written and for every address a host name resolves to
// when it is called.
type PegboardServerless struct {
	// AllowPrivateURLs allows every special-purpose range, loopback included. Default false.
	AllowPrivateURLs bool `json:"allow_private_urls"`
	// AllowedCIDRs are ranges (CIDR prefixes or single addresses) allowed although special,
	// for example 127.0.0.0/8 for an app on the engine's host. Default none.
	AllowedCIDRs []string `json:"allowed_cidrs"`
}

// AllowedPrefixes is AllowedCIDRs parsed; Validate has checked every entry.
func (s PegboardServerless) AllowedPrefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, c := range s.AllowedCIDRs {
		if p, err := ParsePrefix(c); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// Ms turns a millisecond setting into a duration.
func Ms(ms uint32) time.Duration { return time.Duration(ms) * time.Millisecond }

// Defaults.
const (
	DefaultDatacenterName    = "default"
	DefaultDatacenterLabel   = 1
	DefaultPublicURL         = "http://127.0.0.1:6420"
	DefaultPeerURL           = "http://127.0.0.1:6421"
	DefaultHost              = "" // loopback without an admin token, else every interface
	DefaultGuardPort         = 6420
	DefaultAPIPeerPort       = 6421
	DefaultMetricsPort       = 6430
	DefaultDatabaseURL       = "file://data/berth"
	DefaultDatacenterTimeout = 5000 // ms
	DefaultNodeLeaseMs       = 10000
	DefaultReleases          = 128
	DefaultShutdownDrainMs   = 25000
	DefaultGCHeapFloorMiB    = 32
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxHeaderCount    = 100
	MaxAPIBody               = 20 << 20 // the largest guard.max_api_body_bytes

	DefaultRunnerLostThreshold        = 15000   // ms
	DefaultRunnerEligibleThreshold    = 10000   // ms
	DefaultRunnerUpdatePingIntervalMs = 3000    // ms
	DefaultRunnerPingTimeoutMs        = 15000   // ms
	DefaultActorStopThreshold         = 1800000 // ms
	DefaultActorStartThreshold        = 30000   // ms
	DefaultBaseRetryTimeout           = 2000    // ms
	DefaultRetryResetDuration         = 600000  // ms
	DefaultRescheduleBackoffMaxExp    = 8
	DefaultHibernatingRequestEligible = 90000 // ms

	DefaultEnvoyLostThreshold      = 15000 // ms
	DefaultEnvoyPingTimeout        = 15000 // ms
	DefaultEnvoyUpdatePingInterval = 3000  // ms
	DefaultEnvoyEligibleThreshold  = 10000 // ms

	DefaultServerlessDrainGracePeriodMs = 10000 // ms
)

// Default returns the configuration used when nothing is configured: one datacenter, no auth,
// the guard on :6420, the api-peer on :6421, the embedded store in ./data/berth.
func Default() *Config {
	c := &Config{
		Topology: Topology{
			DatacenterLabel: DefaultDatacenterLabel,
			Datacenters: map[string]Datacenter{
				DefaultDatacenterName: {
					DatacenterLabel: DefaultDatacenterLabel,
					IsLeader:        true,
					PublicURL:       DefaultPublicURL,
					PeerURL:         DefaultPeerURL,
				},
			},
		},
		Guard: Guard{Host: DefaultHost, Port: DefaultGuardPort, RateLimitRequests: 10000, RateLimitInFlight: 2000, MaxConnectionsPerClient: 1024,
			MaxWebSocketsPerClient: 512, MaxHeaderBytes: DefaultMaxHeaderBytes, MaxHeaderCount: DefaultMaxHeaderCount,
			ReadHeaderTimeoutMs: 10000, IdleTimeoutMs: 120000, MaxTunnelsPerHost: 16384, MaxRequestsPerActor: 1024,
			MaxAPIBodyBytes: 2 << 20, MaxAPISmallBodyBytes: 64 << 10,
			ActorReadyTimeout: 30000, RoutePegboardFetchActor: 5000, RoutePegboardWakeSignal: 5000, RoutePegboardResolveQuery: 15000,
			GatewayResponseStartTimeout: 300000, GatewayWebSocketOpenTimeout: 15000},
		APIPublic: APIPublic{DatacenterTimeoutMs: DefaultDatacenterTimeout},
		APIPeer:   APIPeer{Host: DefaultHost, Port: DefaultAPIPeerPort},
		Database:  Database{URL: DefaultDatabaseURL},
		Node: Node{
			LeaseMs: DefaultNodeLeaseMs, GCHeapFloorMiB: DefaultGCHeapFloorMiB,
			Releases: DefaultReleases, ShutdownDrainMs: DefaultShutdownDrainMs,
		},
		Metrics: Metrics{Host: DefaultHost, Port: DefaultMetricsPort},
		Log:     Log{Format: DefaultLogFormat, Level: DefaultLogLevel},
		Pegboard: Pegboard{
			RunnerLostThreshold:                 DefaultRunnerLostThreshold,
			RunnerEligibleThreshold:             DefaultRunnerEligibleThreshold,
			RunnerUpdatePingIntervalMs:          DefaultRunnerUpdatePingIntervalMs,
			RunnerPingTimeoutMs:                 DefaultRunnerPingTimeoutMs,
			ActorStopThreshold:                  DefaultActorStopThreshold,
			ActorStartThreshold:                 DefaultActorStartThreshold,
			BaseRetryTimeout:                    DefaultBaseRetryTimeout,
			RetryResetDuration:                  DefaultRetryResetDuration,
			RescheduleBackoffMaxExponent:        DefaultRescheduleBackoffMaxExp,
			HibernatingRequestEligibleThreshold: DefaultHibernatingRequestEligible,
			EnvoyLostThreshold:                  DefaultEnvoyLostThreshold,
			EnvoyPingTimeout:                    DefaultEnvoyPingTimeout,
			EnvoyUpdatePingInterval:             DefaultEnvoyUpdatePingInterval,
			EnvoyEligibleThreshold:              DefaultEnvoyEligibleThreshold,
			EnvoyPlacement:                      "hash_ring",
			ServerlessDrainGracePeriodMs:        DefaultServerlessDrainGracePeriodMs,
		},
	}
	c.fill()
	return c
}

// fill sets derived defaults after decoding: ProxyURL falls back to PublicURL.
func (c *Config) fill() {
	for name, dc := range c.Topology.Datacenters {
		if dc.ProxyURL == "" {
			dc.ProxyURL = dc.PublicURL
			c.Topology.Datacenters[name] = dc
		}
	}
}

// NamedDatacenter is a topology entry with its name.
type NamedDatacenter struct {
	Name string
	Datacenter
}

// SortedDatacenters returns the datacenters ordered by label.
func (t Topology) SortedDatacenters() []NamedDatacenter {
	out := make([]NamedDatacenter, 0, len(t.Datacenters))
	for name, dc := range t.Datacenters {
		out = append(out, NamedDatacenter{name, dc})
	}
	slices.SortFunc(out, func(a, b NamedDatacenter) int {
		return cmp.Or(cmp.Compare(a.DatacenterLabel, b.DatacenterLabel), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// Local returns this engine's datacenter (the one labelled DatacenterLabel).
func (t Topology) Local() (NamedDatacenter, bool) {
	for name, dc := range t.Datacenters {
		if dc.DatacenterLabel == t.DatacenterLabel {
			return NamedDatacenter{name, dc}, true
		}
	}
	return NamedDatacenter{}, false
}

// listenAddr joins host and port; "::" and "" both become the wildcard Go listens on for IPv4
// and IPv6 at once, so that the default works on hosts without IPv6 too.
// ListenAddrs returns the addresses a listener configured with host and port binds: host:port,
// or, for the default host "" on an engine that is not open to the network (Open), the IPv4
// and IPv6 loopback addresses.
func (c *Config) ListenAddrs(host string, port uint16) []string {
	if host == "" && !c.Open() {
		p := strconv.Itoa(int(port))
		return []string{net.JoinHostPort("127.0.0.1", p), net.JoinHostPort("::1", p)}
	}
	return []string{listenAddr(host, port)}
}

// Open reports whether the listeners may face other machines: the API has an admin token, or
// auth.allow_anonymous says it may serve without one.
func (c *Config) Open() bool { return c.Auth.AdminToken != "" || c.Auth.AllowAnonymous }

// Anonymous reports whether the engine serves without an admin token on an address other
// machines can reach (auth.allow_anonymous with a non-loopback host): worth a warning.
func (c *Config) Anonymous() bool {
	if c.Auth.AdminToken != "" {
		return false
	}
	for _, h := range []string{c.Guard.Host, c.APIPeer.Host, c.Metrics.Host} {
		if !IsLoopback(h) && (h != "" || c.Auth.AllowAnonymous) {
			return true
		}
	}
	return false
}

// IsLoopback reports whether host names only this machine: "localhost" or a loopback IP.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func listenAddr(host string, port uint16) string {
	if host == "::" {
		host = ""
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// Advertised is the topology with the default datacenter's URLs following the listeners:
// when the topology was left at its default (one datacenter, public_url
// http://127.0.0.1:6420, peer_url http://127.0.0.1:6421) and the guard or api_peer listens
// on another port or host, or serves TLS, the URL names the address it really listens on
// (127.0.0.1 for every interface), so that /datacenters, the gateway and the serverless
// pools point at this engine. A port of 0 (a free port, known only once bound) keeps the
// default. A topology given in a file or the environment is returned as it is.
func (c *Config) Advertised() Topology {
	t := c.Topology
	if len(t.Datacenters) != 1 {
		return t
	}
	dcs := make(map[string]Datacenter, 1)
	for name, dc := range t.Datacenters {
		if dc.PublicURL == DefaultPublicURL && c.Guard.Port != 0 {
			u := advertisedURL(c.Guard.TLS.Enabled(), c.Guard.Host, c.Guard.Port)
			if dc.ProxyURL == dc.PublicURL {
				dc.ProxyURL = u
			}
			dc.PublicURL = u
		}
		if dc.PeerURL == DefaultPeerURL && c.APIPeer.Port != 0 {
			dc.PeerURL = advertisedURL(c.APIPeer.TLS.CertFile != "", c.APIPeer.Host, c.APIPeer.Port)
		}
		dcs[name] = dc
	}
	t.Datacenters = dcs
	return t
}

// advertisedURL is the URL a listener on host:port is reached at from this machine.
func advertisedURL(tls bool, host string, port uint16) string {
	scheme := "http"
	if tls {
		scheme = "https"
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(int(port)))
}
