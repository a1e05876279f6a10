package connlimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A client over its WebSocket cap gets 429 guard.too_many_websockets before the upgrade; a
// closed socket frees its place, as does an upgrade the handler refused; other clients and
// plain requests are not counted.
func TestSockets(t *testing.T) {
	s := NewSockets(2, func(r *http.Request) string { return r.Header.Get("X-Client") })
	srv := httptest.NewServer(s.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/refuse" {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		_, _, _ = c.Read(context.Background()) // until the client closes
		c.CloseNow()
	})))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dial := func(client, path string) (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(ctx, url+path, &websocket.DialOptions{HTTPHeader: http.Header{"X-Client": {client}}})
	}
	a, _, err := dial("a", "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := dial("a", "/")
	if err != nil {
		t.Fatal(err)
	}
	if _, resp, err := dial("a", "/"); err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests ||
		resp.Header.Get("X-Rivet-Error") != "guard.too_many_websockets" {
		t.Fatalf("a third socket: %v %v, want 429 guard.too_many_websockets", resp, err)
	}
	if c, _, err := dial("b", "/"); err != nil {
		t.Fatalf("another client: %v", err)
	} else {
		defer c.CloseNow()
	}
	if resp, err := http.Get(srv.URL + "/"); err != nil || resp.StatusCode == http.StatusTooManyRequests {
		t.Fatalf("a plain request: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	a.Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(10 * time.Second)
	for s.Open("a") != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("a closed socket still counts: %d open", s.Open("a"))
		}
		time.Sleep(5 * time.Millisecond) // polling the table
	}
	if _, resp, err := dial("a", "/refuse"); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a refused upgrade: %v %v, want 403", resp, err)
	}
	if n := s.Open("a"); n != 1 {
		t.Fatalf("after a refused upgrade: %d open, want 1", n)
	}
	c, _, err := dial("a", "/")
	if err != nil {
		t.Fatalf("a socket after one closed: %v", err)
	}
	c.CloseNow()
	b.CloseNow()
}
