package sidebyside

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestClients checks both clients against one server: the path and client address arrive,
// an answer other than 200 "ok" is an error, and a connection the server closes is dialled
// again.
func TestClients(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/gateway/a/bench" && r.Header.Get("X-Forwarded-For") == "10.1.2.3":
			if r.URL.Query().Get("close") != "" {
				w.Header().Set("Connection", "close")
			}
			_, _ = w.Write([]byte("ok"))
		default:
			http.Error(w, "unexpected "+r.URL.Path+" from "+r.Header.Get("X-Forwarded-For"), http.StatusTeapot)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	target := NewTarget("test", srv.URL+"/gateway/a", 0, 0, 1)

	for _, kind := range []Client{RawClient, NetHTTPClient} {
		t.Run(kind.String(), func(t *testing.T) {
			ctx := t.Context()
			c := kind.Dial(target)
			defer c.Close()
			before := conns.Load()
			for range 3 {
				if err := c.Get(ctx, "/bench", "10.1.2.3"); err != nil {
					t.Fatal(err)
				}
			}
			if n := conns.Load() - before; n != 1 {
				t.Fatalf("3 requests used %d connections, want 1 (keep-alive)", n)
			}
			if err := c.Get(ctx, "/other", "10.1.2.3"); err == nil || !strings.Contains(err.Error(), "418") {
				t.Fatalf("Get of a 418 answer: %v, want an error naming it", err)
			}
			if err := c.Get(ctx, "/bench?close=1", "10.1.2.3"); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(ctx, "/bench", "10.1.2.3"); err != nil {
				t.Fatalf("Get after the server closed the connection: %v", err)
			}
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			if err := c.Get(cancelled, "/bench", "10.1.2.3"); err == nil {
				t.Fatal("Get with a cancelled context succeeded")
			}
		})
	}
}
