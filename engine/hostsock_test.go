package engine

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// TestRunnerSocketOnPublicListener: /runners/connect is served on the guard port next to
// api-public; a registered runner is listed by GET /runners; Shutdown closes the socket with
// 1011 ws.going_away.
func TestRunnerSocketOnPublicListener(t *testing.T) {
	e, err := Start(context.Background(), Options{Config: testConfig("tok"), Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	shut := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}
	defer shut()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, ci := connectRunner(t, ctx, e.PublicAddr(), "k1", "tok")

	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	r := call(t, client, e.PublicAddr(), "/runners?namespace=default", "tok")
	var page struct {
		Runners []struct {
			RunnerID string `json:"runner_id"`
			Name     string `json:"name"`
			Key      string `json:"key"`
		} `json:"runners"`
	}
	if err := json.Unmarshal([]byte(r.body), &page); err != nil || r.status != 200 {
		t.Fatalf("GET /runners: %d %s (%v)", r.status, r.body, err)
	}
	if len(page.Runners) != 1 || page.Runners[0].RunnerID != ci.RunnerID || page.Runners[0].Key != "k1" {
		t.Fatalf("runners %+v, want %s", page.Runners, ci.RunnerID)
	}

	go shut()
	for {
		_, _, err := c.Read(ctx)
		if err == nil {
			continue // pings
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusInternalError || !strings.HasPrefix(ce.Reason, "ws.going_away#") {
			t.Fatalf("read ended with %v, want 1011 ws.going_away#<ray>", err)
		}
		return
	}
}

// connectRunner opens a runner socket of pool "pool" with key in namespace default and
// returns it after ToClientInit.
func connectRunner(t *testing.T, ctx context.Context, addr net.Addr, key, token string) (*websocket.Conn, proto.ToClientInit) {
	t.Helper()
	u := "ws://" + addr.String() + "/runners/connect?protocol_version=7&namespace=default&runner_key=" + key
	protocols := []string{"rivet"}
	if token != "" {
		protocols = append(protocols, "rivet_token."+token)
	}
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{Subprotocols: protocols})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != "rivet" {
		t.Fatalf("subprotocol %q", got)
	}
	b, err := proto.EncodeToServer(proto.ToServerInit{Name: "pool", Version: 1, TotalSlots: 4}, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, websocket.MessageBinary, b); err != nil {
		t.Fatal(err)
	}
	_, b, err = c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, err := proto.DecodeToClient(b, 7)
	if err != nil {
		t.Fatal(err)
	}
	ci, ok := m.(proto.ToClientInit)
	if !ok {
		t.Fatalf("got %T, want ToClientInit", m)
	}
	return c, ci
}
