package reference

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// proxy is a round-robin TCP proxy on loopback, as a load balancer in front of an engine's
// nodes: each accepted connection is piped to the next backend in turn (a backend that
// refuses is skipped, as a health-checked balancer would).
type proxy struct {
	ln net.Listener

	mu       sync.Mutex
	backends []string
	next     int
	conns    map[net.Conn]struct{}
	wg       sync.WaitGroup
}

func startProxy(t *testing.T) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// URL is the proxy's http:// URL.
func (p *proxy) URL() string { return "http://" + p.ln.Addr().String() }

// SetBackends sets the host:port addresses connections go to.
func (p *proxy) SetBackends(addrs []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backends = append([]string(nil), addrs...)
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.wg.Go(func() { p.pipe(c) })
	}
}

// track adds c to the open connections; false once the proxy is closed.
func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// dial connects to the next backend that accepts, trying each once.
func (p *proxy) dial() (net.Conn, error) {
	p.mu.Lock()
	backends, start := p.backends, p.next
	p.next++
	p.mu.Unlock()
	var err error = io.ErrUnexpectedEOF
	for i := range backends {
		var c net.Conn
		if c, err = net.DialTimeout("tcp", backends[(start+i)%len(backends)], 2*time.Second); err == nil {
			return c, nil
		}
	}
	return nil, err
}

// pipe copies between the client's connection and a backend's until either side ends.
func (p *proxy) pipe(client net.Conn) {
	defer p.untrack(client)
	defer client.Close()
	server, err := p.dial()
	if err != nil {
		return
	}
	if !p.track(server) {
		server.Close()
		return
	}
	defer p.untrack(server)
	defer server.Close()
	done := make(chan struct{}, 2)
	half := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go half(server, client)
	go half(client, server)
	<-done
	<-done
}

// cut closes every open connection, as a network failure would; new ones are accepted.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// close stops accepting, cuts every open connection and waits for the pipes to end.
func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
