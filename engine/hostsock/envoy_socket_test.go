package hostsock_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/hostsock"
	"github.com/berthhq/berth/engine/hostsock/hostsocktest"
	"github.com/berthhq/berth/keys"
	openvoy "github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/envoy"
)

// The engine speaks first (ToEnvoyInit with the thresholds), then registers the envoy with
// every field of the connect URL and the metadata, in the active list and the load-balancer
// index; a reconnect keeps create_ts and moves the connection id.
func TestRegistration(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{Envoy: hostsock.Timing{LostThreshold: 12000 * time.Millisecond}, ActorStopThreshold: 34000 * time.Millisecond})
	before := time.Now().UnixMilli()
	s, init := connectEnvoy(t, e, e.hs, "envoy-1")
	want := proto.ProtocolMetadata{EnvoyLostThreshold: 12000, ActorStopThreshold: 34000, MaxResponsePayloadSize: 20 << 20}
	if init.Metadata != want {
		t.Fatalf("init %+v, want %+v", init.Metadata, want)
	}
	// A ping comes at once, before any interval.
	nextEnvoy[proto.ToEnvoyPing](s)
	got := get(t, e, "envoy-1")
	if got.PoolName != pool || got.Version != 3 || got.NamespaceID != e.ns || got.EnvoyKey != "envoy-1" ||
		got.CreateTs < before || got.LastPingTs != got.CreateTs || got.LastConnectedTs == nil || *got.LastConnectedTs != got.CreateTs ||
		got.StopTs != nil || string(got.Metadata) != `{"host":"a"}` || got.Slots != 0 {
		t.Fatalf("registered %+v", got)
	}
	if a := active(t, e); !slices.Equal(a, []string{"envoy-1"}) {
		t.Fatalf("active %v", a)
	}
	if lb := lbEntries(t, e); len(lb) != 1 || lb[0].EnvoyKey != "envoy-1" || lb[0].Version != 3 || lb[0].LastPingTs != got.LastPingTs {
		t.Fatalf("load-balancer index %+v", lb)
	}
	pv, _ := read(t, e, keysProtocolVersion(e, "envoy-1"))
	if pv != 8 {
		t.Fatalf("protocol version %d", pv)
	}
	first := envoyConnID(t, e, "envoy-1")

	// The same key again (this node): the old socket is evicted, create_ts kept.
	time.Sleep(5 * time.Millisecond)
	s2, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	s.closed(websocket.StatusNormalClosure, "ws.eviction")
	again := get(t, e, "envoy-1")
	if again.CreateTs != got.CreateTs || *again.LastConnectedTs <= got.CreateTs || envoyConnID(t, e, "envoy-1") == first {
		t.Fatalf("after reconnect %+v (first %+v)", again, got)
	}
	if lb := lbEntries(t, e); len(lb) != 1 {
		t.Fatalf("load-balancer index after reconnect %+v", lb)
	}
	// The evicted socket's end does not expire the envoy the new one holds.
	nextEnvoy[proto.ToEnvoyPing](s2)
	if expired(t, e, "envoy-1") || !slices.Equal(active(t, e), []string{"envoy-1"}) {
		t.Fatal("the evicted socket expired the envoy")
	}
}

func TestEnvoyBadRequests(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{})
	with := func(k, v string) url.Values {
		q := envoyQuery("envoy-1")
		if v == "<del>" {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
		return q
	}
	for _, tc := range []struct {
		name string
		q    url.Values
		want string
	}{
		{"no protocol version", with("protocol_version", "<del>"), "ws.invalid_request"},
		{"protocol version 7", with("protocol_version", "7"), "ws.invalid_request"},
		{"protocol version text", with("protocol_version", "v8"), "ws.invalid_request"},
		{"no namespace", with("namespace", "<del>"), "ws.invalid_request"},
		{"unknown namespace", with("namespace", "nope"), "namespace.not_found"},
		{"no pool", with("pool_name", "<del>"), "ws.invalid_request"},
		{"pool too long", with("pool_name", strings.Repeat("p", 129)), "ws.invalid_request"},
		{"no envoy key", with("envoy_key", "<del>"), "ws.invalid_request"},
		{"envoy key too short", with("envoy_key", "ab"), "ws.invalid_request"},
		{"envoy key too long", with("envoy_key", strings.Repeat("k", 129)), "ws.invalid_request"},
		{"envoy key leading dash", with("envoy_key", "-abc"), "ws.invalid_request"},
		{"envoy key trailing dash", with("envoy_key", "abc-"), "ws.invalid_request"},
		{"envoy key space", with("envoy_key", "a bc"), "ws.invalid_request"},
		{"no version", with("version", "<del>"), "ws.invalid_request"},
		{"version over u32", with("version", "4294967296"), "ws.invalid_request"},
		{"pool without runner config", with("pool_name", "other"), "ws.no_runner_config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, err := dialEnvoy(t, wsURL(e.hs, tc.q))
			if err != nil {
				t.Fatal(err)
			}
			// Closed before ToEnvoyInit: the first read is the close.
			s.closed(websocket.StatusInternalError, tc.want)
		})
	}
	// Limits that pass: a 3- and a 128-character key, a 128-byte pool name (no config: the
	// validation passed and the config check answered).
	for _, q := range []url.Values{with("envoy_key", "a_b"), with("envoy_key", strings.Repeat("k", 128)), with("pool_name", strings.Repeat("p", 128))} {
		s, _, err := dialEnvoy(t, wsURL(e.hs, q))
		if err != nil {
			t.Fatal(err)
		}
		if q.Get("pool_name") != pool {
			s.closed(websocket.StatusInternalError, "ws.no_runner_config")
			continue
		}
		nextEnvoy[proto.ToEnvoyInit](s)
	}
	if active(t, e) != nil {
		t.Fatalf("registered %v without metadata", active(t, e))
	}
}

func TestFirstFrame(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{InitTimeout: 300 * time.Millisecond})
	open := func() *sock {
		s, _, err := dialEnvoy(t, wsURL(e.hs, envoyQuery("envoy-1")))
		if err != nil {
			t.Fatal(err)
		}
		nextEnvoy[proto.ToEnvoyInit](s)
		return s
	}
	t.Run("timeout", func(t *testing.T) {
		open().closed(websocket.StatusInternalError, "ws.timed_out_waiting_for_init")
	})
	t.Run("text", func(t *testing.T) {
		s := open()
		_ = s.c.Write(context.Background(), websocket.MessageText, []byte("hi"))
		s.closed(websocket.StatusInternalError, "ws.invalid_initial_packet")
	})
	t.Run("garbage", func(t *testing.T) {
		s := open()
		_ = s.c.Write(context.Background(), websocket.MessageBinary, []byte{0xff, 1, 2})
		s.closed(websocket.StatusInternalError, "ws.invalid_packet")
	})
	t.Run("bad metadata", func(t *testing.T) {
		s := open()
		md := `[1,2]`
		s.send(proto.ToRivetMetadata{Metadata: &md})
		s.closed(websocket.StatusInternalError, "ws.invalid_packet")
	})
	if active(t, e) != nil {
		t.Fatalf("registered %v", active(t, e))
	}
	// Another first message registers the envoy without metadata, and is handled.
	s := open()
	s.send(proto.ToRivetKvRequest{ActorID: "x", RequestID: 7, Data: proto.KvDropRequest{}})
	if r := nextEnvoy[proto.ToEnvoyKvResponse](s); r.RequestID != 7 {
		t.Fatalf("kv response %+v", r)
	}
	if got := get(t, e, "envoy-1"); got.Metadata != nil || got.PoolName != pool {
		t.Fatalf("registered %+v", got)
	}
}

func TestEnvoyAuth(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{AdminToken: "secret"})
	u := wsURL(e.hs, envoyQuery("envoy-1"))
	// A refused token closes the socket at once (1008 and the error's key).
	for _, tc := range []struct {
		protocols []string
		key       string
	}{
		{[]string{"rivet"}, "api.unauthorized#"},
		{[]string{"rivet", "rivet_token.wrong"}, "api.forbidden#"},
	} {
		s, _, err := dialEnvoy(t, u, tc.protocols...)
		if err != nil {
			t.Fatalf("%v: %v; want the socket accepted, then closed", tc.protocols, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _, err = s.c.Read(ctx)
		cancel()
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != 1008 || !strings.HasPrefix(ce.Reason, tc.key) {
			t.Fatalf("%v: %v; want close 1008 %s<ray>", tc.protocols, err, tc.key)
		}
	}
	s, _, err := dialEnvoy(t, u, "rivet", "rivet_token.secret")
	if err != nil {
		t.Fatal(err)
	}
	if s.c.Subprotocol() != "rivet" {
		t.Fatalf("subprotocol %q", s.c.Subprotocol())
	}
	nextEnvoy[proto.ToEnvoyInit](s)
}

// Target routing: any path with the rivet_target.envoy subprotocol reaches the envoy socket;
// rivet_target.runner reaches the runner socket (which refuses an envoy's URL, with no
// runner_key), and another target the next handler.
func TestEnvoyTargetRouting(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{})
	u := "ws" + strings.TrimPrefix(e.hs.URL, "http") + "/elsewhere?" + envoyQuery("envoy-1").Encode()
	s, _, err := dialEnvoy(t, u, "rivet", "rivet_target.envoy")
	if err != nil {
		t.Fatal(err)
	}
	nextEnvoy[proto.ToEnvoyInit](s)
	r, _, err := dialEnvoy(t, u, "rivet", "rivet_target.runner")
	if err != nil {
		t.Fatal(err)
	}
	r.closed(websocket.StatusInternalError, "ws.invalid_url")
	if _, resp, err := dialEnvoy(t, u, "rivet", "rivet_target.actor"); err == nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("actor target: %v, want 404 from the next handler", err)
	}
}

// Pongs record the last ping, the RTT in milliseconds and move the load-balancer entry to
// the new ping time.
func TestPingsRecordRTT(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{Envoy: hostsock.Timing{PingInterval: 100 * time.Millisecond}})
	s, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	reg := get(t, e, "envoy-1")
	for range 3 {
		p := nextEnvoy[proto.ToEnvoyPing](s)
		time.Sleep(60 * time.Millisecond)
		s.send(proto.ToRivetPong{Ts: p.Ts})
	}
	// The pongs are recorded in order, each in its own batch at the earliest: read the envoy
	// and its index entry until the last pong's are seen together.
	var got openvoy.Envoy
	var lb []keys.EnvoyLoadBalancerIdxKey
	eventually(t, "the pongs' RTT, last ping and index entry recorded", func() bool {
		got, lb = get(t, e, "envoy-1"), lbEntries(t, e)
		return got.LastRtt >= 60 && len(lb) == 1 && lb[0].LastPingTs == got.LastPingTs
	})
	if got.LastRtt > 5000 || got.LastPingTs <= reg.LastPingTs {
		t.Fatalf("after pongs %+v (registered %+v)", got, reg)
	}
}

// A socket that answers no ping for the ping timeout is closed with ws.timed_out, and its
// envoy expires (out of the index and the active list).
func TestPongTimeout(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{Envoy: hostsock.Timing{PingInterval: 50 * time.Millisecond, PingTimeout: 300 * time.Millisecond}})
	s, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	s.closed(websocket.StatusInternalError, "ws.timed_out")
	eventually(t, "expiry", func() bool { return expired(t, e, "envoy-1") })
	if lb, a := lbEntries(t, e), active(t, e); lb != nil || a != nil {
		t.Fatalf("after expiry: index %+v, active %v", lb, a)
	}
}

// The pong of an envoy that was expired meanwhile (by another node's loop) is refused with
// its own outcome: the socket closes with 1011 envoy.expired, and the envoy reconnects.
func TestExpiredEnvoyPong(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{Envoy: hostsock.Timing{PingInterval: 100 * time.Millisecond}})
	s, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	p := nextEnvoy[proto.ToEnvoyPing](s)
	if _, err := udb.Transact(context.Background(), e.db, func(tx udb.Transaction) (openvoy.ExpireOutput, error) {
		return openvoy.Expire(context.Background(), tx, openvoy.ExpireInput{Namespace: e.ns, EnvoyKey: "envoy-1", NowMs: time.Now().UnixMilli()})
	}); err != nil {
		t.Fatal(err)
	}
	s.send(proto.ToRivetPong{Ts: p.Ts})
	s.closed(websocket.StatusInternalError, "envoy.expired")
	// Reconnecting registers it again.
	s2, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	nextEnvoy[proto.ToEnvoyPing](s2)
	if expired(t, e, "envoy-1") || len(lbEntries(t, e)) != 1 {
		t.Fatal("the reconnected envoy is not back")
	}
}

// Reconnect while an old ping is in flight: the envoy registers again on another node while
// its old socket still has a ping to answer. The old socket's pong is refused as stale (it
// writes nothing) and that socket is evicted with 1000 ws.eviction; the new registration
// stands, and the old socket's end does not expire the envoy.
func TestReconnectWhilePingInFlight(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{Envoy: hostsock.Timing{PingInterval: time.Hour}})
	_, hs2 := serveEnvoys(t, e.db, hostsocktest.Config{Envoy: hostsock.Timing{PingInterval: time.Hour}})
	old, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	p := nextEnvoy[proto.ToEnvoyPing](old) // in flight: not answered yet
	oldConn := envoyConnID(t, e, "envoy-1")

	s2, _ := connectEnvoy(t, e, hs2, "envoy-1")
	newConn := envoyConnID(t, e, "envoy-1")
	p2 := nextEnvoy[proto.ToEnvoyPing](s2)
	// An RTT of at least 5 ms tells the recorded pong from the registration (RTT 0), which
	// can fall in the same millisecond as the ping.
	s2.send(proto.ToRivetPong{Ts: p2.Ts - 5})
	eventually(t, "the new socket's ping", func() bool { return get(t, e, "envoy-1").LastRtt >= 5 })
	fresh := get(t, e, "envoy-1")

	time.Sleep(20 * time.Millisecond)
	old.send(proto.ToRivetPong{Ts: p.Ts - 500}) // an RTT of at least 500 ms, were it recorded
	old.closed(websocket.StatusNormalClosure, "ws.eviction")

	if c := envoyConnID(t, e, "envoy-1"); c != newConn || c == oldConn {
		t.Fatalf("connection %v, want the new %v", c, newConn)
	}
	got := get(t, e, "envoy-1")
	if got.LastPingTs != fresh.LastPingTs || got.LastRtt != fresh.LastRtt {
		t.Fatalf("the stale pong was recorded: %+v, before %+v", got, fresh)
	}
	time.Sleep(50 * time.Millisecond) // the old socket's disconnect has run or is refused
	if expired(t, e, "envoy-1") || len(lbEntries(t, e)) != 1 || !slices.Equal(active(t, e), []string{"envoy-1"}) {
		t.Fatal("the old socket's end expired the envoy")
	}
}

// ToRivetStopping takes the envoy out of the load-balancer index at once with stop_ts set,
// then (no actors to evict) the socket closes with ws.eviction and the envoy expires.
func TestStopping(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{})
	s, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	nextEnvoy[proto.ToEnvoyPing](s)
	before := time.Now().UnixMilli()
	s.send(proto.ToRivetStopping{})
	s.closed(websocket.StatusNormalClosure, "ws.eviction")
	got := get(t, e, "envoy-1")
	if got.StopTs == nil || *got.StopTs < before {
		t.Fatalf("stop_ts %v, want ≥ %d", got.StopTs, before)
	}
	if lb := lbEntries(t, e); lb != nil {
		t.Fatalf("still in the index: %+v", lb)
	}
	eventually(t, "expiry", func() bool { return expired(t, e, "envoy-1") })
	if a := active(t, e); a != nil {
		t.Fatalf("still active: %v", a)
	}
}

// Close ends live sockets with ws.going_away; the envoy is expired (it reconnects elsewhere).
func TestEnvoyCloseGoingAway(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{})
	s, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	done := make(chan struct{})
	go func() { // Close waits for the close handshake, which the reader below answers
		defer close(done)
		e.node.Server.Close()
	}()
	s.closed(websocket.StatusInternalError, "ws.going_away")
	<-done
	if !expired(t, e, "envoy-1") {
		t.Fatal("not expired after the node closed")
	}
}
