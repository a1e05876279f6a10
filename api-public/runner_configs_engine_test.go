package apipublic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/api-public/openapitest"
	"github.com/berthhq/berth/engine"
	"github.com/berthhq/berth/engine/config"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/sdk/client"
)

// startEngines starts one engine per name, in process, each with its own in-memory store,
// on loopback ports chosen at random, under one topology: the first is the leader, labels
// follow the order. It returns their public URLs by name.
func startEngines(t *testing.T, token string, names ...string) map[string]string {
	t.Helper()
	for attempt := 0; ; attempt++ {
		urls, err := tryStartEngines(t, token, names)
		if err == nil {
			return urls
		}
		// A port picked a moment ago may have been taken since: pick again, a few times.
		if attempt == 4 || !strings.Contains(err.Error(), "listen on") {
			t.Fatal(err)
		}
	}
}

func tryStartEngines(t *testing.T, token string, names []string) (map[string]string, error) {
	ports, err := freePorts(2 * len(names))
	if err != nil {
		return nil, err
	}
	topo := config.Topology{Datacenters: map[string]config.Datacenter{}}
	urls := map[string]string{}
	for i, name := range names {
		urls[name] = fmt.Sprintf("http://127.0.0.1:%d", ports[2*i])
		topo.Datacenters[name] = config.Datacenter{
			DatacenterLabel: uint16(i + 1), IsLeader: i == 0, PublicURL: urls[name],
			PeerURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]), ProxyURL: urls[name],
		}
	}
	var started []*engine.Engine
	stopAll := func() {
		for _, e := range started {
			// Over 5 s: net/http's Shutdown waits up to 5 s for a connection that was
			// opened but never carried a request (an http.Transport's spare dial).
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := e.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			cancel()
		}
	}
	for i := range names {
		cfg := config.Default()
		cfg.Database.URL = "mem://"
		cfg.Guard.Host, cfg.Guard.Port = "127.0.0.1", uint16(ports[2*i])
		cfg.APIPeer.Host, cfg.APIPeer.Port = "127.0.0.1", uint16(ports[2*i+1])
		cfg.Metrics.Host, cfg.Metrics.Port = "127.0.0.1", 0
		cfg.APIPublic.DatacenterTimeoutMs = 2000
		cfg.Auth.AdminToken = token
		cfg.Topology = topo
		cfg.Topology.DatacenterLabel = uint16(i + 1)
		e, err := engine.Start(context.Background(), engine.Options{Config: cfg,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Build: apihttp.BuildInfo{Version: "test"}})
		if err != nil {
			stopAll()
			return nil, err
		}
		started = append(started, e)
	}
	t.Cleanup(stopAll)
	return urls, nil
}

func freePorts(n int) ([]int, error) {
	var out []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close() // held until all are chosen, so they differ
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// TestRunnerConfigsEngines runs the runner-config endpoints on three engines started as the
// engine starts in production (config, default namespace at the leader, api-peer over HTTP
// between them, the local datacenter in process, an admin token), through the Go SDK and
// raw HTTP, every exchange checked against openapi.yaml.
func TestRunnerConfigsEngines(t *testing.T) {
	const token = "s3cret"
	urls := startEngines(t, token, "eu", "us", "ap")
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: openapitest.NewValidatingTransport(t, transport), Timeout: 30 * time.Second}
	ctx := context.Background()
	sdk := func(dc string) *client.Client {
		c, err := client.New(urls[dc], client.WithToken(token), client.WithHTTPClient(hc))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	// Written through a follower: us fans out to eu (the leader) and ap.
	lifespan, grace := int32(3600), int32(60)
	changed, err := sdk("us").RunnerConfigs().Upsert(ctx, "pool", map[string]client.RunnerConfig{
		"eu": {Serverless: &client.RunnerConfigServerless{Url: "https://app.example/api", RequestLifespan: lifespan,
			DrainGracePeriod: &grace, Headers: &map[string]string{"x-k": "v"}}, Metadata: map[string]any{"team": "games"}},
		"ap": {Normal: &client.RunnerConfigNormal{}},
	})
	if err != nil || !changed {
		t.Fatalf("upsert: %v, %v", changed, err)
	}
	// Read through another datacenter: the same view everywhere.
	for _, dc := range []string{"eu", "ap"} {
		all, err := sdk(dc).RunnerConfigs().List(ctx, client.RunnerConfigListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s := all["pool"]["eu"].Serverless
		n := all["pool"]["ap"].Normal
		if len(all) != 1 || len(all["pool"]) != 2 || s == nil || s.Url != "https://app.example/api" || *s.MaxRunners != 1000 ||
			*s.DrainGracePeriod != 60 || n == nil || !*n.DrainOnVersionUpgrade || *n.ActorEvictionRate != 1 {
			b, _ := json.Marshal(all)
			t.Errorf("list from %s: %s", dc, b)
		}
	}
	only, err := sdk("eu").RunnerConfigs().List(ctx, client.RunnerConfigListOptions{Variant: client.VariantNormal})
	if err != nil || len(only["pool"]) != 1 || only["pool"]["ap"].Normal == nil {
		t.Errorf("normal only: %+v, %v", only, err)
	}

	// Raw HTTP: the token is required, an unknown datacenter is refused.
	req := func(method, dc, path, body, tok string) (int, string) {
		t.Helper()
		r, err := http.NewRequest(method, urls[dc]+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body == "" {
			r.Body, r.GetBody, r.ContentLength = http.NoBody, nil, 0
		} else {
			r.Header.Set("Content-Type", "application/json")
		}
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := hc.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	for _, tc := range []struct {
		method, path, body, tok string
		status                  int
		code                    string
	}{
		{"GET", "/runner-configs?namespace=default", "", "", 401, "unauthorized"},
		{"PUT", "/runner-configs/pool?namespace=default", `{"datacenters":{}}`, "wrong", 403, "forbidden"},
		{"PUT", "/runner-configs/pool?namespace=default", `{"datacenters":{"mars":{"normal":{}}}}`, token, 404, "not_found"},
		{"DELETE", "/runner-configs/pool?namespace=nope", "", token, 404, "not_found"},
	} {
		status, body := req(tc.method, "ap", tc.path, tc.body, tc.tok)
		if status != tc.status || !strings.Contains(body, `"code":"`+tc.code+`"`) {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, status, body)
		}
	}
	if status, body := req("PUT", "eu", "/runner-configs/pool?namespace=default", `{"datacenters":{"us":{"normal":{}}}}`, token); status != 200 || body != `{"endpoint_config_changed":true}` {
		t.Errorf("move to us: %d %s", status, body)
	}
	if status, body := req("GET", "ap", "/runner-configs?namespace=default", "", token); status != 200 ||
		body != `{"runner_configs":{"pool":{"datacenters":{"us":{"normal":{"drain_on_version_upgrade":true,"actor_eviction_delay":0,"actor_eviction_period":0,"actor_eviction_rate":1},"protocol_version":null}}}},"pagination":{"cursor":null}}` {
		t.Errorf("after the move: %d %s", status, body)
	}
	if err := sdk("ap").RunnerConfigs().Delete(ctx, "pool"); err != nil {
		t.Fatal(err)
	}
	// Deleting what is gone is not an error.
	if err := sdk("ap").RunnerConfigs().Delete(ctx, "pool"); err != nil {
		t.Errorf("second delete: %v", err)
	}
	all, err := sdk("us").RunnerConfigs().List(ctx, client.RunnerConfigListOptions{})
	if err != nil || len(all) != 0 {
		t.Errorf("after delete: %+v, %v", all, err)
	}
}
