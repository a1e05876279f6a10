package core

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/berthhq/berth/pkg/rerr"
)

// RateLimit is the per-client-IP admission of Rivet's guard: at most Requests per fixed
// Window and InFlight at once; state for at most MaxIPs addresses, each forgotten TTL after
// it was first seen. Zero fields take Rivet's values; a negative Requests or InFlight turns
// that limit off.
type RateLimit struct {
	Requests int
	Window   time.Duration
	InFlight int
	MaxIPs   int
	TTL      time.Duration
}

// Limiter admits requests by client IP. It is safe for concurrent use.
type Limiter struct {
	cfg RateLimit
	now func() time.Time

	mu struct {
		sync.Mutex
		ips map[string]*ipState
	}
}

type ipState struct {
	seen        time.Time // first seen: the entry expires TTL later
	windowStart time.Time
	requests    int
	inFlight    int
}

// NewLimiter returns a Limiter with cfg's limits (zero fields: 10,000 requests per 60 s,
// 2,000 in flight, 10,000 addresses kept for 1 h). now is the clock; nil means time.Now.
func NewLimiter(cfg RateLimit, now func() time.Time) *Limiter {
	if cfg.Requests == 0 {
		cfg.Requests = 10_000
	}
	if cfg.Window <= 0 {
		cfg.Window = 60 * time.Second
	}
	if cfg.InFlight == 0 {
		cfg.InFlight = 2_000
	}
	if cfg.MaxIPs <= 0 {
		cfg.MaxIPs = 10_000
	}
	if cfg.TTL <= 0 {
		cfg.TTL = time.Hour
	}
	if now == nil {
		now = time.Now
	}
	l := &Limiter{cfg: cfg, now: now}
	l.mu.ips = map[string]*ipState{}
	return l
}

// Acquire admits one request from ip, or returns 429 guard.rate_limit. On success the caller
// must call release once the request (or WebSocket) ends.
func (l *Limiter) Acquire(ip string) (release func(), err error) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.mu.ips[ip]
	if st != nil && st.inFlight == 0 && now.Sub(st.seen) >= l.cfg.TTL {
		delete(l.mu.ips, ip)
		st = nil
	}
	if st == nil {
		l.makeRoomLocked(now)
		st = &ipState{seen: now, windowStart: now}
		l.mu.ips[ip] = st
	}
	if now.Sub(st.windowStart) >= l.cfg.Window {
		st.windowStart, st.requests = now, 0
	}
	if (l.cfg.Requests > 0 && st.requests >= l.cfg.Requests) || (l.cfg.InFlight > 0 && st.inFlight >= l.cfg.InFlight) {
		return nil, rerr.New("guard", "rate_limit")
	}
	st.requests++
	st.inFlight++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			st.inFlight--
			l.mu.Unlock()
		})
	}, nil
}

// makeRoomLocked keeps the table under MaxIPs: expired idle entries go first, then any idle
// one (an address with requests in flight is never forgotten).
func (l *Limiter) makeRoomLocked(now time.Time) {
	if len(l.mu.ips) < l.cfg.MaxIPs {
		return
	}
	for ip, st := range l.mu.ips {
		if st.inFlight == 0 && now.Sub(st.seen) >= l.cfg.TTL {
			delete(l.mu.ips, ip)
		}
	}
	for ip, st := range l.mu.ips {
		if len(l.mu.ips) < l.cfg.MaxIPs {
			return
		}
		if st.inFlight == 0 {
			delete(l.mu.ips, ip)
		}
	}
}

// Len is the number of addresses tracked.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.mu.ips)
}

// ClientIP is the address requests are counted by: the first X-Forwarded-For entry, else the
// socket's address.
func ClientIP(r *http.Request) string {
	if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
		first, _, _ := strings.Cut(xff, ",")
		if first = strings.TrimSpace(first); first != "" {
			return first
		}
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}
