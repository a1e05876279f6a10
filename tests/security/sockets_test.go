package security

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/sdk/runner/runnertest"
	"github.com/berthhq/berth/tests/internal/harness"
)

// hostProbe connects a Go runner of the pool "pool" hosting runnertest's probe actor (its
// WebSockets echo), creates one probe actor and returns its id.
func hostProbe(t *testing.T, e *harness.Engine) string {
	t.Helper()
	r := runnertest.NewRunner(t, runnertest.HostConfig(e.URL, runnertest.NewProbe()))
	runnertest.Start(t, r)
	var out struct {
		Actor struct {
			ActorID string `json:"actor_id"`
		} `json:"actor"`
	}
	e.CallJSON(t, http.MethodPost, "/actors?namespace=default",
		map[string]any{"name": "probe", "runner_name_selector": "pool", "crash_policy": "destroy"}, &out)
	return out.Actor.ActorID
}

// WebSocket floods: one client opening WebSockets past guard.max_websockets_per_client gets
// 429 guard.too_many_websockets for each one over, before the upgrade, and a closed socket
// frees its place; one WebSocket sending as fast as it can does not grow the engine's memory
// with what it sends.
func TestWebSocketFloods(t *testing.T) {
	const maxWS, extra = 40, 20
	e := startLimited(t, map[string]any{"max_websockets_per_client": maxWS})
	aid := hostProbe(t, e)
	url := "ws://" + hostPort(e) + "/gateway/" + aid + "/ws"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dial := func() (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{"rivet"}})
	}

	// The runner's own socket, from this address too, holds one place.
	var open []*websocket.Conn
	defer func() {
		for _, c := range open {
			c.CloseNow()
		}
	}()
	refused, other := 0, 0
	for range maxWS + extra {
		c, resp, err := dial()
		switch {
		case err == nil:
			open = append(open, c)
		case resp != nil && resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("X-Rivet-Error") == "guard.too_many_websockets":
			refused++
		default:
			other++
			t.Errorf("a WebSocket over the cap: %v %v", resp, err)
		}
	}
	if len(open) != maxWS-1 || refused != extra+1 {
		t.Fatalf("%d WebSockets opened and %d refused with the cap at %d (one held by the runner), want %d and %d",
			len(open), refused, maxWS, maxWS-1, extra+1)
	}
	if err := open[0].Write(ctx, websocket.MessageText, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if _, b, err := open[0].Read(ctx); err != nil || string(b) != "PING" {
		t.Fatalf("a WebSocket within the cap: %q %v", b, err)
	}
	for _, c := range open {
		c.Close(websocket.StatusNormalClosure, "")
	}
	open = nil
	var flood *websocket.Conn
	waitFor(t, "a WebSocket opening once the others closed", soon, func() bool {
		c, _, err := dial()
		flood = c
		return err == nil
	})
	open = append(open, flood)

	// The flood: 4 KiB messages as fast as the client can send, echoes read as they come.
	const messages, size = 20000, 4 << 10
	before := rss(e)
	peakRSS := sampleRSS(e)
	var echoed atomic.Int64
	readDone := make(chan error, 1)
	go func() {
		for echoed.Load() < messages {
			if _, _, err := flood.Read(ctx); err != nil {
				readDone <- err
				return
			}
			echoed.Add(1)
		}
		readDone <- nil
	}()
	msg := make([]byte, size)
	start := time.Now()
	for i := range messages {
		if err := flood.Write(ctx, websocket.MessageBinary, msg); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if err := <-readDone; err != nil {
		t.Fatalf("after %d echoes: %v", echoed.Load(), err)
	}
	took := time.Since(start)

	// A socket that never reads its echoes: the engine holds a bounded backlog, then the
	// client's writes wait (or the socket ends); either way memory stays bounded.
	deaf, _, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	open = append(open, deaf)
	sent, ended := 0, "all sent"
	for sent < messages {
		wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
		err := deaf.Write(wctx, websocket.MessageBinary, msg)
		wcancel()
		if err != nil {
			ended = "a write waited 3 s (backpressure)"
			if wctx.Err() == nil {
				ended = "the socket ended: " + err.Error()
			}
			break
		}
		sent++
	}
	peak := peakRSS()
	healthy(t, e)
	growth := peak - before
	t.Logf("figure: WebSocket floods: %d sockets tried from one address with the cap at %d, %d opened (the runner held one place), %d refused with 429 guard.too_many_websockets, %d otherwise; one socket sent %d messages of %d KiB (%.0f MiB in %v), all echoed; one that never read sent %d (%.0f MiB) until %s; RSS %.1f MiB before, %.1f MiB at most (+%.1f MiB); 0 crashes",
		maxWS+extra, maxWS, maxWS-1, refused, other, messages, size>>10, mib(messages*size), took.Round(time.Millisecond),
		sent, mib(int64(sent)*size), ended, mib(before), mib(peak), mib(growth))
	if growth > 96<<20 {
		t.Errorf("the engine grew by %.1f MiB under one socket's flood; want under 96 MiB", mib(growth))
	}
}
