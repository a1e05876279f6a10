package apipublic

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/api-public/openapitest"
	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/udb"
)

const (
	rcNormal     = `{"normal":{"actor_eviction_rate":0.5}}`
	rcServerless = `{"serverless":{"url":"https://app.example/api","request_lifespan":3600,"drain_grace_period":60,"headers":{"x-k":"v"}},"metadata":{"team":"games"}}`
	// What the datacenters answer for them: every default filled.
	rcNormalResp     = `{"normal":{"drain_on_version_upgrade":true,"actor_eviction_delay":0,"actor_eviction_period":0,"actor_eviction_rate":0.5},"protocol_version":null}`
	rcServerlessResp = `{"serverless":{"url":"https://app.example/api","headers":{"x-k":"v"},"request_lifespan":3600,"max_concurrent_actors":1000,"drain_grace_period":60,"slots_per_runner":1,"min_runners":0,"max_runners":1000,"runners_margin":0,"drain_on_version_upgrade":true,"actor_eviction_delay":0,"actor_eviction_period":0,"actor_eviction_rate":1},"metadata":{"team":"games"},"protocol_version":null}`
)

// configsIn returns the runner names with a config in datacenter dc's store, by variant
// ("normal:pool"), read straight from the store.
func (c *cluster) configsIn(t *testing.T, dc string) []string {
	t.Helper()
	v, err := udb.ReadTransact(bg, c.dbs[dc], func(r udb.ReadTransaction) (runnerconfig.ListOutput, error) {
		return runnerconfig.List(bg, r, runnerconfig.ListInput{Namespace: c.nsID, Limit: runnerconfig.MaxListLimit})
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range v.Configs {
		out = append(out, e.Config.Variant().String()+":"+e.Name)
	}
	return out
}

// listConfigs returns GET /runner-configs?namespace=default<query> as name → dc → JSON.
func (c *cluster) listConfigs(t *testing.T, query string) map[string]map[string]string {
	t.Helper()
	var resp struct {
		RunnerConfigs map[string]struct {
			Datacenters map[string]json.RawMessage `json:"datacenters"`
		} `json:"runner_configs"`
		Pagination struct {
			Cursor *string `json:"cursor"`
		} `json:"pagination"`
	}
	decode(t, c.do(t, "GET", "/runner-configs?namespace=default"+query, ""), &resp)
	if resp.Pagination.Cursor != nil {
		t.Errorf("GET %s: cursor %q, want null", query, *resp.Pagination.Cursor)
	}
	out := map[string]map[string]string{}
	for name, dcs := range resp.RunnerConfigs {
		out[name] = map[string]string{}
		for dc, cfg := range dcs.Datacenters {
			out[name][dc] = string(cfg)
		}
	}
	return out
}

func upsertBody(dcs map[string]string) string {
	var parts []string
	for _, dc := range slices.Sorted(maps.Keys(dcs)) {
		parts = append(parts, `"`+dc+`":`+dcs[dc])
	}
	return `{"datacenters":{` + strings.Join(parts, ",") + `}}`
}

func TestRunnerConfigsAcrossDatacenters(t *testing.T) {
	c := newCluster(t, 5*time.Second)
	put := func(name string, dcs map[string]string, changed bool) {
		t.Helper()
		a := c.do(t, "PUT", "/runner-configs/"+name+"?namespace=default", upsertBody(dcs))
		want := `{"endpoint_config_changed":false}`
		if changed {
			want = `{"endpoint_config_changed":true}`
		}
		if a.status != 200 || a.body != want {
			t.Fatalf("PUT %s %v: %d %s, want %s", name, dcs, a.status, a.body, want)
		}
	}

	put("pool", map[string]string{"a": rcServerless, "c": rcNormal}, true)
	if got := c.listConfigs(t, ""); !maps.EqualFunc(got, map[string]map[string]string{
		"pool": {"a": rcServerlessResp, "c": rcNormalResp},
	}, maps.Equal) {
		t.Errorf("after the first PUT: %v", got)
	}
	for dc, want := range map[string][]string{"a": {"serverless:pool"}, "b": nil, "c": {"normal:pool"}} {
		if got := c.configsIn(t, dc); !slices.Equal(got, want) {
			t.Errorf("datacenter %s holds %v, want %v", dc, got, want)
		}
	}

	// The same serverless endpoint in a, and c left out (its config goes): no endpoint
	// changed. (A normal config written would count as a change, as in Rivet.)
	put("pool", map[string]string{"a": rcServerless}, false)
	if got := c.configsIn(t, "c"); len(got) != 0 {
		t.Errorf("c not in the body, still holds %v", got)
	}
	put("pool", map[string]string{"a": rcServerless, "b": rcNormal}, true)
	put("other", map[string]string{"b": rcServerless}, true)

	for _, tc := range []struct {
		query string
		want  map[string]map[string]string
	}{
		{"", map[string]map[string]string{"pool": {"a": rcServerlessResp, "b": rcNormalResp}, "other": {"b": rcServerlessResp}}},
		{"&variant=serverless", map[string]map[string]string{"pool": {"a": rcServerlessResp}, "other": {"b": rcServerlessResp}}},
		{"&variant=normal", map[string]map[string]string{"pool": {"b": rcNormalResp}}},
		{"&runner_name=other", map[string]map[string]string{"other": {"b": rcServerlessResp}}},
		{"&runner_names=other,pool&variant=normal", map[string]map[string]string{"pool": {"b": rcNormalResp}}},
		{"&runner_name=nope", map[string]map[string]string{}},
		// Each datacenter applies the limit to its own configs.
		{"&limit=1", map[string]map[string]string{"other": {"b": rcServerlessResp}, "pool": {"a": rcServerlessResp}}},
		{"&limit=1&cursor=:other", map[string]map[string]string{"pool": {"a": rcServerlessResp, "b": rcNormalResp}}},
	} {
		if got := c.listConfigs(t, tc.query); !maps.EqualFunc(got, tc.want, maps.Equal) {
			t.Errorf("GET %s: %v\nwant %v", tc.query, got, tc.want)
		}
	}

	// An empty map removes the config everywhere; DELETE does too, and again.
	put("pool", map[string]string{}, false)
	if got := c.listConfigs(t, ""); len(got) != 1 || got["other"] == nil {
		t.Errorf("after PUT {}: %v", got)
	}
	for range 2 {
		if a := c.do(t, "DELETE", "/runner-configs/other?namespace=default", ""); a.status != 200 || a.body != `{}` {
			t.Errorf("DELETE: %d %s", a.status, a.body)
		}
	}
	if a := c.do(t, "GET", "/runner-configs?namespace=default", ""); a.status != 200 || a.body != `{"runner_configs":{},"pagination":{"cursor":null}}` {
		t.Errorf("after DELETE: %d %s", a.status, a.body)
	}
	for _, dc := range []string{"a", "b", "c"} {
		if got := c.configsIn(t, dc); len(got) != 0 {
			t.Errorf("datacenter %s still holds %v", dc, got)
		}
	}

	// A name that needs escaping reaches every datacenter intact.
	name := "pool é%?#"
	a := c.do(t, "PUT", apitypes.RunnerConfigPath(name)+"?namespace=default", upsertBody(map[string]string{"a": rcNormal, "c": rcNormal}))
	if a.status != 200 {
		t.Fatalf("PUT %q: %d %s", name, a.status, a.body)
	}
	for _, dc := range []string{"a", "c"} {
		if got := c.configsIn(t, dc); !slices.Equal(got, []string{"normal:" + name}) {
			t.Errorf("%s holds %q", dc, got)
		}
	}
	if a := c.do(t, "DELETE", apitypes.RunnerConfigPath(name)+"?namespace=default", ""); a.status != 200 {
		t.Errorf("DELETE %q: %d %s", name, a.status, a.body)
	}
	if got := c.configsIn(t, "a"); len(got) != 0 {
		t.Errorf("a still holds %q", got)
	}
}

// TestRunnerConfigsProtocolVersion: the protocol version a datacenter knows shows in its
// entry only.
func TestRunnerConfigsProtocolVersion(t *testing.T) {
	c := newCluster(t, 5*time.Second)
	if a := c.do(t, "PUT", "/runner-configs/pool?namespace=default", upsertBody(map[string]string{"a": rcNormal, "c": rcNormal})); a.status != 200 {
		t.Fatalf("PUT: %d %s", a.status, a.body)
	}
	if err := udb.Update(bg, c.dbs["c"], func(tx udb.Transaction) error {
		keys.Set(tx, keys.RunnerConfigProtocolVersionKey{Namespace: c.nsID, Name: "pool"}, 6)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := c.listConfigs(t, "")
	if got["pool"]["a"] != rcNormalResp || got["pool"]["c"] != strings.Replace(rcNormalResp, `"protocol_version":null`, `"protocol_version":6`, 1) {
		t.Errorf("%v", got)
	}
}

// TestRunnerConfigsRefusedBeforeAnyWrite: a request that is wrong anywhere writes nowhere.
func TestRunnerConfigsRefusedBeforeAnyWrite(t *testing.T) {
	c := newCluster(t, 5*time.Second)
	if a := c.do(t, "PUT", "/runner-configs/pool?namespace=default", upsertBody(map[string]string{"a": rcNormal, "b": rcNormal, "c": rcNormal})); a.status != 200 {
		t.Fatalf("PUT: %d %s", a.status, a.body)
	}
	// From here on no datacenter may be asked to write.
	for _, dc := range []string{"a", "b", "c"} {
		c.swap(dc, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t.Errorf("datacenter %s asked %s %s", dc, r.Method, r.URL)
			w.WriteHeader(500)
		}))
	}
	badSlots := `{"serverless":{"url":"https://h/","request_lifespan":600,"drain_grace_period":60,"slots_per_runner":0}}`
	for _, tc := range []struct {
		target, body       string
		status             int
		key, field, dcMeta string
		unchecked          bool
	}{
		{"/runner-configs/pool?namespace=default", upsertBody(map[string]string{"a": rcNormal, "mars": rcNormal}), 404, "datacenter.not_found", "", "mars", false},
		{"/runner-configs/pool?namespace=default", upsertBody(map[string]string{"a": rcNormal, "c": badSlots}), 400, "runner_config.invalid", "", "", false},
		{"/runner-configs/pool?namespace=default", upsertBody(map[string]string{"b": `{"serverless":{"url":"https://h/","request_lifespan":600}}`}), 400, "runner_config.invalid", "", "", false},
		{"/runner-configs/pool?namespace=default", upsertBody(map[string]string{"a": `{"normal":{},"serverless":{"url":"https://h/","request_lifespan":600}}`}), 400, "api.bad_request", "datacenters.a", "", false},
		{"/runner-configs/pool?namespace=default", upsertBody(map[string]string{"a": `{"normal":{"bogus":1}}`}), 400, "api.bad_request", "datacenters.a.normal.bogus", "", false},
		{"/runner-configs/pool?namespace=default", upsertBody(map[string]string{"a": `null`}), 400, "api.bad_request", "datacenters.a", "", true},
		{"/runner-configs/pool?namespace=default", `{}`, 400, "api.bad_request", "datacenters", "", false},
		{"/runner-configs/pool?namespace=default", `{"datacenters":null}`, 400, "api.bad_request", "datacenters", "", true},
		{"/runner-configs/pool?namespace=default", `{"datacenters":{},"x":1}`, 400, "api.bad_request", "x", "", false},
		{"/runner-configs/pool?namespace=default", ``, 400, "api.bad_request", "", "", true},
		{"/runner-configs/pool", `{"datacenters":{}}`, 400, "api.bad_request", "namespace", "", false},
		{"/runner-configs/pool?namespace=", `{"datacenters":{}}`, 400, "api.bad_request", "namespace", "", false},
		{"/runner-configs/pool?namespace=default&x=1", `{"datacenters":{}}`, 400, "api.bad_request", "x", "", false},
		{"/runner-configs/a%2Fb?namespace=default", `{"datacenters":{}}`, 400, "api.bad_request", "runner_name", "", false},
		{"/runner-configs/" + strings.Repeat("n", 129) + "?namespace=default", `{"datacenters":{}}`, 400, "api.bad_request", "runner_name", "", false},
	} {
		req := httptest.NewRequest("PUT", tc.target, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		if tc.unchecked {
			req = openapitest.Unchecked(req)
		}
		w := httptest.NewRecorder()
		c.pub.ServeHTTP(w, req)
		a := answer{w.Code, strings.TrimSpace(w.Body.String())}
		e := parseErr(t, a)
		field, _ := e.Metadata["field"].(string)
		dc, _ := e.Metadata["datacenter"].(string)
		if a.status != tc.status || e.Key() != tc.key || field != tc.field || dc != tc.dcMeta {
			t.Errorf("PUT %s %s: %d %s\nwant %d %s field %q datacenter %q", tc.target, tc.body, a.status, a.body, tc.status, tc.key, tc.field, tc.dcMeta)
		}
	}
	for _, tc := range []struct{ target, field string }{
		{"/runner-configs", "namespace"},
		{"/runner-configs?namespace=", "namespace"},
		{"/runner-configs?namespace=default&variant=other", "variant"},
		{"/runner-configs?namespace=default&limit=-1", "limit"},
		{"/runner-configs?namespace=default&cursor=nocolon", "cursor"},
		{"/runner-configs?namespace=default&runner_name=a%2Fb", "runner_name"},
		{"/runner-configs?namespace=default&runner_names=ok,a/b", "runner_name"},
		{"/runner-configs?namespace=default&x=1", "x"},
	} {
		a := c.do(t, "GET", tc.target, "")
		if e := parseErr(t, a); a.status != 400 || e.Key() != "api.bad_request" || e.Metadata["field"] != tc.field {
			t.Errorf("GET %s: %d %s, want 400 naming %s", tc.target, a.status, a.body, tc.field)
		}
	}
	for _, target := range []string{"/runner-configs/pool", "/runner-configs/a%2Fb?namespace=default", "/runner-configs/pool?namespace=default&x=1"} {
		a := c.do(t, "DELETE", target, "")
		if e := parseErr(t, a); a.status != 400 || e.Key() != "api.bad_request" {
			t.Errorf("DELETE %s: %d %s", target, a.status, a.body)
		}
	}
	// b is served in process, not through the swapped server: check its store too.
	for _, dc := range []string{"a", "b", "c"} {
		if got := c.configsIn(t, dc); !slices.Equal(got, []string{"normal:pool"}) {
			t.Errorf("%s holds %v", dc, got)
		}
	}
}

// TestRunnerConfigsUnknownNamespace: every datacenter says the namespace does not exist, and
// nothing is written.
func TestRunnerConfigsUnknownNamespace(t *testing.T) {
	c := newCluster(t, 5*time.Second)
	for _, tc := range []struct{ method, target, body string }{
		{"GET", "/runner-configs?namespace=nope", ""},
		{"PUT", "/runner-configs/pool?namespace=nope", upsertBody(map[string]string{"b": rcNormal})},
		{"DELETE", "/runner-configs/pool?namespace=nope", ""},
	} {
		a := c.do(t, tc.method, tc.target, tc.body)
		if e := parseErr(t, a); a.status != 404 || e.Key() != "namespace.not_found" {
			t.Errorf("%s %s: %d %s", tc.method, tc.target, a.status, a.body)
		}
	}
	for _, dc := range []string{"a", "b", "c"} {
		if got := c.configsIn(t, dc); len(got) != 0 {
			t.Errorf("%s holds %v", dc, got)
		}
	}
}

// TestRunnerConfigsWhenADatacenterFails: a write fails, naming the datacenter, when one
// datacenter is hung or down, within about one datacenter timeout; the others have written
// theirs, and the same request converges once it is back. A list leaves the failed
// datacenter out, as the Rivet engine does.
func TestRunnerConfigsWhenADatacenterFails(t *testing.T) {
	const timeout = 300 * time.Millisecond
	c := newCluster(t, timeout)
	healthy := c.peers["c"]
	release := make(chan struct{})
	defer close(release)
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the body first: the server notices a client that went away only once it
		// has, and only then ends r.Context().
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	refuse := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		w.Write([]byte(`{"group":"guard","code":"service_unavailable","message":"Service unavailable."}`))
	})
	body := upsertBody(map[string]string{"a": rcNormal, "b": rcNormal, "c": rcNormal})
	for _, mode := range []string{"hung", "refusing"} {
		c.swap("c", map[string]http.Handler{"hung": hang, "refusing": refuse}[mode])
		start := time.Now()
		a := c.do(t, "PUT", "/runner-configs/pool?namespace=default", body)
		took := time.Since(start)
		e := parseErr(t, a)
		wantStatus, wantKey := 502, "datacenter.unreachable"
		if mode == "refusing" {
			wantStatus, wantKey = 503, "guard.service_unavailable"
		}
		if a.status != wantStatus || e.Key() != wantKey || e.Metadata["datacenter"] != "c" {
			t.Errorf("PUT, c %s: %d %s", mode, a.status, a.body)
		}
		if took > timeout+hangMargin {
			t.Errorf("PUT, c %s: answered after %s, timeout %s", mode, took, timeout)
		}
		if a := c.do(t, "DELETE", "/runner-configs/other?namespace=default", ""); a.status != wantStatus || parseErr(t, a).Metadata["datacenter"] != "c" {
			t.Errorf("DELETE, c %s: %d %s", mode, a.status, a.body)
		}
		for _, dc := range []string{"a", "b"} {
			if got := c.configsIn(t, dc); !slices.Equal(got, []string{"normal:pool"}) {
				t.Errorf("c %s: %s holds %v", mode, dc, got)
			}
		}
		if got := c.listConfigs(t, ""); !maps.EqualFunc(got, map[string]map[string]string{"pool": {"a": rcNormalResp, "b": rcNormalResp}}, maps.Equal) {
			t.Errorf("GET, c %s: %v", mode, got)
		}
	}
	c.swap("c", healthy)
	if a := c.do(t, "PUT", "/runner-configs/pool?namespace=default", body); a.status != 200 {
		t.Fatalf("PUT with c back: %d %s", a.status, a.body)
	}
	if got := c.listConfigs(t, ""); len(got["pool"]) != 3 {
		t.Errorf("with c back: %v", got)
	}
	// With a and c down, the list shows what b (served in process) holds.
	c.srvs["a"].Close()
	c.srvs["c"].Close()
	if got := c.listConfigs(t, ""); !maps.EqualFunc(got, map[string]map[string]string{"pool": {"b": rcNormalResp}}, maps.Equal) {
		t.Errorf("GET with a and c down: %v", got)
	}
}
