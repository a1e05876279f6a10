package envoy

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	proto "github.com/berthhq/berth/sdk/protocol/envoy"
	"github.com/berthhq/berth/tests/internal/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// Fast envoy timings: pings every 200 ms, an envoy lost after 1 s.
var fast = []string{
	"BERTH__pegboard__envoy_update_ping_interval=200",
	"BERTH__pegboard__envoy_ping_timeout=1000",
	"BERTH__pegboard__envoy_lost_threshold=1000",
	"BERTH__pegboard__envoy_eligible_threshold=1000",
}

type envoySock struct {
	t *testing.T
	c *websocket.Conn
}

// dial opens an envoy socket on path with envoy key key and reads ToEnvoyInit.
func dial(t *testing.T, e *harness.Engine, path, key string, protocols ...string) (*envoySock, proto.ToEnvoyInit) {
	t.Helper()
	q := url.Values{"protocol_version": {"8"}, "namespace": {"default"}, "pool_name": {"pool"}, "envoy_key": {key}, "version": {"2"}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.URL, "http")+path+"?"+q.Encode(),
		&websocket.DialOptions{Subprotocols: append([]string{"rivet"}, protocols...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	c.SetReadLimit(4 << 20) // streamed bodies come in frames of 64 KiB
	s := &envoySock{t: t, c: c}
	m, err := s.recv()
	if err != nil {
		t.Fatal(err)
	}
	init, ok := m.(proto.ToEnvoyInit)
	if !ok {
		t.Fatalf("first message %#v, want ToEnvoyInit", m)
	}
	md := `{"node":"` + key + `"}`
	s.send(proto.ToRivetMetadata{Metadata: &md})
	return s, init
}

func (s *envoySock) send(m proto.ToRivet) {
	s.t.Helper()
	b, err := proto.EncodeToRivet(m, 8)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.c.Write(context.Background(), websocket.MessageBinary, b); err != nil {
		s.t.Fatal(err)
	}
}

func (s *envoySock) recv() (proto.ToEnvoy, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := s.c.Read(ctx)
	if err != nil {
		return nil, err
	}
	return proto.DecodeToEnvoy(b, 8)
}

// answer answers pings (after delay) until the socket closes, then reports the close.
func (s *envoySock) answer(delay time.Duration) <-chan websocket.CloseError {
	out := make(chan websocket.CloseError, 1)
	go func() {
		for {
			m, err := s.recv()
			if err != nil {
				var ce websocket.CloseError
				errors.As(err, &ce)
				out <- ce
				return
			}
			if p, ok := m.(proto.ToEnvoyPing); ok {
				time.Sleep(delay)
				b, _ := proto.EncodeToRivet(proto.ToRivetPong{Ts: p.Ts}, 8)
				_ = s.c.Write(context.Background(), websocket.MessageBinary, b)
			}
		}
	}()
	return out
}

func closedWith(t *testing.T, ch <-chan websocket.CloseError, code websocket.StatusCode, key string) {
	t.Helper()
	select {
	case ce := <-ch:
		if ce.Code != code || !strings.HasPrefix(ce.Reason, key+"#") {
			t.Fatalf("closed with %d %q, want %d %s#<ray>", ce.Code, ce.Reason, code, key)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("not closed (want %s)", key)
	}
}

type envoy struct {
	EnvoyKey   string         `json:"envoy_key"`
	PoolName   string         `json:"pool_name"`
	Version    uint32         `json:"version"`
	LastRtt    uint32         `json:"last_rtt"`
	LastPingTs int64          `json:"last_ping_ts"`
	CreateTs   int64          `json:"create_ts"`
	StopTs     *int64         `json:"stop_ts"`
	Metadata   map[string]any `json:"metadata"`
	Datacenter string         `json:"datacenter"`
	Slots      uint64         `json:"slots"`
}

func list(t *testing.T, e *harness.Engine) map[string]envoy {
	t.Helper()
	var out struct{ Envoys []envoy }
	e.GetJSON(t, "/envoys?namespace=default", &out)
	m := map[string]envoy{}
	for _, v := range out.Envoys {
		m[v.EnvoyKey] = v
	}
	return m
}

func eventually(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestEnvoySocket(t *testing.T) {
	dir := t.TempDir()
	e := harness.NewEngine(t, harness.Settings{Env: fast}, "file://"+filepath.Join(dir, "db"))
	e.Start()
	e.CallJSON(t, "PUT", "/runner-configs/pool?namespace=default", map[string]any{
		"datacenters": map[string]any{"default": map[string]any{"normal": map[string]any{}}},
	}, nil)

	a, init := dial(t, e, "/envoys/connect", "envoy-a")
	if init.Metadata.EnvoyLostThreshold != 1000 || init.Metadata.MaxResponsePayloadSize != 20<<20 {
		t.Fatalf("init %+v", init.Metadata)
	}
	aClosed := a.answer(30 * time.Millisecond)
	// Target routing: any path of the guard port with rivet_target.envoy.
	b, _ := dial(t, e, "/", "envoy-b", "rivet_target.envoy")
	bClosed := b.answer(0)

	eventually(t, "both envoys listed with an RTT", 10*time.Second, func() bool {
		l := list(t, e)
		return len(l) == 2 && l["envoy-a"].LastRtt >= 30
	})
	got := list(t, e)["envoy-a"]
	if got.PoolName != "pool" || got.Version != 2 || got.Datacenter != "default" || got.StopTs != nil ||
		got.Metadata["node"] != "envoy-a" || got.LastPingTs < got.CreateTs {
		t.Fatalf("envoy-a %+v", got)
	}

	// A second socket for envoy-a evicts the first; the envoy stays, created when it was.
	a2, _ := dial(t, e, "/envoys/connect/", "envoy-a")
	closedWith(t, aClosed, websocket.StatusNormalClosure, "ws.eviction")
	a2.answer(0)
	time.Sleep(300 * time.Millisecond)
	if l := list(t, e); l["envoy-a"].CreateTs != got.CreateTs {
		t.Fatalf("after eviction %+v", l)
	}

	// Stopping: closed with ws.eviction, and it leaves the list.
	b.send(proto.ToRivetStopping{})
	closedWith(t, bClosed, websocket.StatusNormalClosure, "ws.eviction")
	eventually(t, "envoy-b gone", 5*time.Second, func() bool { _, ok := list(t, e)["envoy-b"]; return !ok })

	// The node dies with envoy-a's socket: after a restart on the same store, the expiry loop
	// expires it once it has not pinged for the lost threshold (counted from the restart).
	// (No disconnect ran: only the loop can expire it.)
	e.Kill()
	e.Start()
	eventually(t, "envoy-a expired", 10*time.Second, func() bool { _, ok := list(t, e)["envoy-a"]; return !ok })
}
