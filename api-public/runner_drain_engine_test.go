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
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// TestDrainRunnerEngines drains, through the leader's public API, a runner connected to a
// follower datacenter (which resolved its namespace at the leader): the drain is routed by
// the runner id's label, the runner stops at once (no actors), and its socket closes with
// 1000 ws.eviction. Every exchange is checked against openapi.yaml.
func TestDrainRunnerEngines(t *testing.T) {
	const token = "s3cret"
	urls := startEngines(t, token, "eu", "us")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(urls["us"], "http")+"/runners/connect?protocol_version=7&namespace=default&runner_key=k",
		&websocket.DialOptions{Subprotocols: []string{"rivet", "rivet_token." + token}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	b, _ := proto.EncodeToServer(proto.ToServerInit{Name: "pool", Version: 1, TotalSlots: 2}, 7)
	if err := ws.Write(ctx, websocket.MessageBinary, b); err != nil {
		t.Fatal(err)
	}
	_, b, err = ws.Read(ctx)
	if err != nil {
		t.Fatalf("no init from the follower: %v", err)
	}
	m, err := proto.DecodeToClient(b, 7)
	if err != nil {
		t.Fatal(err)
	}
	rid := m.(proto.ToClientInit).RunnerID

	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: openapitest.NewValidatingTransport(t, transport), Timeout: 10 * time.Second}
	eu, err := client.New(urls["eu"], client.WithToken(token), client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	r, err := eu.Runners().Drain(ctx, rid)
	if err != nil || r.RunnerId != rid || r.Datacenter != "us" || r.DrainTs == nil || r.StopTs == nil {
		t.Fatalf("Drain = %+v, %v; want the us runner drained and stopped", r, err)
	}
	for {
		if _, _, err = ws.Read(ctx); err != nil {
			break
		}
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusNormalClosure || !strings.HasPrefix(ce.Reason, "ws.eviction#") {
		t.Fatalf("runner socket ended with %v, want 1000 ws.eviction", err)
	}
	page, err := eu.Runners().List(ctx, client.RunnerListOptions{IncludeStopped: true})
	if err != nil || len(page.Items) != 1 || page.Items[0].StopTs == nil {
		t.Fatalf("list after drain = %+v, %v", page, err)
	}
	if _, err := eu.Runners().Drain(ctx, strings.Repeat("z", 30)); err == nil {
		t.Fatal("a drain of an id of no datacenter succeeded")
	}
}
