package reference

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coder/websocket"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

func init() {
	register(
		scenario{name: "eviction_by_key", doc: "two runner sockets with one runner key, the second evicting the first", run: evictionByKey},
		scenario{name: "gateway_websocket", doc: "a WebSocket through the gateway to an actor: text and binary echoes, the close, subprotocols", run: gatewayWebSocket},
	)
}

// rawRunner is a runner socket opened by hand (runner protocol v7).
type rawRunner struct {
	c  *websocket.Conn
	id string // the runner id its ToClientInit gave
}

// dialRunner opens a runner socket with key key in pool and sends its init; it returns once
// the engine answered ToClientInit.
func (s *Session) dialRunner(pool, key string) *rawRunner {
	s.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	q := url.Values{"protocol_version": {"7"}, "namespace": {s.NS}, "runner_key": {key}}
	protocols := []string{"rivet"}
	if s.Target.Token != "" {
		protocols = append(protocols, "rivet_token."+s.Target.Token)
	}
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.Target.URL, "http")+"/runners/connect?"+q.Encode(),
		&websocket.DialOptions{Subprotocols: protocols})
	if err != nil {
		s.T.Fatalf("%s: dial the runner socket: %v", s.Target.Name, err)
	}
	s.T.Cleanup(func() { _ = c.CloseNow() })
	c.SetReadLimit(32 << 20)
	init, err := proto.EncodeToServer(proto.ToServerInit{Name: pool, Version: 1, TotalSlots: 10}, 7)
	if err != nil {
		s.T.Fatal(err)
	}
	if err := c.Write(ctx, websocket.MessageBinary, init); err != nil {
		s.T.Fatal(err)
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			s.T.Fatalf("%s: no ToClientInit: %v", s.Target.Name, err)
		}
		m, err := proto.DecodeToClient(b, 7)
		if err != nil {
			s.T.Fatalf("%s: %v", s.Target.Name, err)
		}
		if in, ok := m.(proto.ToClientInit); ok {
			return &rawRunner{c: c, id: in.RunnerID}
		}
	}
}

// closeOf reads r's socket until it ends: its close code and reason, or how it ended.
func (r *rawRunner) closeOf(within time.Duration) map[string]any {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		_, _, err := r.c.Read(ctx) // pings and commands before the close are read past
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		switch {
		case errors.As(err, &ce):
			return map[string]any{"close": int(ce.Code), "reason": ce.Reason}
		case ctx.Err() != nil:
			return map[string]any{"open": true}
		}
		return map[string]any{"ended": "without a close frame"}
	}
}

// evictionByKey: a second socket with the first's runner key takes its place: the first is
// closed with ws.eviction (do not reconnect) and the second keeps the runner id.
func evictionByKey(s *Session) {
	s.RunnerConfig("pool")
	first := s.dialRunner("pool", "the-key")
	// The reference records the runner's key after its init is answered: a second socket
	// that comes too soon is taken for another runner.
	s.Eventually("the first runner listed", 30*time.Second, func() bool {
		out := s.MustCall(http.MethodGet, "/runners?namespace={ns}", nil)
		return slices.Contains(itemsOf(out, "runners"), first.id)
	})
	second := s.dialRunner("pool", "the-key")
	s.Record("first socket", first.closeOf(10*time.Second))
	s.Record("second socket's runner", map[string]any{"same id": second.id == first.id})
	out := s.MustCall(http.MethodGet, "/runners?namespace={ns}", nil)
	s.Record("runners", map[string]any{"items": itemsOf(out, "runners")})
}

// gatewayWebSocket: a WebSocket to an echo actor through the gateway.
func gatewayWebSocket(s *Session) {
	s.RunnerConfig("pool")
	s.StartRunner(RunnerOptions{Pool: "pool"})
	aid, _ := runningActor(s, "pool", "sleep")
	ws := "ws" + strings.TrimPrefix(s.Target.URL, "http") + "/gateway/" + aid + "/socket?x=1"
	for _, c := range []struct {
		name      string
		protocols []string
	}{
		{"no subprotocol", nil},
		{"subprotocol rivet", []string{"rivet"}},
		{"another subprotocol", []string{"chat"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		conn, resp, err := websocket.Dial(ctx, ws, &websocket.DialOptions{Subprotocols: c.protocols})
		if err != nil {
			status := 0
			if resp != nil {
				status = resp.StatusCode
			}
			s.Record(c.name, map[string]any{"dial": "failed", "status": status})
			cancel()
			continue
		}
		obs := map[string]any{"subprotocol": conn.Subprotocol()}
		for _, m := range []struct {
			typ  websocket.MessageType
			data string
		}{{websocket.MessageText, "hello"}, {websocket.MessageBinary, "\x00\x01\xff"}} {
			if err := conn.Write(ctx, m.typ, []byte(m.data)); err != nil {
				obs["write"] = "failed"
				break
			}
			typ, b, err := conn.Read(ctx)
			if err != nil {
				obs["read"] = "failed"
				break
			}
			obs[m.typ.String()] = map[string]any{"type": typ.String(), "same": string(b) == m.data}
		}
		obs["close"] = conn.Close(websocket.StatusNormalClosure, "bye") == nil
		s.Record(c.name, obs)
		cancel()
	}
}
