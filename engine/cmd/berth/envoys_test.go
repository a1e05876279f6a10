package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/sdk/client"
	proto "github.com/berthhq/berth/sdk/protocol/envoy"
)

// connectEnvoy opens an envoy socket for key in pool of namespace default and waits until
// the envoy is listed (it registers once it has sent its metadata).
func connectEnvoy(t *testing.T, url, pool, key string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/envoys/connect?protocol_version=8&namespace=default&pool_name="+pool+"&envoy_key="+key+"&version=1",
		&websocket.DialOptions{Subprotocols: []string{"rivet"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.CloseNow() })
	if _, _, err := ws.Read(ctx); err != nil { // ToEnvoyInit
		t.Fatal(err)
	}
	md := `{}`
	b, err := proto.EncodeToRivet(proto.ToRivetMetadata{Metadata: &md}, 8)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Write(ctx, websocket.MessageBinary, b); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		p, err := cl.Envoys().List(ctx, client.EnvoyListOptions{EnvoyKeys: []string{key}})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) == 1 {
			return ws
		}
		<-tick.C
	}
}

// envoys drain: -q prints the key, --json the drained envoy with its state; --wait returns
// once no actor is left; an unknown envoy is an error naming it.
func TestEnvoysDrain(t *testing.T) {
	url := startEngine(t, "")
	env := []string{"BERTH_ENDPOINT=" + url}
	withRunnerConfig(t, url, "default", "epool")
	connectEnvoy(t, url, "epool", "env-1")
	connectEnvoy(t, url, "epool", "env-2")

	if out := ok(t, env, "envoys", "drain", "env-1", "-q"); strings.TrimSpace(out.out) != "env-1" {
		t.Errorf("drain -q printed %q, want the key", out.out)
	}
	out := ok(t, env, "envoys", "drain", "env-2", "--wait", "--json", "--timeout", waitFor.String())
	got := decodeJSON[envoyJSON](t, out.out)
	if got.EnvoyKey != "env-2" || got.StopTs == nil || got.State != "stopped" || got.Slots != 0 {
		t.Errorf("drain --wait --json: %+v", got)
	}
	if r := berth(t, env, "envoys", "drain", "nope-envoy"); r.code == 0 || !strings.Contains(r.err, "envoy.not_found") {
		t.Errorf("drain of an unknown envoy: exit %d, stderr %q", r.code, r.err)
	}
}
