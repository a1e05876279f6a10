package envoy

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	proto "github.com/berthhq/berth/sdk/protocol/envoy"
	"github.com/berthhq/berth/tests/internal/harness"
)

// Two engine nodes share one store. An envoy reconnects to node 2 while a ping from node 1
// to its older socket is still unanswered; when the older socket's pong arrives, node 1
// refuses it as stale (the newer connection holds the envoy) and evicts the socket, and the
// envoy stays registered with the newer connection.
func TestEnvoyFencingRaceAcrossNodes(t *testing.T) {
	base := os.Getenv("BERTH_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("needs a PostgreSQL store shared by two engines: set BERTH_TEST_POSTGRES_URL (source .ci/postgres.sh)")
	}
	// Pings every 200 ms, but a generous pong timeout: the held pong must not time out.
	timings := []string{
		"BERTH__pegboard__envoy_update_ping_interval=200",
		"BERTH__pegboard__envoy_ping_timeout=20000",
		"BERTH__pegboard__envoy_lost_threshold=20000",
		"BERTH__pegboard__envoy_eligible_threshold=20000",
	}
	store := harness.SharedStore(t, base)
	n1 := harness.NewEngine(t, harness.Settings{Env: timings}, store)
	n1.Start()
	n2 := harness.NewEngine(t, harness.Settings{Env: timings}, store)
	n2.Start()
	n1.CallJSON(t, "PUT", "/runner-configs/pool?namespace=default", map[string]any{
		"datacenters": map[string]any{"default": map[string]any{"normal": map[string]any{}}},
	}, nil)

	old, _ := dial(t, n1, "/envoys/connect", "envoy-x")
	held := nextPing(t, old) // registered on node 1; its pong is held back

	newer, _ := dial(t, n2, "/envoys/connect", "envoy-x")
	nextPing(t, newer) // node 2 pings once the newer connection is registered
	newerClosed := newer.answer(0)

	old.send(proto.ToRivetPong{Ts: held.Ts})
	for {
		_, err := old.recv()
		if err == nil {
			continue // pings sent before the pong was refused
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusNormalClosure || !strings.HasPrefix(ce.Reason, "ws.eviction#") {
			t.Fatalf("older socket ended with %v, want 1000 ws.eviction", err)
		}
		break
	}
	select {
	case ce := <-newerClosed:
		t.Fatalf("the newer socket was closed too: %d %q", ce.Code, ce.Reason)
	case <-time.After(time.Second): // a few of its pings answered and recorded meanwhile
	}
	got, ok := list(t, n2)["envoy-x"]
	if !ok || got.StopTs != nil {
		t.Fatalf("envoy-x after the race: %+v, listed %v; want it registered", got, ok)
	}
	if since := time.Now().UnixMilli() - got.LastPingTs; since > 5000 {
		t.Fatalf("envoy-x last ping %d ms ago: the newer socket's pongs are not recorded", since)
	}
}

// nextPing reads s until the engine pings it.
func nextPing(t *testing.T, s *envoySock) proto.ToEnvoyPing {
	t.Helper()
	for {
		m, err := s.recv()
		if err != nil {
			t.Fatalf("waiting for a ping: %v", err)
		}
		if p, ok := m.(proto.ToEnvoyPing); ok {
			return p
		}
	}
}
