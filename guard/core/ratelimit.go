package core

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

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

// Limiter admits requests by client IP. It is safe for concurrent use. Its table is an LRU
// of at most MaxIPs addresses: making room costs O(1), whatever a client sends.
type Limiter struct {
	cfg RateLimit
	now func() time.Time

	mu struct {
		sync.Mutex
		ips *simplelru.LRU[string, *ipState]
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
	l.mu.ips, _ = simplelru.NewLRU[string, *ipState](cfg.MaxIPs, nil) // a positive size cannot fail
	return l
}

// Acquire admits one request from ip, or returns 429 guard.rate_limit. On success the caller
// must call release once the request (or WebSocket) ends.
func (l *Limiter) Acquire(ip string) (release func(), err error) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	st, _ := l.mu.ips.Get(ip)
	if st != nil && st.inFlight == 0 && now.Sub(st.seen) >= l.cfg.TTL {
		st = nil
	}
	if st == nil {
		l.makeRoomLocked()
		st = &ipState{seen: now, windowStart: now}
		l.mu.ips.Add(ip, st)
	}
	if now.Sub(st.windowStart) >= l.cfg.Window {
		st.windowStart, st.requests = now, 0
	}
	if (l.cfg.Requests > 0 && st.requests >= l.cfg.Requests) || (l.cfg.InFlight > 0 && st.inFlight >= l.cfg.InFlight) {
		return nil, rerr.GuardRateLimit()
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

// busyTries bounds how many least recently used addresses with requests in flight make
// room is passed over for (each moves to the front), so that making room stays O(1).
const busyTries = 8

// makeRoomLocked frees a place in a full table: the least recently used address, passing
// over up to busyTries of them that have requests in flight. Only when even those are all
// busy does a busy one go (its requests' releases then change nothing the table holds).
func (l *Limiter) makeRoomLocked() {
	if l.mu.ips.Len() < l.cfg.MaxIPs {
		return
	}
	for range busyTries {
		ip, st, _ := l.mu.ips.GetOldest()
		if st.inFlight == 0 {
			break
		}
		l.mu.ips.Get(ip) // busy: to the front
	}
	l.mu.ips.RemoveOldest()
}

// Len is the number of addresses tracked.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.ips.Len()
}
