package security

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Slowloris: connections that send their head a byte at a time, never ending it, are closed
// once guard.read_header_timeout_ms has passed, and the engine serves other clients all the
// while.
func TestSlowloris(t *testing.T) {
	const conns = 200
	e := startLimited(t, map[string]any{"read_header_timeout_ms": 2000})
	addr := hostPort(e)
	before := rss(e)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	var closed atomic.Int64
	var mu sync.Mutex
	var lasted []time.Duration // how long each slow connection was kept
	for range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		wg.Go(func() { // the head, a byte every 50 ms, without its end
			head := "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: "
			for i := 0; ; i++ {
				b := byte('a')
				if i < len(head) {
					b = head[i]
				}
				if _, err := c.Write([]byte{b}); err != nil {
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond): // the client's pace
				}
			}
		})
		wg.Go(func() { // the engine closing the connection ends the read
			_ = c.SetReadDeadline(time.Now().Add(soon))
			buf := make([]byte, 512)
			for {
				if _, err := c.Read(buf); err != nil {
					break
				}
			}
			mu.Lock()
			lasted = append(lasted, time.Since(start))
			mu.Unlock()
			closed.Add(1)
		})
	}

	// Other clients are served while the slow ones hold their connections.
	served := 0
	for range 20 {
		if a := exchange(addr, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); a.status == 200 {
			served++
		}
	}
	waitFor(t, "every slow connection closed by the engine", soon, func() bool { return closed.Load() == conns })
	healthy(t, e)
	after := rss(e)
	mu.Lock()
	slices.Sort(lasted)
	median, last := lasted[len(lasted)/2], lasted[len(lasted)-1]
	mu.Unlock()
	t.Logf("figure: slowloris: %d connections sending a byte per 50 ms, %d closed by the engine (read_header_timeout_ms 2000; kept %v median, %v at most); %d/20 other requests answered meanwhile; RSS %.1f → %.1f MiB; 0 crashes",
		conns, closed.Load(), median.Round(10*time.Millisecond), last.Round(10*time.Millisecond), served, mib(before), mib(after))
	if served != 20 {
		t.Errorf("%d of 20 requests of other clients answered during the attack", served)
	}
}

// headWith is a GET request for /health with the given header lines after Host.
func headWith(n int, value string) string {
	var b strings.Builder
	b.WriteString("GET /health HTTP/1.1\r\nHost: x\r\n")
	for i := range n {
		fmt.Fprintf(&b, "X-H%d: %s\r\n", i, value)
	}
	b.WriteString("\r\n")
	return b.String()
}

// Header bombs: 200 headers, one header of 100 KiB and 2 MiB of headers each get their JSON
// 431, many times over and many at once, and the engine's memory stays within a bound that
// has nothing to do with what the clients sent.
func TestHeaderBombs(t *testing.T) {
	const rounds, parallel = 30, 10
	e := startLimited(t, nil)
	addr := hostPort(e)
	shapes := []struct {
		name, raw, code string
	}{
		{"200 headers", headWith(199, "v"), "guard.too_many_request_headers"},
		{"one 100 KiB header", headWith(1, strings.Repeat("a", 100<<10)), "guard.request_header_fields_too_large"},
		{"2 MiB of headers", headWith(262, strings.Repeat("a", 8000)), "guard.request_header_fields_too_large"},
	}
	before := rss(e)
	peakRSS := sampleRSS(e)
	var sent atomic.Int64
	attempts, bypasses := 0, 0
	for _, s := range shapes {
		results := make(chan answer, rounds)
		sem := make(chan struct{}, parallel)
		for range rounds {
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				sent.Add(int64(len(s.raw)))
				results <- exchange(addr, s.raw)
			}()
		}
		for range rounds {
			a := <-results
			attempts++
			if a.status != http.StatusRequestHeaderFieldsTooLarge || a.errorKey() != s.code {
				bypasses++
				t.Errorf("%s: %v, want 431 %s", s.name, a, s.code)
			}
		}
	}
	peak := peakRSS()
	healthy(t, e)
	growth := peak - before
	t.Logf("figure: header bombs: %d attempts (3 shapes × %d, %d at a time, %.0f MiB sent), %d answered otherwise than the JSON 431, 0 crashes; RSS %.1f MiB before, %.1f MiB at most (+%.1f MiB)",
		attempts, rounds, parallel, mib(sent.Load()), bypasses, mib(before), mib(peak), mib(growth))
	if growth > 64<<20 {
		t.Errorf("the engine grew by %.1f MiB under header bombs; want under 64 MiB", mib(growth))
	}
}

// 10,000 idle connections: the engine holds them, still answers a fresh request, and closes
// every one once its timeout passes: the header timeout for those that never send, the idle
// timeout for those that sent one request and then wait. (The test watches the connections
// without a goroutine each: the race detector allows only 8,128.)
func TestTenThousandIdleConnections(t *testing.T) {
	const total, kept = 10000, 1000 // kept: one request answered, then idle
	e := startLimited(t, map[string]any{"max_connections_per_client": 20000, "max_websockets_per_client": 0,
		"read_header_timeout_ms": 15000, "idle_timeout_ms": 15000})
	addr := hostPort(e)
	before := rss(e)

	conns := make([]net.Conn, total)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	dials := make(chan int)
	var failed atomic.Int64
	var dialers sync.WaitGroup
	for range 32 {
		dialers.Go(func() {
			for i := range dials {
				c, err := net.DialTimeout("tcp", addr, soon)
				if err != nil {
					failed.Add(1)
					continue
				}
				conns[i] = c
				if i < kept {
					_ = c.SetDeadline(time.Now().Add(soon))
					if _, err := c.Write([]byte("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
						failed.Add(1)
						continue
					}
					resp, err := http.ReadResponse(bufio.NewReader(c), nil)
					if err != nil || resp.StatusCode != 200 {
						failed.Add(1)
						continue
					}
					resp.Body.Close() // whole: Content-Length, nothing read ahead
				}
			}
		})
	}
	start := time.Now()
	for i := range total {
		dials <- i
	}
	close(dials)
	dialers.Wait()
	opened := time.Since(start)
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d connections could not be opened (or their request was not answered)", n, total)
	}
	open := func() int {
		n := 0
		for _, c := range conns {
			if !closedByPeer(c) {
				n++
			}
		}
		return n
	}
	if n := open(); n != total {
		t.Fatalf("%d connections were closed before all %d were open (%v): raise the timeouts", total-n, total, opened)
	}
	withAll := rss(e)
	fresh := exchange(addr, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if fresh.status != 200 {
		t.Fatalf("a fresh request with %d connections open: %v", total, fresh)
	}
	waitFor(t, "every idle connection closed by the engine", 2*time.Minute, func() bool { return open() == 0 })
	healthy(t, e)
	after := rss(e)
	t.Logf("figure: idle connections: %d open at once (%d after one request, opened in %v), a fresh request answered 200, all %d closed by the engine after the 15 s header or idle timeout (%v after the first opened); RSS %.1f MiB before, %.1f MiB with all open (%.1f KiB each), %.1f MiB after; 0 crashes",
		total, kept, opened.Round(time.Millisecond), total, time.Since(start).Round(100*time.Millisecond),
		mib(before), mib(withAll), float64(withAll-before)/1024/total, mib(after))
}

// closedByPeer reports, without waiting, whether the other end closed c (or reset it): a
// peek finds its end of stream or an error instead of nothing to read yet.
func closedByPeer(c net.Conn) bool {
	sc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	_ = sc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), make([]byte, 1), syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n == 0 && err == nil || err != nil && err != syscall.EAGAIN
		return true
	})
	return closed
}
