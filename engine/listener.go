package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/berthhq/berth/engine/config"
	"github.com/berthhq/berth/engine/internal/headlimit"
	"github.com/berthhq/berth/engine/internal/multilisten"
)

// listener is one HTTP server on its own socket.
type listener struct {
	name   string
	ln     net.Listener
	srv    *http.Server
	served chan struct{} // closed when serve returns

	// fresh holds the connections accepted that have not begun a request: net/http's
	// Shutdown waits up to 5 s for those (an http.Transport's spare dial never sends one).
	mu    sync.Mutex
	fresh map[net.Conn]struct{}

	head headlimit.Limits
}

// track follows the connections that have not begun a request, and has a connection that
// waits for its next request count that request's head (headlimit).
func (l *listener) track(c net.Conn, st http.ConnState) {
	headlimit.Rearm(c, st)
	l.mu.Lock()
	defer l.mu.Unlock()
	if st == http.StateNew {
		l.fresh[c] = struct{}{}
	} else {
		delete(l.fresh, c)
	}
}

// closeFresh closes the connections that have not begun a request: at shutdown they have
// nothing in flight, and a client that sends one later retries elsewhere.
func (l *listener) closeFresh() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.fresh {
		_ = c.Close()
		delete(l.fresh, c)
	}
}

// serverLimits bound what every listener reads of a client: a request's head (its size and
// header count, and how long it may take) and a kept-alive connection's wait.
type serverLimits struct {
	head       headlimit.Limits
	readHeader time.Duration
	idle       time.Duration
}

// limitsOf is the configuration's serverLimits.
func limitsOf(g config.Guard) serverLimits {
	return serverLimits{
		head:       headlimit.Limits{MaxBytes: int(g.MaxHeaderBytes), MaxCount: int(g.MaxHeaderCount)},
		readHeader: config.Ms(g.ReadHeaderTimeoutMs),
		idle:       config.Ms(g.IdleTimeoutMs),
	}
}

// listen opens the listener name on addrs (config.ListenAddrs): the first must bind, the
// others (the IPv6 loopback beside the IPv4 one) are left out, with a log line, when they
// cannot. The caller may wrap l.ln before serving, serveHeads last.
func listen(ctx context.Context, name, key string, addrs []string, h http.Handler, lim serverLimits, log *slog.Logger) (*listener, error) {
	ln, skipped, err := multilisten.Listen(ctx, addrs)
	if err != nil {
		return nil, &ListenError{Listener: name, Addr: addrs[0], Key: key, Err: err}
	}
	for _, err := range skipped {
		log.Info("listener: an address left out", "server", name, "error", err)
	}
	l := &listener{
		name: name,
		ln:   ln,
		srv: &http.Server{
			Handler:           finishBody(headlimit.Handler(h)),
			ReadHeaderTimeout: lim.readHeader,
			IdleTimeout:       lim.idle,
			// A backstop: headlimit answers a head over lim.head before net/http reads this
			// much (its own answer is plain text).
			MaxHeaderBytes: lim.head.MaxBytes,
			ConnContext:    headlimit.ConnContext,
			ErrorLog:       slog.NewLogLogger(log.With("server", name).Handler(), slog.LevelWarn),
		},
		served: make(chan struct{}),
		fresh:  map[net.Conn]struct{}{},
		head:   lim.head,
	}
	l.srv.ConnState = l.track
	return l, nil
}

// ListenError is a listener that could not bind its address: the address is taken, say,
// or not one of this machine's. Key is the configuration section that sets the address
// (guard, api_peer or metrics), for the message to say what to change.
type ListenError struct {
	Listener string // api-public, api-peer or metrics
	Addr     string // the address that failed, "127.0.0.1:6421"
	Key      string // guard, api_peer or metrics
	Err      error
}

// Reason is the cause in a few words: "address already in use" rather than the whole
// system call.
func (e *ListenError) Reason() string {
	switch {
	case errors.Is(e.Err, syscall.EADDRINUSE):
		return "address already in use"
	case errors.Is(e.Err, syscall.EADDRNOTAVAIL):
		return "address not available on this machine"
	case errors.Is(e.Err, syscall.EACCES):
		return "permission denied (ports below 1024 need privileges)"
	}
	return e.Err.Error()
}

func (e *ListenError) Error() string {
	return fmt.Sprintf("the %s listener cannot bind %s: %s; change it with %s.port (or %s.host)",
		e.Listener, e.Addr, e.Reason(), e.Key, e.Key)
}

func (e *ListenError) Unwrap() error { return e.Err }

// serveHeads has l count the request heads it reads (headlimit), serving TLS with cfg on
// the connections (nil: plain HTTP) beneath the count, so that it counts the plaintext.
// It wraps the listener last.
func (l *listener) serveHeads(cfg *tls.Config) {
	hl := headlimit.New(l.ln, l.head, cfg)
	hl.ErrorLog = l.srv.ErrorLog
	l.ln = hl
}

// serve runs until the server is shut down (nil) or fails (the error).
func (l *listener) serve() error {
	defer close(l.served)
	if err := l.srv.Serve(l.ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("engine: %s stopped: %w", l.name, err)
	}
	return nil
}

// stopAll shuts the servers down together: they stop accepting at once, and in-flight
// requests get until ctx ends; connections still busy then are closed. It returns when every
// serve loop has returned.
func stopAll(ctx context.Context, ls ...*listener) error {
	errs := make([]error, len(ls))
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Go(func() {
			l.srv.RegisterOnShutdown(l.closeFresh)
			if err := l.srv.Shutdown(ctx); err != nil {
				_ = l.srv.Close()
				errs[i] = fmt.Errorf("%s: in-flight requests cut off: %w", l.name, err)
			}
			<-l.served
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
