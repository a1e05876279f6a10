package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Validate checks every rule that a single key's type cannot express and reports every
// violation at once (errors.Join of *FieldError), each naming the key.
//
// Rules: at least one datacenter; datacenter names are non-empty and without spaces, labels
// unique; exactly one leader; topology.datacenter_label is one of the labels; public_url,
// peer_url and (when set) proxy_url are absolute http or https URLs with a host and no query;
// hosts are empty, an IP address or a host name; guard and api_peer do not share a port;
// database.url has a scheme berth knows; api_public.datacenter_timeout_ms > 0; an admin token
// has no spaces or control characters; the pegboard timings are > 0 and the ping timeout is
// longer than the ping interval; pubsub.url is a nats:// URL and then database.url is
// postgres:// or fdb://; node.address is an http or https URL; node.lease_ms ≥ 1000; the
// guard's limits are within the ranges their keys give.
func (c *Config) Validate() error {
	errs := c.validate()
	if len(errs) == 0 {
		return nil
	}
	return joinFieldErrors(errs)
}

func (c *Config) validate() []*FieldError {
	var errs []*FieldError
	bad := func(path, format string, args ...any) {
		errs = append(errs, &FieldError{Path: path, Reason: fmt.Sprintf(format, args...)})
	}
	c.validateTopology(bad)
	if strings.ContainsFunc(c.Auth.AdminToken, isSpaceOrControl) {
		bad("auth.admin_token", "must not contain spaces or control characters")
	}
	if c.Auth.TokensFile != "" && c.Auth.AdminToken == "" {
		bad("auth.tokens_file", "needs auth.admin_token: the nodes and datacenters call each other with it")
	}
	c.validateListeners(bad)
	c.validateLimits(bad)
	c.validateStore(bad)
	c.validateTimings(bad)
	c.validateObservability(bad)
	return errs
}

// validateTopology checks the datacenters: names, labels, one leader, URLs.
func (c *Config) validateTopology(bad badFunc) {
	t := c.Topology
	if len(t.Datacenters) == 0 {
		bad("topology.datacenters", "at least one datacenter is required")
	}
	names := make([]string, 0, len(t.Datacenters))
	for name := range t.Datacenters {
		names = append(names, name)
	}
	sort.Strings(names)
	byLabel := map[uint16]string{}
	var leaders []string
	for _, name := range names {
		dc := t.Datacenters[name]
		p := "topology.datacenters." + name
		if name == "" || strings.ContainsFunc(name, isSpaceOrControl) {
			bad(p, "a datacenter name must be non-empty, without spaces or control characters")
		}
		if other, dup := byLabel[dc.DatacenterLabel]; dup {
			bad(p+".datacenter_label", "label %d is also used by datacenter %q", dc.DatacenterLabel, other)
		} else {
			byLabel[dc.DatacenterLabel] = name
		}
		if dc.IsLeader {
			leaders = append(leaders, name)
		}
		checkURL(bad, p+".public_url", dc.PublicURL, true)
		checkURL(bad, p+".peer_url", dc.PeerURL, true)
		checkURL(bad, p+".proxy_url", dc.ProxyURL, false)
	}
	switch {
	case len(t.Datacenters) == 0:
	case len(leaders) == 0:
		bad("topology.datacenters", "no datacenter has is_leader: true; exactly one must")
	case len(leaders) > 1:
		bad("topology.datacenters", "%d datacenters have is_leader: true (%s); exactly one must", len(leaders), strings.Join(leaders, ", "))
	}
	if _, ok := byLabel[t.DatacenterLabel]; !ok && len(t.Datacenters) > 0 {
		labels := make([]string, 0, len(byLabel))
		for l := range byLabel {
			labels = append(labels, strconv.Itoa(int(l)))
		}
		sort.Strings(labels)
		bad("topology.datacenter_label", "%d is not the label of any datacenter in topology.datacenters (labels: %s)", t.DatacenterLabel, strings.Join(labels, ", "))
	}
}

// validateListeners checks hosts, ports, TLS files, trusted proxies and that nothing faces
// other machines without a token unless allowed.
func (c *Config) validateListeners(bad badFunc) {
	for i, p := range c.Guard.TrustedProxies {
		if _, err := ParsePrefix(p); err != nil {
			bad("guard.trusted_proxies."+strconv.Itoa(i), "%v", err)
		}
	}
	for i, p := range c.Pegboard.Serverless.AllowedCIDRs {
		if _, err := ParsePrefix(p); err != nil {
			bad("pegboard.serverless.allowed_cidrs."+strconv.Itoa(i), "%v", err)
		}
	}
	pairs := []struct{ path, cert, key string }{{"guard.tls", c.Guard.TLS.CertFile, c.Guard.TLS.KeyFile},
		{"api_peer.tls", c.APIPeer.TLS.CertFile, c.APIPeer.TLS.KeyFile}}
	for _, p := range pairs {
		if (p.cert == "") != (p.key == "") {
			bad(p.path, "cert_file and key_file go together: set both, or neither")
		}
	}
	if t := c.APIPeer.TLS; t.ClientAuth && (t.CAFile == "" || t.CertFile == "") {
		bad("api_peer.tls.client_auth", "needs ca_file (to verify clients) and cert_file and key_file (this node's own certificate)")
	}
	if c.Guard.ProxyProtocol && len(c.Guard.TrustedProxies) == 0 {
		bad("guard.proxy_protocol", "needs guard.trusted_proxies: a PROXY header is accepted only from a trusted proxy")
	}
	for _, l := range []struct{ path, host string }{{"guard.host", c.Guard.Host}, {"api_peer.host", c.APIPeer.Host}, {"metrics.host", c.Metrics.Host}} {
		if checkHost(bad, l.path, l.host) && !c.Open() && l.host != "" && !IsLoopback(l.host) {
			bad(l.path, "%q can be reached from other machines and auth.admin_token is not set: set an admin token, "+
				"or auth.allow_anonymous: true to serve without one (anyone who reaches it may then change every actor)", l.host)
		}
	}
	if c.Guard.Port != 0 && c.Guard.Port == c.APIPeer.Port && sameHost(c.Guard.Host, c.APIPeer.Host) {
		bad("api_peer.port", "%d is also guard.port; the two listeners need different ports", c.APIPeer.Port)
	}
	for _, other := range []struct {
		name string
		host string
		port uint16
	}{{"guard", c.Guard.Host, c.Guard.Port}, {"api_peer", c.APIPeer.Host, c.APIPeer.Port}} {
		if c.Metrics.Port != 0 && c.Metrics.Port == other.port && sameHost(c.Metrics.Host, other.host) {
			bad("metrics.port", "%d is also %s.port; the listeners need different ports", c.Metrics.Port, other.name)
		}
	}
	if c.APIPublic.DatacenterTimeoutMs == 0 {
		bad("api_public.datacenter_timeout_ms", "must be greater than 0")
	}
}

// validateLimits checks the guard's bounds on what clients send: each within its range.
func (c *Config) validateLimits(bad badFunc) {
	g := c.Guard
	for _, f := range []struct {
		name     string
		v        uint32
		min, max uint32
	}{
		{"max_header_bytes", g.MaxHeaderBytes, 1024, 1 << 20},
		{"max_header_count", g.MaxHeaderCount, 1, 10000},
		{"read_header_timeout_ms", g.ReadHeaderTimeoutMs, 1, math.MaxUint32},
		{"idle_timeout_ms", g.IdleTimeoutMs, 1, math.MaxUint32},
		{"max_api_body_bytes", g.MaxAPIBodyBytes, 1024, MaxAPIBody},
		{"max_api_small_body_bytes", g.MaxAPISmallBodyBytes, 1024, MaxAPIBody},
	} {
		switch {
		case f.v == 0 && f.min == 1:
			bad("guard."+f.name, "must be greater than 0")
		case f.v < f.min || f.v > f.max:
			bad("guard."+f.name, "must be from %d to %d, not %d", f.min, f.max, f.v)
		}
	}
}

// validateStore checks the store, the bus and the node settings.
func (c *Config) validateStore(bad badFunc) {
	checkDatabaseURL(bad, "database.url", c.Database.URL)

	// pubsub and node
	if u := c.PubSub.URL; u != "" {
		if pu, err := url.Parse(u); err != nil || pu.Scheme != "nats" || pu.Host == "" {
			bad("pubsub.url", "invalid URL %q: want nats://HOST:PORT, or leave it out for a single node", u)
		} else if s, _, _ := strings.Cut(c.Database.URL, "://"); s != "postgres" && s != "postgresql" && s != "fdb" {
			bad("pubsub.url", "several nodes share one store: database.url must be postgres:// or fdb://, not %s://", s)
		}
	}
	if strings.ContainsFunc(c.Node.ID, isSpaceOrControl) {
		bad("node.id", "must not contain spaces or control characters")
	}
	checkURL(bad, "node.address", c.Node.Address, false)
	if c.Node.LeaseMs < 1000 {
		bad("node.lease_ms", "must be at least 1000, not %d", c.Node.LeaseMs)
	}
	if c.Node.GCHeapFloorMiB > 16384 {
		bad("node.gc_heap_floor_mib", "must be at most 16384 (MiB), not %d", c.Node.GCHeapFloorMiB)
	}
	if c.Node.Releases == 0 {
		bad("node.releases", "must be greater than zero, not 0")
	}
	if c.Node.ShutdownDrainMs == 0 {
		bad("node.shutdown_drain_ms", "must be greater than zero, not 0")
	}
}

// validateTimings checks the gateway's and the pegboard's timings.
func (c *Config) validateTimings(bad badFunc) {
	for _, f := range []struct {
		name string
		ms   uint32
	}{
		{"actor_ready_timeout", c.Guard.ActorReadyTimeout},
		{"route_pegboard_fetch_actor", c.Guard.RoutePegboardFetchActor},
		{"route_pegboard_wake_signal", c.Guard.RoutePegboardWakeSignal},
		{"route_pegboard_resolve_query", c.Guard.RoutePegboardResolveQuery},
		{"gateway_response_start_timeout", c.Guard.GatewayResponseStartTimeout},
		{"gateway_websocket_open_timeout", c.Guard.GatewayWebSocketOpenTimeout},
	} {
		if f.ms == 0 {
			bad("guard."+f.name, "must be greater than 0")
		}
	}

	pb := c.Pegboard
	for _, f := range []struct {
		name string
		ms   uint32
	}{
		{"runner_lost_threshold", pb.RunnerLostThreshold},
		{"runner_eligible_threshold", pb.RunnerEligibleThreshold},
		{"runner_update_ping_interval_ms", pb.RunnerUpdatePingIntervalMs},
		{"runner_ping_timeout_ms", pb.RunnerPingTimeoutMs},
		{"actor_stop_threshold", pb.ActorStopThreshold},
		{"actor_start_threshold", pb.ActorStartThreshold},
		{"base_retry_timeout", pb.BaseRetryTimeout},
		{"retry_reset_duration", pb.RetryResetDuration},
		{"hibernating_request_eligible_threshold", pb.HibernatingRequestEligibleThreshold},
		{"envoy_lost_threshold", pb.EnvoyLostThreshold},
		{"envoy_ping_timeout", pb.EnvoyPingTimeout},
		{"envoy_update_ping_interval", pb.EnvoyUpdatePingInterval},
		{"envoy_eligible_threshold", pb.EnvoyEligibleThreshold},
	} {
		if f.ms == 0 {
			bad("pegboard."+f.name, "must be greater than 0")
		}
	}
	// A live runner or envoy is pinged every interval plus up to 127 ms of jitter:
	// thresholds at or under that would expire (or deem ineligible) hosts that answer every
	// ping, and a ping timeout at or under the interval would close them.
	for _, h := range []struct {
		interval                  string
		iv                        uint32
		lost, eligible, timeout   string
		lostMs, eligibleMs, outMs uint32
	}{
		{"runner_update_ping_interval_ms", pb.RunnerUpdatePingIntervalMs, "runner_lost_threshold", "runner_eligible_threshold", "runner_ping_timeout_ms",
			pb.RunnerLostThreshold, pb.RunnerEligibleThreshold, pb.RunnerPingTimeoutMs},
		{"envoy_update_ping_interval", pb.EnvoyUpdatePingInterval, "envoy_lost_threshold", "envoy_eligible_threshold", "envoy_ping_timeout",
			pb.EnvoyLostThreshold, pb.EnvoyEligibleThreshold, pb.EnvoyPingTimeout},
	} {
		if h.iv == 0 {
			continue
		}
		for _, f := range []struct {
			name string
			ms   uint32
		}{{h.lost, h.lostMs}, {h.eligible, h.eligibleMs}} {
			if f.ms != 0 && uint64(f.ms) <= uint64(h.iv)+128 {
				bad("pegboard."+f.name, "%d must be longer than pegboard.%s (%d) plus 128 ms of jitter", f.ms, h.interval, h.iv)
			}
		}
		if h.outMs != 0 && h.outMs <= h.iv {
			bad("pegboard."+h.timeout, "%d must be longer than pegboard.%s (%d)", h.outMs, h.interval, h.iv)
		}
	}
	if pb.EnvoyPlacement != "hash_ring" && pb.EnvoyPlacement != "load_balancer" {
		bad("pegboard.envoy_placement", "%q is not hash_ring or load_balancer", pb.EnvoyPlacement)
	}
	if pb.RescheduleBackoffMaxExponent > 30 {
		bad("pegboard.reschedule_backoff_max_exponent", "%d is above 30", pb.RescheduleBackoffMaxExponent)
	}
}

type badFunc func(path, format string, args ...any)

func checkURL(bad badFunc, path, raw string, required bool) {
	if raw == "" {
		if required {
			bad(path, "required")
		}
		return
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		bad(path, "invalid URL %q: %v", raw, errors.Unwrap(err))
	case u.Scheme != "http" && u.Scheme != "https":
		bad(path, "invalid URL %q: the scheme must be http or https", raw)
	case u.Host == "" || u.Hostname() == "":
		bad(path, "invalid URL %q: no host", raw)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		bad(path, "invalid URL %q: no user info, query or fragment allowed", raw)
	case u.Port() != "":
		if p, err := strconv.ParseUint(u.Port(), 10, 16); err != nil || p == 0 {
			bad(path, "invalid URL %q: bad port %q", raw, u.Port())
		}
	}
}

// checkHost accepts "", an IP address, or a host name (letters, digits, '-', '.'), and reports
// whether host was one.
func checkHost(bad badFunc, path, host string) bool {
	if host == "" || net.ParseIP(host) != nil {
		return true
	}
	if len(host) > 253 || strings.Trim(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") != "" ||
		strings.HasPrefix(host, ".") || strings.HasPrefix(host, "-") || strings.Contains(host, "..") {
		bad(path, "%q is neither an IP address nor a host name (give the port in the port key)", host)
		return false
	}
	return true
}

func sameHost(a, b string) bool {
	wild := func(h string) bool { return h == "" || h == "::" || h == "0.0.0.0" }
	return a == b || wild(a) || wild(b)
}

// knownSchemes are the store URL schemes pkg/udb understands (some need a build tag).
var knownSchemes = []string{"file", "mem", "postgres", "postgresql", "fdb"}

func checkDatabaseURL(bad badFunc, path, raw string) {
	if raw == "" {
		bad(path, "required")
		return
	}
	u, err := url.Parse(raw)
	if err != nil {
		bad(path, "invalid URL %q: %v", raw, errors.Unwrap(err))
		return
	}
	for _, s := range knownSchemes {
		if u.Scheme == s {
			return
		}
	}
	bad(path, "invalid URL %q: the scheme must be one of %s", raw, strings.Join(knownSchemes, ", "))
}

func isSpaceOrControl(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }

// joinFieldErrors sorts errs by path so that output is stable, then joins them.
func joinFieldErrors(errs []*FieldError) error {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Path < errs[j].Path })
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return errors.Join(out...)
}

// TrustedPrefixes is TrustedProxies parsed; Validate has checked every entry (one that does
// not parse is left out).
func (g Guard) TrustedPrefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range g.TrustedProxies {
		if p, err := ParsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// ParsePrefix reads a trusted proxy: a CIDR prefix ("10.0.0.0/8") or one address, which is a
// prefix of its full length.
func ParsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not a CIDR prefix such as 10.0.0.0/8", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is neither an IP address nor a CIDR prefix", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}
