package apipublic_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/api-public/openapitest"
	"github.com/berthhq/berth/sdk/client"
	proto "github.com/berthhq/berth/sdk/protocol/envoy"
)

// TestDrainEnvoyEngines drains, through the leader's public API (berth's envoy drain), an
// envoy connected to a follower datacenter: every datacenter is asked, the one that has the
// envoy drains it (stop_ts), and, with no actor on it, its socket closes with 1000
// ws.eviction. An unknown key is 404 envoy.not_found.
// Every exchange is checked against openapi.yaml.
func TestDrainEnvoyEngines(t *testing.T) {
	const token = "s3cret"
	urls := startEngines(t, token, "eu", "us")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: openapitest.NewValidatingTransport(t, transport), Timeout: 10 * time.Second}
	eu, err := client.New(urls["eu"], client.WithToken(token), client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	// An envoy's pool needs a runner config in its datacenter.
	if _, err := eu.RunnerConfigs().Upsert(ctx, "pool", map[string]client.RunnerConfig{"us": {Normal: &client.RunnerConfigNormal{}}}); err != nil {
		t.Fatal(err)
	}
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(urls["us"], "http")+"/envoys/connect?protocol_version=8&namespace=default&pool_name=pool&envoy_key=env-1&version=1",
		&websocket.DialOptions{Subprotocols: []string{"rivet", "rivet_token." + token}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	_, b, err := ws.Read(ctx)
	if err != nil {
		t.Fatalf("no init from the follower: %v", err)
	}
	if m, err := proto.DecodeToEnvoy(b, 8); err != nil {
		t.Fatal(err)
	} else if _, ok := m.(proto.ToEnvoyInit); !ok {
		t.Fatalf("first message %#v, want ToEnvoyInit", m)
	}

	// The envoy registers once it has sent its metadata: until then it is not listed.
	md := `{}`
	b, err = proto.EncodeToRivet(proto.ToRivetMetadata{Metadata: &md}, 8)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Write(ctx, websocket.MessageBinary, b); err != nil {
		t.Fatal(err)
	}
	for tick := time.NewTicker(20 * time.Millisecond); ; <-tick.C {
		pg, err := eu.Envoys().List(ctx, client.EnvoyListOptions{EnvoyKeys: []string{"env-1"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(pg.Items) == 1 {
			tick.Stop()
			break
		}
	}
	e, err := eu.Envoys().Drain(ctx, "env-1")
	if err != nil || e.EnvoyKey != "env-1" || e.Datacenter != "us" || e.StopTs == nil {
		t.Fatalf("Drain = %+v, %v; want the us envoy drained", e, err)
	}
	for {
		if _, _, err = ws.Read(ctx); err != nil {
			break
		}
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusNormalClosure || !strings.HasPrefix(ce.Reason, "ws.eviction") {
		t.Fatalf("envoy socket ended with %v, want 1000 ws.eviction", err)
	}
	if _, err := eu.Envoys().Drain(ctx, "nope-envoy"); !errors.Is(err, &client.APIError{Group: "envoy", Code: "not_found"}) {
		t.Fatalf("drain of an unknown envoy: %v, want envoy.not_found", err)
	}
}
