package engine

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berthhq/berth/engine/cluster"
)

// Graceful node shutdown (docs/design.md, "Graceful shutdown and ownership handoff"):
// SIGTERM or POST /shutdown on the internal listener starts a drain. Health turns 503 at
// once and new requests get 503 with Retry-After: 1 and Connection: close; requests
// already admitted finish; the runner sockets held here close with 1011 ws.going_away so
// their runners reconnect to another node at once (same runner key, so the same runner id
// and actors), and so do the envoy sockets (same envoy key) and the client WebSockets of
// the gateway; the node's ownership records, runners' and envoys', are released, at most
// node.releases at a time; the drain ends as soon as no socket, request or release is
// left, or after node.shutdown_drain_ms.

// shutdownSettings are the drain's bounds (node.releases, node.shutdown_drain_ms).
type shutdownSettings struct {
	Releases     int           // ownership releases in flight at most
	DrainTimeout time.Duration // the whole drain's bound
}

// ShutdownMode says what a drain does with the node's ownership records.
type ShutdownMode int

const (
	// Handoff releases every ownership record: the node leaves, peers take over at once.
	Handoff ShutdownMode = iota
	// Preserve keeps them: the same node id restarts at the same address.
	Preserve
)

func (m ShutdownMode) String() string {
	if m == Preserve {
		return "preserve"
	}
	return "handoff"
}

// admission is the drain flag and the count of admitted requests of the public listener.
type admission struct {
	draining atomic.Bool
	inflight atomic.Int64

	mu      sync.Mutex
	sockets map[*context.CancelFunc]struct{} // ends the admitted WebSocket requests
}

// closeSockets ends the WebSocket requests admitted so far (their handlers see their context
// end and close the client's socket): a drain cannot wait for connections that last for hours.
func (a *admission) closeSockets() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for c := range a.sockets {
		(*c)()
	}
}

// websockets is how many admitted WebSocket requests are running.
func (a *admission) websockets() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return int64(len(a.sockets))
}

func (a *admission) track(c *context.CancelFunc, add bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sockets == nil {
		a.sockets = map[*context.CancelFunc]struct{}{}
	}
	if add {
		a.sockets[c] = struct{}{}
	} else {
		delete(a.sockets, c)
	}
}

// wrap answers health and refuses new requests while draining, and counts the admitted ones.
func (a *admission) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		health := r.URL.Path == "/health" || r.URL.Path == "/health/ready"
		if a.draining.Load() {
			h := w.Header()
			h.Set("Connection", "close")
			h.Set("Content-Type", "application/json")
			if !health {
				h.Set("Retry-After", "1")
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			if health {
				_, _ = w.Write([]byte(`{"status":"draining"}`))
			} else {
				_, _ = w.Write([]byte(`{"group":"node","code":"draining","message":"This engine node is shutting down; retry on another node.","metadata":null}`))
			}
			return
		}
		if r.URL.Path == "/health/ready" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"status":"ok"}`))
			return
		}
		a.inflight.Add(1)
		defer a.inflight.Add(-1)
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			a.track(&cancel, true)
			defer a.track(&cancel, false)
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// shutdownHandler serves POST /shutdown on the internal listener: 200 {"ok":true}, then the
// drain starts (?handoff=preserve keeps ownership). It wants the admin token as a bearer
// token when one is configured.
func (e *Engine) shutdownHandler(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/shutdown":
		case BackupPath:
			e.backup(token, w, r)
			return
		case cluster.RelayPath:
			e.cluster.RelayHandler().ServeHTTP(w, r)
			return
		default:
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"group":"api","code":"unauthorized","message":"POST /shutdown needs the admin token.","metadata":null}`))
				return
			}
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			w.WriteHeader(http.StatusMethodNotAllowed)
			_, _ = w.Write([]byte(`{"group":"api","code":"method_not_allowed","message":"Use POST.","metadata":null}`))
			return
		}
		mode := Handoff
		for part := range strings.SplitSeq(r.URL.RawQuery, "&") {
			if part == "handoff=preserve" {
				mode = Preserve
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "mode": mode.String()})
		select {
		case e.shutdownReq <- mode:
		default: // a drain was asked for already
		}
	})
}

// DrainStatus is what a drain left when it ended.
type DrainStatus struct {
	Sockets   int64 // runner and envoy socket handlers still running
	Releasing int64 // ownership releases in flight
	Held      int   // ownership records still naming this node (handoff)
	Requests  int64 // admitted requests and relays still running
	TimedOut  bool
}

// Drain shuts the node down gracefully in mode, bounded by Options.Shutdown.DrainTimeout, and
// returns when it is done or the bound passed. The store and listeners stay open: the
// process is meant to exit right after (see Run).
func (e *Engine) Drain(mode ShutdownMode) DrainStatus {
	start := time.Now()
	deadline := start.Add(e.shutdown.DrainTimeout)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	e.log.Info("berth draining", "mode", mode.String(), "deadline_ms", e.shutdown.DrainTimeout.Milliseconds())
	e.admit.draining.Store(true)
	e.cluster.RefuseRelays()
	if mode == Preserve {
		e.cluster.Preserve()
	} else if err := e.cluster.Leave(ctx); err != nil {
		e.log.Warn("berth draining: clear node lease", "error", err)
	}
	busy := func() int64 { return e.admit.inflight.Load() + e.cluster.Relays() }
	// Requests admitted before the flag flipped may be tunnelled through the sockets held
	// here: they get a moment to finish before the sockets close.
	// WebSockets never finish on their own: only the other requests are waited for.
	grace := min(2*time.Second, e.shutdown.DrainTimeout/4)
	waitUntil(ctx, start.Add(grace), func() bool { return busy()-e.admit.websockets() == 0 })
	graceMs := time.Since(start).Milliseconds()
	// Client WebSockets are closed now (their clients reconnect through another node); HTTP
	// requests still running may finish until the deadline.
	e.admit.closeSockets()
	e.hosts.CloseSockets()
	sockets := e.hosts.Active
	released := make(chan struct{})
	if mode == Handoff {
		go func() {
			defer close(released)
			if err := e.cluster.ReleaseAll(ctx); err != nil && ctx.Err() == nil {
				e.log.Warn("berth draining: release ownership records", "error", err)
			}
		}()
	} else {
		close(released)
	}
	done := func() bool {
		select {
		case <-released:
		default:
			return false
		}
		return sockets() == 0 && e.cluster.Releasing() == 0 && busy() == 0
	}
	waitUntil(ctx, deadline, done)
	st := DrainStatus{Sockets: sockets(), Releasing: e.cluster.Releasing(), Requests: busy(), TimedOut: !done()}
	if mode == Handoff {
		hctx, hcancel := context.WithTimeout(context.Background(), time.Second)
		st.Held, _ = e.cluster.Held(hctx)
		hcancel()
	}
	if st.TimedOut {
		e.log.Warn(fmt.Sprintf("berth shutdown drain reached its %dms deadline", e.shutdown.DrainTimeout.Milliseconds()),
			"mode", mode.String(), "sockets", st.Sockets, "releasing", st.Releasing, "held", st.Held, "requests", st.Requests)
	}
	e.log.Info("berth drained", "mode", mode.String(), "elapsed_ms", time.Since(start).Milliseconds(), "grace_ms", graceMs,
		"sockets", st.Sockets, "releasing", st.Releasing, "held", st.Held, "requests", st.Requests, "timed_out", st.TimedOut)
	return st
}

// waitUntil polls cond every 10 ms until it holds, until, or ctx ends.
func waitUntil(ctx context.Context, until time.Time, cond func() bool) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !cond() && time.Now().Before(until) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
