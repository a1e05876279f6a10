package connlimit

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/berthhq/berth/pkg/rerr"
)

// Sockets caps the WebSockets one client holds open: gateway WebSockets and runner and envoy
// sockets alike. A WebSocket counts from its upgrade request until its connection closes;
// one whose upgrade the handler refused stops counting when the handler returns.
type Sockets struct {
	max int
	key func(*http.Request) string // the client a request counts for

	mu   sync.Mutex
	open map[string]int
}

// NewSockets returns a cap of max WebSockets per client as key names it; max ≤ 0 returns
// nil, whose Wrap lets every request through.
func NewSockets(max int, key func(*http.Request) string) *Sockets {
	if max <= 0 {
		return nil
	}
	return &Sockets{max: max, key: key, open: map[string]int{}}
}

// Wrap refuses a WebSocket upgrade over its client's cap with 429 guard.too_many_websockets,
// before next sees it; other requests go to next untouched.
func (s *Sockets) Wrap(next http.Handler) http.Handler {
	if s == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isUpgrade(r) {
			next.ServeHTTP(w, r)
			return
		}
		key := s.key(r)
		if !s.acquire(key) {
			e := rerr.GuardTooManyWebsockets(s.max)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Rivet-Error", e.Key())
			w.WriteHeader(rerr.HTTPStatus(e))
			_, _ = w.Write(e.JSON())
			return
		}
		var once sync.Once
		release := func() { once.Do(func() { s.release(key) }) }
		hw := &hijackWriter{ResponseWriter: w, release: release}
		next.ServeHTTP(hw, r)
		if !hw.hijacked {
			release()
		}
	})
}

func (s *Sockets) acquire(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[key] >= s.max {
		return false
	}
	s.open[key]++
	return true
}

func (s *Sockets) release(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[key] <= 1 {
		delete(s.open, key) // the table holds only clients with sockets open
	} else {
		s.open[key]--
	}
}

// Open is the number of WebSockets counted for key.
func (s *Sockets) Open(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open[key]
}

// isUpgrade reports whether r asks for a WebSocket.
func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// hijackWriter hands out the hijacked connection with release on its Close, and records
// that it was hijacked.
type hijackWriter struct {
	http.ResponseWriter
	release  func()
	hijacked bool
}

func (w *hijackWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.hijacked = true
	return &conn{Conn: c, release: w.release}, brw, nil
}
