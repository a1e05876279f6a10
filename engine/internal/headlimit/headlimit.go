// Package headlimit bounds the head of every HTTP/1.1 request a listener reads (its request
// line and header lines) as the bytes arrive, before net/http buffers them, and answers a
// head over the bounds with the engine's JSON error, which net/http's own limit cannot give.
// The answers net/http itself writes to a head it cannot parse (400, and 431 past its own
// limit) are turned into JSON errors as well. A listener with TLS is served here too, so
// that the bytes counted are the plaintext.
package headlimit

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berthhq/berth/pkg/rerr"
)

// Limits bound one request's head: MaxBytes its bytes as sent (request line, header lines
// and the blank line that ends them), MaxCount its header lines.
type Limits struct {
	MaxBytes int
	MaxCount int
}

// How long a refused client gets to read the answer while what it still sends is thrown
// away, and how much of it is read at most.
const (
	refuseTimeout = 2 * time.Second
	refuseDrain   = 16 << 20
)

// errRefused ends net/http's read of a refused head; net/http closes the connection quietly
// on a read error of a *net.OpError.
var errRefused = errors.New("headlimit: request head refused")

// Listener wraps the connections of an inner listener in Conns.
type Listener struct {
	net.Listener
	lim Limits
	tls *tls.Config
	// ErrorLog receives TLS handshake failures, as net/http logs them; nil discards them.
	ErrorLog *log.Logger
}

// New returns a Listener over ln with lim; a non-nil cfg serves TLS on each connection.
func New(ln net.Listener, lim Limits, cfg *tls.Config) *Listener {
	return &Listener{Listener: ln, lim: lim, tls: cfg}
}

// Accept returns the next connection, wrapped.
func (l *Listener) Accept() (net.Conn, error) {
	raw, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &Conn{Conn: raw, lim: l.lim, log: l.ErrorLog}
	if l.tls != nil {
		c.tls = tls.Server(raw, l.tls)
		c.Conn = c.tls
	}
	c.Arm()
	return c, nil
}

// Conn is one connection whose request heads are counted while they are read.
type Conn struct {
	net.Conn           // the accepted connection, or the TLS connection over it
	tls      *tls.Conn // nil without TLS
	lim      Limits
	log      *log.Logger
	armed    atomic.Bool // a request's head is being read
	// head: no handler has begun since the head began, so a write is net/http's own answer
	// to a head it refused.
	head     atomic.Bool
	shaken   bool // the TLS handshake is done
	tlsOnce  sync.Once
	tlsState *tls.ConnectionState

	// The head being read: its bytes, its lines so far, and the current line's length and
	// last byte.
	n, lines, lineLen int
	last              byte
}

// NetConn is the connection read (the TLS connection with TLS), for those who need its
// socket; reads must still go through c.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// Arm starts counting a new request's head: at the connection's start and whenever net/http
// waits for its next request (StateIdle).
func (c *Conn) Arm() {
	c.n, c.lines, c.lineLen, c.last = 0, 0, 0, 0
	c.armed.Store(true)
	c.head.Store(true)
}

// Write writes to the connection; net/http's own plain-text answer to a head it refused
// (400, or 431 past its MaxHeaderBytes) is written as the JSON error instead.
func (c *Conn) Write(p []byte) (int, error) {
	if c.head.Load() {
		if e := c.refusal(p); e != nil {
			write(c.Conn, e)
			return len(p), nil
		}
	}
	return c.Conn.Write(p)
}

// refusal is the JSON error for net/http's answer p, or nil when p is not one it turns.
func (c *Conn) refusal(p []byte) *rerr.Error {
	switch {
	case bytes.HasPrefix(p, []byte("HTTP/1.1 431 ")):
		return rerr.GuardRequestHeaderFieldsTooLarge(c.lim.MaxBytes)
	case bytes.HasPrefix(p, []byte("HTTP/1.1 400 ")):
		// "400 Bad Request: <reason>" for the reasons net/http names, else none.
		line, _, _ := bytes.Cut(p, []byte("\r\n"))
		_, reason, ok := bytes.Cut(line, []byte(": "))
		if !ok {
			reason = []byte("malformed HTTP request")
		}
		return rerr.BadRequest("", string(reason))
	}
	return nil
}

// Read reads from the connection, counting the head of a request while one is read.
func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.tls != nil && !c.shaken {
		if n == 0 && err != nil {
			return 0, c.handshakeFailed(err)
		}
		c.shaken = true
	}
	if n > 0 && c.armed.Load() {
		if e := c.scan(p[:n]); e != nil {
			c.refuse(e)
			return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: errRefused}
		}
	}
	return n, err
}

// scan counts b, the next bytes of a head; the error when they pass a limit. The blank line
// that ends the head stops the count: what follows is a body.
func (c *Conn) scan(b []byte) *rerr.Error {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			c.n += len(b)
			c.lineLen += len(b)
			c.last = b[len(b)-1]
			break
		}
		c.n += i + 1
		if i > 0 {
			c.lineLen += i
			c.last = b[i-1]
		}
		if c.n > c.lim.MaxBytes {
			return rerr.GuardRequestHeaderFieldsTooLarge(c.lim.MaxBytes)
		}
		if c.lineLen == 0 || (c.lineLen == 1 && c.last == '\r') {
			c.armed.Store(false)
			return nil
		}
		c.lines++ // the request line, then each header line
		if c.lines-1 > c.lim.MaxCount {
			return rerr.GuardTooManyRequestHeaders(c.lim.MaxCount)
		}
		c.lineLen = 0
		b = b[i+1:]
	}
	if c.n > c.lim.MaxBytes {
		return rerr.GuardRequestHeaderFieldsTooLarge(c.lim.MaxBytes)
	}
	return nil
}

// refuse answers e and lets the client finish sending (thrown away) for a bounded time, so
// that it reads the answer instead of a reset connection.
func (c *Conn) refuse(e *rerr.Error) {
	c.armed.Store(false)
	write(c.Conn, e)
	if c.tls != nil {
		_ = c.tls.CloseWrite()
	}
	_ = c.Conn.SetReadDeadline(time.Now().Add(refuseTimeout))
	_, _ = io.CopyN(io.Discard, c.Conn, refuseDrain)
}

// handshakeFailed answers a client that spoke plain HTTP to the TLS port with 400
// guard.wrong_addr_protocol, logs other failures, and returns the error net/http closes the
// connection on quietly.
func (c *Conn) handshakeFailed(err error) error {
	var re tls.RecordHeaderError
	if errors.As(err, &re) && re.Conn != nil {
		write(re.Conn, rerr.GuardWrongAddrProtocol())
	} else if c.log != nil && !errors.Is(err, io.EOF) {
		c.log.Printf("http: TLS handshake error from %s: %v", c.RemoteAddr(), err)
	}
	return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// write sends e as a whole HTTP/1.1 response that closes the connection, within
// refuseTimeout.
func write(c net.Conn, e *rerr.Error) {
	status := rerr.HTTPStatus(e)
	body := e.JSON()
	head := "HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\nContent-Type: application/json\r\nX-Rivet-Error: " +
		e.Key() + "\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	_ = c.SetWriteDeadline(time.Now().Add(refuseTimeout))
	_, _ = c.Write(append([]byte(head), body...))
}

// TLS is the connection's TLS state once its handshake is done, as net/http gives it in
// r.TLS; nil without TLS.
func (c *Conn) TLS() *tls.ConnectionState {
	if c.tls == nil {
		return nil
	}
	c.tlsOnce.Do(func() {
		st := c.tls.ConnectionState()
		c.tlsState = &st
	})
	return c.tlsState
}

type connKey struct{}

// ConnContext is an http.Server's ConnContext that lets Handler find the connection.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if hc, ok := c.(*Conn); ok {
		return context.WithValue(ctx, connKey{}, hc)
	}
	return ctx
}

// Handler serves h on a server of Conns (ConnContext, Rearm): it marks the head served, so
// that what follows is the handler's to write, and fills r.TLS for a Conn with TLS (net/http
// fills it only for a *tls.Conn it serves itself).
func Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(*Conn); ok {
			c.head.Store(false)
			if r.TLS == nil {
				r.TLS = c.TLS()
			}
		}
		h.ServeHTTP(w, r)
	})
}

// Rearm is an http.Server's ConnState hook (or part of one): a connection waiting for its
// next request counts that request's head.
func Rearm(c net.Conn, st http.ConnState) {
	if hc, ok := c.(*Conn); ok && st == http.StateIdle {
		hc.Arm()
	}
}
