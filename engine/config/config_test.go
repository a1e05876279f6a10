package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefault(t *testing.T) {
	c, err := Load(Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Fatalf("Load with no sources = %+v, want Default()", c)
	}
	want := Datacenter{DatacenterLabel: 1, IsLeader: true, PublicURL: "http://127.0.0.1:6420",
		PeerURL: "http://127.0.0.1:6421", ProxyURL: "http://127.0.0.1:6420"}
	if got := c.Topology.Datacenters["default"]; got != want || len(c.Topology.Datacenters) != 1 {
		t.Errorf("default topology = %+v", c.Topology.Datacenters)
	}
	if c.Topology.DatacenterLabel != 1 || c.Guard.Port != 6420 || c.APIPeer.Port != 6421 ||
		c.Database.URL != "file://data/berth" || c.Auth.AdminToken != "" || c.APIPublic.DatacenterTimeoutMs != 5000 {
		t.Errorf("defaults = %+v", c)
	}
	if want := (Pegboard{15000, 10000, 3000, 15000, 1800000, 30000, 2000, 600000, 8, 90000, 15000, 15000, 3000, 10000, "hash_ring", 10000, PegboardServerless{}}); !reflect.DeepEqual(c.Pegboard, want) {
		t.Errorf("pegboard defaults = %+v, want %+v (Rivet's)", c.Pegboard, want)
	}
	if c.Metrics.Port != 6430 {
		t.Errorf("metrics.port = %d, want 6430", c.Metrics.Port)
	}
	if got := c.ListenAddrs(c.Guard.Host, c.Guard.Port); !slices.Equal(got, []string{"127.0.0.1:6420", "[::1]:6420"}) {
		t.Errorf("guard listens on %q without a token, want loopback only", got)
	}
	c.Auth.AdminToken = "tok"
	if got := c.ListenAddrs(c.Guard.Host, c.Guard.Port); !slices.Equal(got, []string{":6420"}) {
		t.Errorf("guard listens on %q with a token, want :6420 (wildcard)", got)
	}
	c.Auth.AdminToken = ""
	if err := Default().Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
}

const twoDCYAML = `
topology:
  datacenter_label: 2
  datacenters:
    eu:
      datacenter_label: 1
      is_leader: true
      public_url: http://eu.example:6420
      peer_url: http://eu.example:6421
    us:
      datacenter_label: 2
      public_url: https://us.example
      peer_url: http://us.internal:6421
      proxy_url: https://gw.us.example
auth:
  admin_token: s3cret
guard:
  host: 127.0.0.1
  port: 7420
api_peer: {host: "::1", port: 7421}
database:
  url: mem://
`

func TestLoadYAML(t *testing.T) {
	c, err := Load(Sources{Files: []string{writeFile(t, "berth.yaml", twoDCYAML)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Topology.Datacenters) != 2 {
		t.Fatalf("datacenters = %v; the default one must be replaced", c.Topology.Datacenters)
	}
	local, ok := c.Topology.Local()
	if !ok || local.Name != "us" || local.ProxyURL != "https://gw.us.example" {
		t.Errorf("Local() = %+v, %v", local, ok)
	}
	if eu := c.Topology.Datacenters["eu"]; eu.ProxyURL != eu.PublicURL {
		t.Errorf("eu proxy_url = %q, want public_url", eu.ProxyURL)
	}
	if got := c.Topology.SortedDatacenters(); got[0].Name != "eu" || got[1].Name != "us" {
		t.Errorf("SortedDatacenters = %v", got)
	}
	if c.Auth.AdminToken != "s3cret" || !slices.Equal(c.ListenAddrs(c.Guard.Host, c.Guard.Port), []string{"127.0.0.1:7420"}) ||
		!slices.Equal(c.ListenAddrs(c.APIPeer.Host, c.APIPeer.Port), []string{"[::1]:7421"}) || c.Database.URL != "mem://" {
		t.Errorf("config = %+v", c)
	}
}

func TestLoadJSONMergeEnvFlags(t *testing.T) {
	base := writeFile(t, "a.json", `{
		"guard": {"host": "127.0.0.1", "port": 1000},
		"database": {"url": "mem://"},
		"topology": {"datacenters": {"a": {"datacenter_label": 1, "is_leader": true,
			"public_url": "http://a:1", "peer_url": "http://a:2"}}}
	}`)
	over := writeFile(t, "b.yml", "guard:\n  port: 2000\ntopology:\n  datacenters:\n    b: {datacenter_label: 7, public_url: 'http://b:1', peer_url: 'http://b:2'}\n")
	c, err := Load(Sources{
		Files: []string{base, over},
		Environ: []string{
			"PATH=/bin", "BERTHX=1",
			"BERTH__auth__admin_token=from-env",
			"BERTH__guard__port=3000",
			"BERTH__topology__datacenters__b__peer_url=http://b-env:2",
			"BERTH__guard__trusted_proxies=10.0.0.0/8, 192.168.1.1,",
		},
		Overrides: []Override{{Path: "database.url", Value: "file:///tmp/x", Source: "flag --db"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Guard.Host != "127.0.0.1" || c.Guard.Port != 3000 {
		t.Errorf("guard = %+v; host from a.json, port from the environment", c.Guard)
	}
	if len(c.Topology.Datacenters) != 2 || c.Topology.Datacenters["b"].PeerURL != "http://b-env:2" ||
		c.Topology.Datacenters["b"].PublicURL != "http://b:1" {
		t.Errorf("datacenters = %+v; maps merge key by key", c.Topology.Datacenters)
	}
	if !slices.Equal(c.Guard.TrustedProxies, []string{"10.0.0.0/8", "192.168.1.1"}) {
		t.Errorf("guard.trusted_proxies = %q; from the environment, comma-separated", c.Guard.TrustedProxies)
	}
	if c.Auth.AdminToken != "from-env" || c.Database.URL != "file:///tmp/x" {
		t.Errorf("auth/database = %+v %+v", c.Auth, c.Database)
	}
}

func TestLoadErrors(t *testing.T) {
	dc := func(extra string) string {
		return "topology:\n  datacenters:\n" + extra
	}
	tests := []struct {
		name    string
		yaml    string
		env     []string
		over    []Override
		want    []string // substrings of the error, each must appear
		wantErr int      // number of *FieldError joined (0: don't check)
	}{
		{name: "unknown top-level key", yaml: "gaurd: {port: 1}\n",
			want: []string{"gaurd: unknown key; known keys in the top level are api_peer, api_public, auth, database, guard, log, metrics, node, otel, pegboard, pubsub, topology", "berth.yaml:1:8"}},
		{name: "unknown nested key", yaml: "guard:\n  prot: 1\n",
			want: []string{"guard.prot: unknown key; known keys in guard are actor_ready_timeout, gateway_response_start_timeout, gateway_websocket_open_timeout, host, idle_timeout_ms,", "berth.yaml:2:9"}},
		{name: "port out of range", yaml: "guard: {port: 70000}\n",
			want: []string{"guard.port: want an integer from 0 to 65535, got number 70000"}},
		{name: "port is text", yaml: "guard: {port: abc}\n",
			want: []string{`guard.port: want an integer from 0 to 65535, got string "abc"`}},
		{name: "negative port", yaml: "guard: {port: -1}\n", want: []string{"guard.port: want an integer"}},
		{name: "number for string", yaml: "auth: {admin_token: 1234}\n",
			want: []string{"auth.admin_token: want a string, got number 1234 (quote it)"}},
		{name: "bool strict", yaml: dc("    x: {datacenter_label: 1, is_leader: 1, public_url: 'http://a', peer_url: 'http://b'}\n"),
			want: []string{"topology.datacenters.x.is_leader: want true or false, got number 1"}},
		{name: "section as value", yaml: "guard: 6420\n", want: []string{"guard: want a section"}},
		{name: "trusted proxy not an address", yaml: "guard: {trusted_proxies: ['10.0.0.0/8', 'proxy.local', '10.0.0.0/40']}\n",
			want: []string{`guard.trusted_proxies.1: "proxy.local" is neither an IP address nor a CIDR prefix`,
				`guard.trusted_proxies.2: "10.0.0.0/40" is not a CIDR prefix`}, wantErr: 2},
		{name: "trusted proxies not a list", yaml: "guard: {trusted_proxies: {a: 1}}\n", want: []string{"guard.trusted_proxies: want a list of strings, got a mapping"}},
		{name: "trusted proxy not a string", yaml: "guard: {trusted_proxies: [10]}\n", want: []string{"guard.trusted_proxies.0: want a string, got number 10"}},
		{name: "certificate without key", yaml: "guard: {tls: {cert_file: /etc/berth/cert.pem}}\n",
			want: []string{"guard.tls: cert_file and key_file go together"}},
		{name: "mutual TLS without an authority", yaml: "api_peer: {tls: {cert_file: c.pem, key_file: k.pem, client_auth: true}}\n",
			want: []string{"api_peer.tls.client_auth: needs ca_file"}},
		{name: "proxy protocol without trusted proxies", yaml: "guard: {proxy_protocol: true}\n",
			want: []string{"guard.proxy_protocol: needs guard.trusted_proxies"}},
		{name: "open bind without token", yaml: "api_peer: {host: '0.0.0.0'}\n",
			want: []string{`api_peer.host: "0.0.0.0" can be reached from other machines and auth.admin_token is not set`}},
		{name: "bad peer url", yaml: dc("    dc1: {datacenter_label: 1, is_leader: true, public_url: 'http://a', peer_url: 'http://b'}\n    dc2: {datacenter_label: 2, public_url: 'http://c', peer_url: 'htp:/x'}\n") + "  datacenter_label: 1\n",
			want: []string{`topology.datacenters.dc2.peer_url: invalid URL "htp:/x": the scheme must be http or https (`, "berth.yaml:4:66)"}},
		{name: "url without host", yaml: dc("    a: {datacenter_label: 1, is_leader: true, public_url: 'http://', peer_url: 'http://b'}\n"),
			want: []string{`topology.datacenters.a.public_url: invalid URL "http://": no host`}},
		{name: "missing urls", yaml: dc("    a: {datacenter_label: 1, is_leader: true}\n"),
			want: []string{"topology.datacenters.a.peer_url: required", "topology.datacenters.a.public_url: required"}, wantErr: 2},
		{name: "label not in list", yaml: dc("    a: {datacenter_label: 5, is_leader: true, public_url: 'http://a', peer_url: 'http://b'}\n"),
			want: []string{"topology.datacenter_label: 1 is not the label of any datacenter in topology.datacenters (labels: 5)"}},
		{name: "no leader", yaml: dc("    a: {datacenter_label: 1, public_url: 'http://a', peer_url: 'http://b'}\n"),
			want: []string{"topology.datacenters: no datacenter has is_leader: true"}},
		{name: "two leaders", yaml: dc("    a: {datacenter_label: 1, is_leader: true, public_url: 'http://a', peer_url: 'http://b'}\n    b: {datacenter_label: 2, is_leader: true, public_url: 'http://a', peer_url: 'http://b'}\n"),
			want: []string{"topology.datacenters: 2 datacenters have is_leader: true (a, b)"}},
		{name: "duplicate label", yaml: dc("    a: {datacenter_label: 1, is_leader: true, public_url: 'http://a', peer_url: 'http://b'}\n    b: {datacenter_label: 1, public_url: 'http://a', peer_url: 'http://b'}\n"),
			want: []string{`topology.datacenters.b.datacenter_label: label 1 is also used by datacenter "a"`}},
		{name: "empty datacenters", yaml: "topology:\n  datacenters: {}\n", want: []string{"topology.datacenters: at least one datacenter is required"}},
		{name: "duplicate key", yaml: "guard: {port: 1}\nguard: {port: 2}\n", want: []string{`berth.yaml:2:1: key "guard" given twice`}},
		{name: "bad db scheme", yaml: "database: {url: 'redis://x'}\n",
			want: []string{`database.url: invalid URL "redis://x": the scheme must be one of file, mem, postgres, postgresql, fdb`}},
		{name: "empty admin token", env: []string{"BERTH__auth__admin_token="},
			want: []string{"auth.admin_token: empty; leave the key out to turn authentication off (env BERTH__auth__admin_token)"}},
		{name: "token with space", env: []string{"BERTH__auth__admin_token=a b"}, want: []string{"auth.admin_token: must not contain spaces"}},
		{name: "unknown env section", env: []string{"BERTH__db__url=mem://"},
			want: []string{"db: unknown key", "env BERTH__db__url"}},
		{name: "env bad value", env: []string{"BERTH__api_peer__port=66000"},
			want: []string{"api_peer.port: want an integer from 0 to 65535, got \"66000\" (env BERTH__api_peer__port)"}},
		{name: "env empty segment", env: []string{"BERTH__guard____port=1"}, want: []string{"BERTH__guard____port: want BERTH__section__key"}},
		{name: "env value for section", env: []string{"BERTH__guard=1"}, want: []string{"guard: want a section"}},
		{name: "same port", over: []Override{{Path: "api_peer.port", Value: "6420", Source: "flag --peer"}},
			want: []string{"api_peer.port: 6420 is also guard.port", "flag --peer"}},
		{name: "bad host", yaml: "guard: {host: '0.0.0.0:80'}\n", want: []string{`guard.host: "0.0.0.0:80" is neither an IP address nor a host name`}},
		{name: "zero timeout", yaml: "api_public: {datacenter_timeout_ms: 0}\n", want: []string{"api_public.datacenter_timeout_ms: must be greater than 0"}},
		{name: "zero gateway timeouts", yaml: "guard: {actor_ready_timeout: 0, route_pegboard_wake_signal: 0}\n",
			want: []string{"guard.actor_ready_timeout: must be greater than 0", "guard.route_pegboard_wake_signal: must be greater than 0"}},
		{name: "guard limits out of range", yaml: "guard: {max_header_bytes: 100, max_header_count: 0, idle_timeout_ms: 0, max_api_body_bytes: 30000000}\n",
			want: []string{"guard.max_header_bytes: must be from 1024 to 1048576, not 100", "guard.max_header_count: must be greater than 0",
				"guard.idle_timeout_ms: must be greater than 0", "guard.max_api_body_bytes: must be from 1024 to 20971520, not 30000000"}, wantErr: 4},
		{name: "metrics on the guard port", env: []string{"BERTH__metrics__port=6420"},
			want: []string{"metrics.port: 6420 is also guard.port"}},
		{name: "lost threshold under the ping interval", env: []string{"BERTH__pegboard__runner_lost_threshold=2000"},
			want: []string{"pegboard.runner_lost_threshold: 2000 must be longer than pegboard.runner_update_ping_interval_ms (3000) plus 128 ms of jitter"}},
		{name: "zero lost threshold", env: []string{"BERTH__pegboard__runner_lost_threshold=0"},
			want: []string{"pegboard.runner_lost_threshold: must be greater than 0"}},
		{name: "ping timeout not above interval", yaml: "pegboard: {runner_update_ping_interval_ms: 5000, runner_ping_timeout_ms: 5000}\n",
			want: []string{"pegboard.runner_ping_timeout_ms: 5000 must be longer than pegboard.runner_update_ping_interval_ms (5000)"}},
		{name: "envoy lost threshold under the ping interval", env: []string{"BERTH__pegboard__envoy_lost_threshold=3128"},
			want: []string{"pegboard.envoy_lost_threshold: 3128 must be longer than pegboard.envoy_update_ping_interval (3000) plus 128 ms of jitter"}},
		{name: "envoy eligible threshold under the ping interval", yaml: "pegboard: {envoy_update_ping_interval: 20000}\n",
			want: []string{"pegboard.envoy_lost_threshold: 15000 must be longer than pegboard.envoy_update_ping_interval (20000)",
				"pegboard.envoy_eligible_threshold: 10000 must be longer", "pegboard.envoy_ping_timeout: 15000 must be longer than pegboard.envoy_update_ping_interval (20000)"}},
		{name: "zero envoy keys", yaml: "pegboard: {envoy_lost_threshold: 0, envoy_ping_timeout: 0, envoy_update_ping_interval: 0, envoy_eligible_threshold: 0}\n",
			want: []string{"pegboard.envoy_lost_threshold: must be greater than 0", "pegboard.envoy_ping_timeout: must be greater than 0",
				"pegboard.envoy_update_ping_interval: must be greater than 0", "pegboard.envoy_eligible_threshold: must be greater than 0"}, wantErr: 4},
		{name: "every error at once", yaml: "guard: {port: x, host: 'a b'}\napi_peer: {port: y}\n",
			want: []string{"guard.port", "guard.host", "api_peer.port"}, wantErr: 3},
		{name: "top level list", yaml: "- a\n", want: []string{"the top level must be a mapping"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := Sources{Environ: tt.env, Overrides: tt.over}
			if tt.yaml != "" {
				src.Files = []string{writeFile(t, "berth.yaml", tt.yaml)}
			}
			_, err := Load(src)
			if err == nil {
				t.Fatalf("Load succeeded, want error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain %q", err, w)
				}
			}
			if tt.wantErr > 0 {
				if n := strings.Count(err.Error(), "\n") + 1; n != tt.wantErr {
					t.Errorf("got %d errors, want %d:\n%v", n, tt.wantErr, err)
				}
			}
		})
	}
}

func TestFieldErrorAs(t *testing.T) {
	_, err := Load(Sources{Environ: []string{"BERTH__guard__port=x"}})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != "guard.port" || fe.Source != "env BERTH__guard__port" {
		t.Fatalf("errors.As = %+v from %v", fe, err)
	}
}

func TestFileErrors(t *testing.T) {
	tests := []struct {
		name, file, body, want string
	}{
		{"unknown extension", "berth.toml", "x = 1", "unknown format; name it .json, .yaml or .yml"},
		{"bad json", "b.json", `{"guard": }`, "b.json:1:"},
		{"json duplicate", "b.json", `{"guard": {"port": 1, "port": 2}}`, `key "port" given twice`},
		{"json trailing", "b.json", `{} {}`, "data after the top-level value"},
		{"json top-level array", "b.json", `[1]`, "the top level must be a mapping"},
		{"bad yaml", "b.yaml", "guard: [", "b.yaml"},
		{"json unknown key has a position", "b.json", "{\n  \"guard\": {\"hots\": \"x\"}\n}", "guard.hots: unknown key; known keys in guard are actor_ready_timeout, gateway_response_start_timeout, gateway_websocket_open_timeout, host, idle_timeout_ms, max_api_body_bytes, max_api_small_body_bytes, max_connections_per_client, max_header_bytes, max_header_count, max_requests_per_actor, max_tunnels_per_host, max_websockets_per_client, port, proxy_protocol, rate_limit_in_flight, rate_limit_requests, read_header_timeout_ms, route_pegboard_fetch_actor, route_pegboard_resolve_query, route_pegboard_wake_signal, tls, trusted_proxies ("},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(Sources{Files: []string{writeFile(t, tt.file, tt.body)}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if _, err := Load(Sources{Files: []string{filepath.Join(t.TempDir(), "missing.yaml")}}); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: error = %v", err)
	}
}

func TestEmptyYAMLAndNull(t *testing.T) {
	c, err := Load(Sources{Files: []string{writeFile(t, "empty.yaml", ""), writeFile(t, "null.yaml", "auth:\nguard:\n")}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("empty and null sections must leave the defaults, got %+v", c)
	}
}

func TestYAMLAnchors(t *testing.T) {
	c, err := Load(Sources{Files: []string{writeFile(t, "a.yaml", `
topology:
  datacenter_label: 1
  datacenters:
    a: &dc {datacenter_label: 1, is_leader: true, public_url: 'http://a', peer_url: 'http://a:1'}
guard: {host: localhost}
`)}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Topology.Datacenters["a"].PeerURL != "http://a:1" || c.Guard.Host != "localhost" {
		t.Errorf("got %+v", c)
	}
}

func TestYAMLAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	_, err := Load(Sources{Files: []string{writeFile(t, "bomb.yaml", b.String())}})
	if err == nil || !strings.Contains(err.Error(), "more than 100000 values") {
		t.Fatalf("error = %v", err)
	}
}

func TestAdvertised(t *testing.T) {
	custom := Default()
	custom.Topology.Datacenters["default"] = Datacenter{DatacenterLabel: 1, IsLeader: true,
		PublicURL: "https://berth.example.com", PeerURL: "http://10.0.0.1:6421", ProxyURL: "https://berth.example.com"}
	custom.Guard.Port, custom.APIPeer.Port = 7420, 7421
	tests := []struct {
		name                string
		set                 func(*Config)
		public, proxy, peer string
	}{
		{"defaults", func(*Config) {}, DefaultPublicURL, DefaultPublicURL, DefaultPeerURL},
		{"ports", func(c *Config) { c.Guard.Port, c.APIPeer.Port = 7420, 7421 },
			"http://127.0.0.1:7420", "http://127.0.0.1:7420", "http://127.0.0.1:7421"},
		{"host and TLS", func(c *Config) { c.Guard.Host, c.Guard.TLS.CertFile, c.APIPeer.Host = "::1", "c.pem", "0.0.0.0" },
			"https://[::1]:6420", "https://[::1]:6420", DefaultPeerURL},
		{"free port", func(c *Config) { c.Guard.Port = 0 }, DefaultPublicURL, DefaultPublicURL, DefaultPeerURL},
		{"proxy given", func(c *Config) {
			c.Guard.Port = 7420
			dc := c.Topology.Datacenters["default"]
			dc.ProxyURL = "http://gw.internal:80"
			c.Topology.Datacenters["default"] = dc
		}, "http://127.0.0.1:7420", "http://gw.internal:80", DefaultPeerURL},
		{"topology given", func(c *Config) { *c = *custom }, "https://berth.example.com", "https://berth.example.com", "http://10.0.0.1:6421"},
	}
	for _, tt := range tests {
		c := Default()
		tt.set(c)
		before := c.Topology.Datacenters["default"]
		dc := c.Advertised().Datacenters["default"]
		if dc.PublicURL != tt.public || dc.ProxyURL != tt.proxy || dc.PeerURL != tt.peer {
			t.Errorf("%s: public %s proxy %s peer %s, want %s %s %s", tt.name, dc.PublicURL, dc.ProxyURL, dc.PeerURL, tt.public, tt.proxy, tt.peer)
		}
		if c.Topology.Datacenters["default"] != before {
			t.Errorf("%s: Advertised changed the configuration", tt.name)
		}
	}
}
