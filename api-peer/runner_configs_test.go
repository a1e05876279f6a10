package apipeer

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/udb"
)

// The api-peer's runner-config exchanges differ from api-public's (one config per body, not
// one per datacenter), so they are not checked against openapi.yaml (do(…, true)); the public
// side is, in api-public.

const (
	normalBody     = `{"normal":{}}`
	serverlessBody = `{"serverless":{"url":"https://app.example/api","request_lifespan":3600,"headers":{"x-k":"v"}},"metadata":{"team":"games"}}`
	normalJSON     = `{"normal":{"drain_on_version_upgrade":true,"actor_eviction_delay":0,"actor_eviction_period":0,"actor_eviction_rate":1},"protocol_version":null}`
	serverlessJSON = `{"serverless":{"url":"https://app.example/api","headers":{"x-k":"v"},"request_lifespan":3600,"max_concurrent_actors":1000,"drain_grace_period":1800,"slots_per_runner":1,"min_runners":0,"max_runners":1000,"runners_margin":0,"drain_on_version_upgrade":true,"actor_eviction_delay":0,"actor_eviction_period":0,"actor_eviction_rate":1},"metadata":{"team":"games"},"protocol_version":null}`
)

func TestRunnerConfigsPeer(t *testing.T) {
	p := newPeer(t, twoDCs(1), nil)
	call := func(method, target, body string) answer {
		t.Helper()
		return do(t, p.h, method, target, body, true)
	}
	if a := call("GET", "/runner-configs?namespace=default", ""); a.status != 200 || a.body != `{"runner_configs":{},"pagination":{"cursor":null}}` {
		t.Errorf("empty list: %d %s", a.status, a.body)
	}
	if a := call("PUT", "/runner-configs/pool-n?namespace=default", normalBody); a.status != 200 || a.body != `{"endpoint_config_changed":true}` {
		t.Fatalf("put normal: %d %s", a.status, a.body)
	}
	if a := call("PUT", "/runner-configs/pool-s?namespace=default", serverlessBody); a.status != 200 || a.body != `{"endpoint_config_changed":true}` {
		t.Fatalf("put serverless: %d %s", a.status, a.body)
	}
	// The same endpoint again: unchanged.
	if a := call("PUT", "/runner-configs/pool-s?namespace=default", serverlessBody); a.status != 200 || a.body != `{"endpoint_config_changed":false}` {
		t.Errorf("put serverless again: %d %s", a.status, a.body)
	}
	// The protocol version an envoy reported shows in the list.
	if err := udb.Update(bg, p.db, func(tx udb.Transaction) error {
		keys.Set(tx, keys.RunnerConfigProtocolVersionKey{Namespace: p.defNsID, Name: "pool-n"}, 6)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	withPV := strings.Replace(normalJSON, `"protocol_version":null`, `"protocol_version":6`, 1)

	for _, tc := range []struct{ query, want string }{
		{"", `{"runner_configs":{"pool-n":` + withPV + `,"pool-s":` + serverlessJSON + `},"pagination":{"cursor":":pool-s"}}`},
		{"&variant=normal", `{"runner_configs":{"pool-n":` + withPV + `},"pagination":{"cursor":"normal:pool-n"}}`},
		{"&variant=serverless", `{"runner_configs":{"pool-s":` + serverlessJSON + `},"pagination":{"cursor":"serverless:pool-s"}}`},
		{"&limit=1", `{"runner_configs":{"pool-n":` + withPV + `},"pagination":{"cursor":":pool-n"}}`},
		{"&limit=1&cursor=:pool-n", `{"runner_configs":{"pool-s":` + serverlessJSON + `},"pagination":{"cursor":":pool-s"}}`},
		{"&limit=1&cursor=:pool-s", `{"runner_configs":{},"pagination":{"cursor":null}}`},
		{"&limit=1&variant=normal", `{"runner_configs":{"pool-n":` + withPV + `},"pagination":{"cursor":"normal:pool-n"}}`},
		{"&runner_name=pool-s&runner_name=nope", `{"runner_configs":{"pool-s":` + serverlessJSON + `},"pagination":{"cursor":null}}`},
		{"&runner_names=pool-s,pool-n", `{"runner_configs":{"pool-n":` + withPV + `,"pool-s":` + serverlessJSON + `},"pagination":{"cursor":null}}`},
		{"&runner_names=pool-s&runner_name=pool-n&variant=serverless", `{"runner_configs":{"pool-s":` + serverlessJSON + `},"pagination":{"cursor":null}}`},
		// The Rivet engine's cursor form, the variant of the last item, continues that variant.
		{"&cursor=normal:pool-a", `{"runner_configs":{"pool-n":` + withPV + `},"pagination":{"cursor":"normal:pool-n"}}`},
	} {
		if a := call("GET", "/runner-configs?namespace=default"+tc.query, ""); a.status != 200 || a.body != tc.want {
			t.Errorf("GET %s: %d %s\nwant %s", tc.query, a.status, a.body, tc.want)
		}
	}

	if a := call("DELETE", "/runner-configs/pool-s?namespace=default", ""); a.status != 200 || a.body != `{}` {
		t.Errorf("delete: %d %s", a.status, a.body)
	}
	if a := call("DELETE", "/runner-configs/pool-s?namespace=default", ""); a.status != 200 || a.body != `{}` {
		t.Errorf("delete again: %d %s", a.status, a.body)
	}
	if a := call("GET", "/runner-configs?namespace=default", ""); a.status != 200 || a.body != `{"runner_configs":{"pool-n":`+withPV+`},"pagination":{"cursor":":pool-n"}}` {
		t.Errorf("after delete: %d %s", a.status, a.body)
	}
}

// TestRunnerConfigsPeerNames checks that runner names round-trip through the URL path,
// escaped or not, and that a name that cannot be a runner name is refused.
func TestRunnerConfigsPeerNames(t *testing.T) {
	p := newPeer(t, twoDCs(1), nil)
	for _, name := range []string{"a b", "a%b", "é", "a?b#c", "a+b", strings.Repeat("n", 128)} {
		target := apitypes.RunnerConfigPath(name) + "?namespace=default"
		if a := do(t, p.h, "PUT", target, normalBody, true); a.status != 200 {
			t.Errorf("PUT %s: %d %s", target, a.status, a.body)
			continue
		}
		var list apitypes.RunnerConfigsListResponse
		decode(t, do(t, p.h, "GET", "/runner-configs?namespace=default&runner_name="+url.QueryEscape(name), "", true), &list)
		if _, ok := list.RunnerConfigs[name]; !ok || len(list.RunnerConfigs) != 1 {
			t.Errorf("%q stored as %v", name, slices.Collect(mapsKeys(list.RunnerConfigs)))
		}
		if a := do(t, p.h, "DELETE", target, "", true); a.status != 200 {
			t.Errorf("DELETE %s: %d %s", target, a.status, a.body)
		}
	}
	for _, target := range []string{"/runner-configs/a%2Fb", "/runner-configs/" + strings.Repeat("n", 129), "/runner-configs/%0A", "/runner-configs/%FF"} {
		for _, method := range []string{"PUT", "DELETE"} {
			a := do(t, p.h, method, target+"?namespace=default", normalBody, true)
			if key, field := errKey(t, a); a.status != 400 || key != "api.bad_request" || field != "runner_name" {
				t.Errorf("%s %s: %d %s", method, target, a.status, a.body)
			}
		}
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestRunnerConfigsPeerErrors(t *testing.T) {
	p := newPeer(t, twoDCs(1), nil)
	for _, tc := range []struct {
		method, target, body string
		status               int
		key, field           string
	}{
		{"GET", "/runner-configs", "", 400, "api.bad_request", "namespace"},
		{"GET", "/runner-configs?namespace=nope", "", 404, "namespace.not_found", ""},
		{"GET", "/runner-configs?namespace=default&variant=other", "", 400, "api.bad_request", "variant"},
		{"GET", "/runner-configs?namespace=default&limit=-1", "", 400, "api.bad_request", "limit"},
		{"GET", "/runner-configs?namespace=default&cursor=pool", "", 400, "api.bad_request", "cursor"},
		{"GET", "/runner-configs?namespace=default&cursor=other:pool", "", 400, "api.bad_request", "cursor"},
		{"GET", "/runner-configs?namespace=default&runner_name=a%2Fb", "", 400, "api.bad_request", "runner_name"},
		{"GET", "/runner-configs?namespace=default&bogus=1", "", 400, "api.bad_request", "bogus"},
		{"PUT", "/runner-configs/p?namespace=nope", normalBody, 404, "namespace.not_found", ""},
		{"PUT", "/runner-configs/p", normalBody, 400, "api.bad_request", "namespace"},
		{"PUT", "/runner-configs/p?namespace=default&x=1", normalBody, 400, "api.bad_request", "x"},
		{"PUT", "/runner-configs/p?namespace=default", "", 400, "api.bad_request", ""},
		{"PUT", "/runner-configs/p?namespace=default", `[1]`, 400, "api.bad_request", ""},
		{"PUT", "/runner-configs/p?namespace=default", `{}`, 400, "api.bad_request", ""},
		{"PUT", "/runner-configs/p?namespace=default", `{"datacenters":{}}`, 400, "api.bad_request", "datacenters"},
		{"PUT", "/runner-configs/p?namespace=default", `{"normal":{"x":1}}`, 400, "api.bad_request", "normal.x"},
		{"PUT", "/runner-configs/p?namespace=default", `{"serverless":{"url":"https://h/","request_lifespan":600,"drain_grace_period":60,"slots_per_runner":0}}`,
			400, "runner_config.invalid", ""}, // the reference's reason, no field
		{"PUT", "/runner-configs/p?namespace=default", `{"serverless":{"url":"https://h/","request_lifespan":600}}`,
			400, "runner_config.invalid", ""},
		{"DELETE", "/runner-configs/p?namespace=nope", "", 404, "namespace.not_found", ""},
		{"DELETE", "/runner-configs/p", "", 400, "api.bad_request", "namespace"},
		{"POST", "/runner-configs/p?namespace=default", normalBody, 405, "api.method_not_allowed", ""},
	} {
		a := do(t, p.h, tc.method, tc.target, tc.body, true)
		if key, field := errKey(t, a); a.status != tc.status || key != tc.key || field != tc.field {
			t.Errorf("%s %s %s: %d %s\nwant %d %s field %q", tc.method, tc.target, tc.body, a.status, a.body, tc.status, tc.key, tc.field)
		}
	}
	var list apitypes.RunnerConfigsListResponse
	decode(t, do(t, p.h, "GET", "/runner-configs?namespace=default", "", true), &list)
	if len(list.RunnerConfigs) != 0 {
		t.Errorf("a refused request wrote %v", list.RunnerConfigs)
	}
}

// TestRunnerConfigsPeerFollower: a datacenter that is not the leader stores its own configs
// under the namespace id the leader gave.
func TestRunnerConfigsPeerFollower(t *testing.T) {
	leader := newPeer(t, twoDCs(1), nil)
	leaderSrv := httptest.NewServer(leader.h)
	defer leaderSrv.Close()
	topo := twoDCs(2)
	topo.Datacenters[0].PeerURL = leaderSrv.URL
	peers := apihttp.NewPeerClient(apihttp.PeerOptions{Timeout: 2 * time.Second})
	defer peers.Close()
	follower := newPeer(t, topo, peers)

	if a := do(t, follower.h, "PUT", "/runner-configs/pool?namespace=default", normalBody, true); a.status != 200 {
		t.Fatalf("put in the follower: %d %s", a.status, a.body)
	}
	got, err := udb.ReadTransact(bg, follower.db, func(r udb.ReadTransaction) (bool, error) {
		_, found, err := keys.Get(bg, r, keys.RunnerConfigDataKey{Namespace: leader.defNsID, Name: "pool"})
		return found, err
	})
	if err != nil || !got {
		t.Errorf("the follower's config is not under the leader's namespace id: %v, %v", got, err)
	}
	var list apitypes.RunnerConfigsListResponse
	decode(t, do(t, leader.h, "GET", "/runner-configs?namespace=default", "", true), &list)
	if len(list.RunnerConfigs) != 0 {
		t.Errorf("the leader has the follower's config: %v", list.RunnerConfigs)
	}
	decode(t, do(t, follower.h, "GET", "/runner-configs?namespace=default", "", true), &list)
	if b, _ := json.Marshal(list.RunnerConfigs["pool"]); string(b) != normalJSON {
		t.Errorf("follower list: %s", b)
	}
	a := do(t, follower.h, "DELETE", "/runner-configs/pool?namespace=nope", "", true)
	if key, _ := errKey(t, a); a.status != 404 || key != "namespace.not_found" {
		t.Errorf("unknown namespace in the follower: %d %s", a.status, a.body)
	}
}
