package engine

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/berthhq/berth/pkg/id"
)

// gatewayStatus sends one gateway request for an unknown actor on a new connection, after
// prefix (a PROXY protocol header, or nothing), and returns the answer's status.
func gatewayStatus(t *testing.T, addr net.Addr, prefix string, header http.Header) int {
	t.Helper()
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr.String()+"/gateway/"+id.New(1).String()+"/", nil)
	req.Header = header
	if _, err := fmt.Fprint(c, prefix); err != nil {
		t.Fatal(err)
	}
	if err := req.Write(c); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func statuses(t *testing.T, n int, send func(i int) int) map[int]int {
	out := map[int]int{}
	for i := range n {
		out[send(i)]++
	}
	return out
}

// A client cannot leave the rate limit by rotating X-Forwarded-For: without a trusted proxy
// the socket's address counts. Behind a trusted proxy the header (or a PROXY protocol header)
// names the client.
func TestRateLimitKeysOnTheClient(t *testing.T) {
	rotating := func(i int) http.Header {
		return http.Header{"X-Forwarded-For": {"203.0.113." + strconv.Itoa(i)}}
	}
	t.Run("no trusted proxy", func(t *testing.T) {
		cfg := testConfig("")
		cfg.Guard.RateLimitRequests = 5
		e := startEngine(t, cfg)
		got := statuses(t, 8, func(i int) int { return gatewayStatus(t, e.PublicAddr(), "", rotating(i)) })
		if got[404] != 5 || got[429] != 3 {
			t.Errorf("8 requests with rotating X-Forwarded-For: %v, want 5×404 and 3×429", got)
		}
	})
	t.Run("trusted proxy", func(t *testing.T) {
		cfg := testConfig("")
		cfg.Guard.RateLimitRequests = 5
		cfg.Guard.TrustedProxies = []string{"127.0.0.0/8"}
		e := startEngine(t, cfg)
		got := statuses(t, 8, func(i int) int { return gatewayStatus(t, e.PublicAddr(), "", rotating(i)) })
		if got[404] != 8 {
			t.Errorf("8 clients behind a trusted proxy: %v, want 8×404", got)
		}
		same := statuses(t, 6, func(int) int { return gatewayStatus(t, e.PublicAddr(), "", rotating(99)) })
		if same[404] != 5 || same[429] != 1 {
			t.Errorf("6 requests of one client behind a trusted proxy: %v, want 5×404 and 1×429", same)
		}
	})
	t.Run("PROXY protocol", func(t *testing.T) {
		cfg := testConfig("")
		cfg.Guard.RateLimitRequests = 5
		cfg.Guard.TrustedProxies = []string{"127.0.0.1"}
		cfg.Guard.ProxyProtocol = true
		e := startEngine(t, cfg)
		proxy := func(client string) string { return "PROXY TCP4 " + client + " 127.0.0.1 40000 6420\r\n" }
		got := statuses(t, 6, func(int) int { return gatewayStatus(t, e.PublicAddr(), proxy("198.51.100.1"), nil) })
		if got[404] != 5 || got[429] != 1 {
			t.Errorf("6 requests of one client through the PROXY protocol: %v, want 5×404 and 1×429", got)
		}
		if s := gatewayStatus(t, e.PublicAddr(), proxy("198.51.100.2"), nil); s != 404 {
			t.Errorf("another client through the PROXY protocol: %d, want 404", s)
		}
		if s := gatewayStatus(t, e.PublicAddr(), "", nil); s != 404 {
			t.Errorf("the proxy's own request without a header: %d, want 404", s)
		}
	})
	t.Run("PROXY header from an untrusted peer", func(t *testing.T) {
		cfg := testConfig("")
		cfg.Guard.TrustedProxies = []string{"10.0.0.0/8"}
		cfg.Guard.ProxyProtocol = true
		e := startEngine(t, cfg)
		if s := gatewayStatus(t, e.PublicAddr(), "PROXY TCP4 198.51.100.1 127.0.0.1 40000 6420\r\n", nil); s != 400 {
			t.Errorf("a PROXY header from an untrusted peer: %d, want 400", s)
		}
	})
}

// One client address holds at most guard.max_connections_per_client connections: the next
// gets 429 guard.too_many_connections, and a closed one frees its place.
func TestConnectionsPerClient(t *testing.T) {
	cfg := testConfig("")
	cfg.Guard.MaxConnectionsPerClient = 3
	e := startEngine(t, cfg)
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", e.PublicAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	if s := gatewayStatus(t, e.PublicAddr(), "", nil); s != http.StatusTooManyRequests {
		t.Fatalf("a fourth connection: %d, want 429", s)
	}
	held[0].Close()
	held = held[1:]
	for range 100 { // the engine sees the close soon; each try is a new connection
		if s := gatewayStatus(t, e.PublicAddr(), "", nil); s == http.StatusNotFound {
			return
		}
	}
	t.Fatal("a closed connection did not free its place")
}
