package ui

import (
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Failed-login limits (see loginLimiter).
const (
	maxLoginFailures   = 10
	loginFailureWindow = time.Minute
	maxLoginClients    = 4096
)

// loginLimiter counts failed logins per client address: after maxLoginFailures in
// loginFailureWindow a client's logins are refused until the window ends, so a token cannot
// be guessed at the speed of the network. The table is bounded (least recently seen
// clients are forgotten first).
type loginLimiter struct {
	mu    sync.Mutex
	table *lru.Cache[string, failures]
	now   func() time.Time
}

type failures struct {
	count int
	since time.Time // start of the window
}

func newLoginLimiter(now func() time.Time) *loginLimiter {
	l := &loginLimiter{now: now}
	l.table, _ = lru.New[string, failures](maxLoginClients) // fails only for a size <= 0
	return l
}

// blocked reports whether client may not try to log in now.
func (l *loginLimiter) blocked(client string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.table.Peek(client)
	return ok && f.count >= maxLoginFailures && l.now().Sub(f.since) < loginFailureWindow
}

// failed records a failed login of client.
func (l *loginLimiter) failed(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f, ok := l.table.Get(client)
	if !ok || now.Sub(f.since) >= loginFailureWindow {
		f = failures{since: now}
	}
	f.count++
	l.table.Add(client, f)
}
