package wsconn

import (
	"io"
	"net"
	"runtime"
	"syscall"
	"testing"
)

// netConnOf is a wrapper that names the connection under it, as TLS and connlimit do.
type netConnOf struct{ net.Conn }

func (w netConnOf) NetConn() net.Conn { return w.Conn }

// quickAckOn reads the socket's TCP_QUICKACK: 0 while Linux delays acknowledgements of an
// interactive exchange (its "ping-pong" mode), 1 otherwise.
func quickAckOn(t *testing.T, c net.Conn) int {
	t.Helper()
	raw := rawConn(c)
	var v int
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		v, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK)
	}); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	return v
}

// exchange runs a few request-answer rounds over (client, server) and ends with a request
// the server read but has not answered: the point where a delayed acknowledgement holds a
// client's next small write back.
func exchange(t *testing.T, client, server net.Conn) {
	t.Helper()
	b := make([]byte, 3)
	for range 4 {
		if _, err := client.Write([]byte("req")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(server, b); err != nil {
			t.Fatal(err)
		}
		if _, err := server.Write([]byte("ans")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(client, b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.Write([]byte("req")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(server, b); err != nil {
		t.Fatal(err)
	}
}

func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	client.(*net.TCPConn).SetNoDelay(false) // as rivetkit's envoy
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// TestQuickAck checks that a wrapped TCP socket under another wrapper leaves Linux's delayed
// acknowledgements after every read, where the same exchange on a plain socket enters them.
func TestQuickAck(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("TCP_QUICKACK is Linux's")
	}
	client, server := tcpPair(t)
	exchange(t, client, server)
	if v := quickAckOn(t, server); v != 0 {
		t.Fatalf("TCP_QUICKACK = %d on a plain socket after an interactive exchange, want 0 (delayed): the test shows nothing", v)
	}

	client, server = tcpPair(t)
	wrapped := withQuickAck(netConnOf{server})
	if _, ok := wrapped.(*quickAckConn); !ok {
		t.Fatalf("withQuickAck gave %T, want the quick-ack wrapper", wrapped)
	}
	exchange(t, client, wrapped)
	if v := quickAckOn(t, server); v != 1 {
		t.Fatalf("TCP_QUICKACK = %d after a read through the wrapper, want 1", v)
	}

	pipe, other := net.Pipe()
	defer pipe.Close()
	defer other.Close()
	if got := withQuickAck(netConnOf{pipe}); got != (netConnOf{pipe}) {
		t.Fatalf("withQuickAck on a connection without a socket gave %T, want it unchanged", got)
	}
}
