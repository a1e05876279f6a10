// Package connlimit caps the connections one client address holds open on a listener, so
// that one client cannot take every socket the engine can hold (idle keep-alives, slow
// requests, WebSockets), and the WebSockets among them (Sockets).
package connlimit

import (
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/berthhq/berth/pkg/rerr"
)

// Listener accepts at most Max connections at once from one client address (the address
// the connection reports, so the client's behind a PROXY protocol header). A connection over
// the cap is answered with a 429 in the engine's JSON error shape and closed, without
// reaching the server; Exempt addresses (trusted proxies, which carry many clients) are not
// counted.
type Listener struct {
	net.Listener
	Max    int
	Exempt func(netip.Addr) bool
	// Silent closes a connection over the cap without the 429: for a listener that TLS is
	// layered on, where a plain HTTP answer would mean nothing to the client.
	Silent bool

	mu   sync.Mutex
	open map[netip.Addr]int
}

// New wraps ln; max ≤ 0 returns ln unchanged. silent is Listener.Silent.
func New(ln net.Listener, max int, exempt func(netip.Addr) bool, silent bool) net.Listener {
	if max <= 0 {
		return ln
	}
	return &Listener{Listener: ln, Max: max, Exempt: exempt, Silent: silent, open: map[netip.Addr]int{}}
}

// Accept returns the next connection within its address's cap.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := clientAddr(c)
		if !addr.IsValid() || (l.Exempt != nil && l.Exempt(addr)) {
			return c, nil
		}
		l.mu.Lock()
		n := l.open[addr]
		if n >= l.Max {
			l.mu.Unlock()
			if l.Silent {
				_ = c.Close()
				continue
			}
			go refuse(c, l.Max)
			continue
		}
		l.open[addr] = n + 1
		l.mu.Unlock()
		return &conn{Conn: c, release: func() { l.release(addr) }}, nil
	}
}

func (l *Listener) release(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[addr] <= 1 {
		delete(l.open, addr) // the table holds only addresses with open connections
	} else {
		l.open[addr]--
	}
}

// Open is the number of connections counted for addr.
func (l *Listener) Open(addr netip.Addr) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[addr]
}

// conn releases its place once, at its first Close.
type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

// NetConn is the connection counted, for those who need its socket.
func (c *conn) NetConn() net.Conn { return c.Conn }

func (c *conn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// refuse answers 429 guard.too_many_connections and closes c, within a few seconds
// whatever the client does.
func refuse(c net.Conn, max int) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	body := rerr.GuardTooManyConnections(max).JSON()
	head := "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n"
	_, _ = c.Write(append([]byte(head), body...))
}

func clientAddr(c net.Conn) netip.Addr {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
