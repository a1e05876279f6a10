package multilisten

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// One listener serves 127.0.0.1 and ::1 on one port; connections to either are accepted.
func TestLoopbackPair(t *testing.T) {
	ln, skipped, err := Listen(context.Background(), []string{"127.0.0.1:0", "[::1]:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	targets := []string{net.JoinHostPort("127.0.0.1", itoa(port))}
	if len(skipped) == 0 {
		targets = append(targets, net.JoinHostPort("::1", itoa(port)))
	} else {
		t.Logf("no IPv6 loopback here: %v", skipped)
	}
	for _, target := range targets {
		c, err := net.Dial("tcp", target)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("hi")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 2)
		if _, err := io.ReadFull(s, buf); err != nil || string(buf) != "hi" {
			t.Fatalf("via %s: read %q, %v", target, buf, err)
		}
		c.Close()
		s.Close()
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
}

// A second address that cannot be bound is left out and reported; the first must bind.
func TestSkipsAnAddressThatFails(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	if _, _, err := Listen(context.Background(), []string{busy.Addr().String()}); err == nil {
		t.Fatal("Listen on a busy first address succeeded")
	}
	ln, skipped, err := Listen(context.Background(), []string{"127.0.0.2:" + itoa(port), "127.0.0.1:0"})
	if err != nil {
		t.Skipf("127.0.0.2 not usable here: %v", err)
	}
	defer ln.Close()
	if len(skipped) != 1 {
		t.Fatalf("skipped = %v, want the busy 127.0.0.1:%d", skipped, port)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
