package connlimit

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

// A client over its cap gets 429 guard.too_many_connections; closing one connection frees
// a place; an exempt address is not counted; the table forgets addresses with none open.
func TestCap(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := New(inner, 2, nil, false).(*Listener)
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	loop := netip.MustParseAddr("127.0.0.1")
	a, b := dial(), dial()
	sa, sb := <-accepted, <-accepted
	if n := ln.Open(loop); n != 2 {
		t.Fatalf("open = %d, want 2", n)
	}
	over := dial()
	_ = over.SetDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(over), nil)
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Group, Code, Message string }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 429 || body.Group != "guard" || body.Code != "too_many_connections" {
		t.Fatalf("third connection: %d %+v %v, want 429 guard.too_many_connections", resp.StatusCode, body, err)
	}
	over.Close()
	select {
	case c := <-accepted:
		t.Fatalf("a connection over the cap reached the server: %v", c.RemoteAddr())
	default:
	}
	sa.Close()
	a.Close()
	c := dial()
	sc := <-accepted
	if n := ln.Open(loop); n != 2 {
		t.Fatalf("open after one closed and one more = %d, want 2", n)
	}
	for _, x := range []net.Conn{b, sb, c, sc} {
		x.Close()
	}
	if n := ln.Open(loop); n != 0 || len(ln.open) != 0 {
		t.Fatalf("after every connection closed: open = %d, table %v", n, ln.open)
	}

}

// Exempt addresses (trusted proxies) are not counted.
func TestExempt(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := New(inner, 1, func(netip.Addr) bool { return true }, false)
	defer ln.Close()
	for range 2 {
		d, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
}

// A silent listener closes a connection over the cap without writing to it.
func TestSilent(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := New(inner, 1, nil, true)
	defer ln.Close()
	first, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept() // the first; the second is closed inside the next Accept
		if err == nil {
			accepted <- c
			_, _ = ln.Accept()
		}
	}()
	c := <-accepted
	defer c.Close()
	over, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	_ = over.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := over.Read(make([]byte, 64)); n != 0 || err == nil {
		t.Fatalf("over the cap: read %d bytes, %v; want the connection closed without an answer", n, err)
	}
}
