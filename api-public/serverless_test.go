package apipublic

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apipeer "github.com/berthhq/berth/api-peer"
	"github.com/berthhq/berth/api-public/openapitest"
	"github.com/berthhq/berth/engine/serverless"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/outbound"
)

// TestServerlessConfig runs a serverless pool's config API against a fake endpoint on
// loopback, every datacenter's api-peer with a serverless service that allows loopback.
func TestServerlessConfig(t *testing.T) {
	var calls atomic.Int32
	var status atomic.Int32
	status.Store(200)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/rivet/metadata" {
			http.NotFound(w, r)
			return
		}
		calls.Add(1)
		w.WriteHeader(int(status.Load()))
		if status.Load() != 200 {
			io.WriteString(w, "boom")
			return
		}
		io.WriteString(w, `{"envoyProtocolVersion":8,"runtime":"rivetkit","version":"2.3.19"}`)
	}))
	defer app.Close()

	c := newCluster(t, 2*time.Second)
	policy := outbound.Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	f := serverless.Fetcher{Client: outbound.NewClient(outbound.Options{Policy: policy}), Policy: policy, UserAgent: "berth/test"}
	leaderPeers := apihttp.NewPeerClient(apihttp.PeerOptions{Timeout: 2 * time.Second})
	t.Cleanup(leaderPeers.Close)
	for _, dc := range c.topo.Datacenters {
		topo := c.topo
		topo.Local = dc.Label
		svc := serverless.New(c.dbs[dc.Name], f, quiet)
		c.swap(dc.Name, apipeer.New(apipeer.Deps{DB: c.dbs[dc.Name], Topology: topo, Peers: leaderPeers, Auth: auth.Admin(""), Log: quiet, Serverless: svc}).Handler())
	}
	local := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		h := c.peers["b"]
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	})
	peers := apihttp.NewPeerClient(apihttp.PeerOptions{Timeout: 2 * time.Second}).WithLocal(2, local)
	t.Cleanup(peers.Close)
	c.pub = openapitest.Handler(t, New(Deps{Topology: c.topo, Peers: peers, DatacenterTimeout: 2 * time.Second, Log: quiet, Outbound: policy}).Handler())

	url := app.URL + "/api/rivet"
	body := `{"datacenters":{"b":{"serverless":{"url":"` + url + `","request_lifespan":3600,"headers":{"x-k":"secret"}}}}}`
	if a := c.do(t, "PUT", "/runner-configs/sl?namespace=default", body); a.status != 200 || a.body != `{"endpoint_config_changed":true}` {
		t.Fatalf("PUT: %d %s", a.status, a.body)
	}
	if calls.Load() != 1 {
		t.Errorf("%d /metadata calls on PUT, want 1 (before answering)", calls.Load())
	}
	want := `{"runner_configs":{"sl":{"datacenters":{"b":{"serverless":{"url":"` + url + `","headers":{"x-k":"secret"},"request_lifespan":3600,"max_concurrent_actors":1000,"drain_grace_period":1800,"slots_per_runner":1,"min_runners":0,"max_runners":1000,"runners_margin":0,"drain_on_version_upgrade":true,"actor_eviction_delay":0,"actor_eviction_period":0,"actor_eviction_rate":1},"protocol_version":8}}}},"pagination":{"cursor":null}}`
	for _, q := range []string{"", "&variant=serverless"} {
		if a := c.do(t, "GET", "/runner-configs?namespace=default"+q, ""); a.status != 200 || a.body != want {
			t.Errorf("GET%s: %d %s\nwant %s", q, a.status, a.body, want)
		}
	}
	if a := c.do(t, "GET", "/runner-configs?namespace=default&variant=normal", ""); a.status != 200 || strings.Contains(a.body, `"sl"`) {
		t.Errorf("GET variant=normal: %d %s", a.status, a.body)
	}
	if a := c.do(t, "POST", "/runner-configs/sl/refresh-metadata?namespace=default", `{}`); a.status != 200 || a.body != `{}` || calls.Load() != 2 {
		t.Errorf("refresh-metadata: %d %s after %d calls", a.status, a.body, calls.Load())
	}
	status.Store(500)
	if a := c.do(t, "POST", "/runner-configs/sl/refresh-metadata?namespace=default", `{}`); a.status != 400 ||
		a.body != `{"group":"serverless_runner_pool","code":"failed_to_fetch_metadata","message":"Failed to fetch serverless metadata: {reason}.","metadata":{"reason":{"message":"serverless metadata request returned status 500","metadata":{"body":"boom","kind":"non_success_status","status_code":500}}}}` {
		t.Errorf("refresh-metadata, endpoint failing: %d %s", a.status, a.body)
	}
	if a := c.do(t, "POST", "/runner-configs/nope/refresh-metadata?namespace=default", `{}`); a.status != 500 || !strings.Contains(a.body, `"core"`) {
		t.Errorf("refresh-metadata of no pool: %d %s", a.status, a.body)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"url":"` + url + `"}`, `{"failure":{"error":{"message":"serverless metadata request returned status 500","metadata":{"body":"boom","kind":"non_success_status","status_code":500}}}}`},
		{`{"url":"http://10.0.0.1/api"}`, `{"failure":{"error":{"details":"address 10.0.0.1 is not an allowed destination (private)","message":"serverless endpoint is not an allowed destination","metadata":{"kind":"destination_blocked","reason":"address 10.0.0.1 is not an allowed destination (private)"}}}}`},
		{`{"url":"","headers":{}}`, `{"failure":{"error":{"message":"invalid serverless metadata request","metadata":{"kind":"invalid_request"}}}}`},
	} {
		if a := c.do(t, "POST", "/runner-configs/serverless-health-check?namespace=default", tc.body); a.status != 200 || a.body != tc.want {
			t.Errorf("health check %s: %d %s\nwant %s", tc.body, a.status, a.body, tc.want)
		}
	}
	status.Store(200)
	if a := c.do(t, "POST", "/runner-configs/serverless-health-check?namespace=default", `{"url":"`+url+`"}`); a.status != 200 || a.body != `{"success":{"version":"2.3.19"}}` {
		t.Errorf("health check: %d %s", a.status, a.body)
	}
	if a := c.do(t, "POST", "/runner-configs/serverless-health-check?namespace=default", `{"url":"x","bogus":1}`); a.status != 400 || !strings.Contains(a.body, `"bad_request"`) {
		t.Errorf("health check, unknown field: %d %s", a.status, a.body)
	}
	blocked := `{"datacenters":{"b":{"serverless":{"url":"http://10.0.0.1/api","request_lifespan":3600}}}}`
	if a := c.do(t, "PUT", "/runner-configs/sl2?namespace=default", blocked); a.status != 400 ||
		!strings.Contains(a.body, `"metadata":{"reason":"invalid serverless url: address 10.0.0.1 is not an allowed destination (private)"}`) {
		t.Errorf("PUT to a private address: %d %s", a.status, a.body)
	}
	if a := c.do(t, "DELETE", "/runner-configs/sl?namespace=default", ""); a.status != 200 || a.body != `{}` {
		t.Errorf("DELETE: %d %s", a.status, a.body)
	}
	if a := c.do(t, "GET", "/runner-configs?namespace=default&variant=serverless", ""); a.status != 200 || a.body != `{"runner_configs":{},"pagination":{"cursor":null}}` {
		t.Errorf("GET after DELETE: %d %s", a.status, a.body)
	}
}
