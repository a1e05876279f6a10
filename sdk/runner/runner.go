package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// State is where a runner is in its life.
type State int32

const (
	StateNew          State = iota // made by New, not started
	StateConnecting                // started, before the first ToClientInit
	StateConnected                 // a socket is open and initialised
	StateReconnecting              // the socket dropped; waiting to dial again, or dialling
	StateStopping                  // Shutdown is draining or closing the socket
	StateStopped                   // stopped for good; Done is closed or closing
)

func (s State) String() string {
	switch s {
	case StateNew:
		return "new"
	case StateConnecting:
		return "connecting"
	case StateConnected:
		return "connected"
	case StateReconnecting:
		return "reconnecting"
	case StateStopping:
		return "stopping"
	case StateStopped:
		return "stopped"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// resendBatch bounds the events of one ToServerEvents frame when the unacked events are sent
// again after a reconnect (the engine's event demuxer takes 1024 per batch).
const resendBatch = 1024

// reasonShutdown is the close reason of a runner that shuts down (docs/protocol.md).
const reasonShutdown = "pegboard.runner_shutdown"

// Runner is one runner process's connection to the engine. Make it with New, connect it with
// Start, stop it with Shutdown. Its methods are safe for concurrent use.
//
// Goroutines: Start starts the supervisor (dial, serve, back off, repeat) and the hook
// goroutine; the supervisor owns each socket's reader and writer and waits for them, and
// waits for the hook goroutine before closing Done. The runner-lost timer's function only
// takes the lock and queues a hook.
type Runner struct {
	// Static after New.
	cfg       Config
	url       string
	protocols []string
	initFrame []byte
	wire      wire // the socket's protocol (wire.go)
	log       *slog.Logger
	hc        *http.Client
	ownHC     bool  // hc is the runner's own: its idle connections are closed at the end
	host      *host // hosts the actors of Config.Actors; nil without

	// life ends when the runner stops: it aborts dials, handshakes and backoff waits. An
	// initialised socket is never tied to it; it closes with a close frame.
	life    context.Context
	endLife context.CancelFunc

	ready chan struct{} // closed at the first ToClientInit
	done  chan struct{} // closed once every goroutine of the runner has ended

	hooks hookQueue

	// Lock order: mu, then a conn's outMu, then hooks.mu.
	mu struct {
		sync.Mutex
		state    State
		started  bool
		ready    bool  // a ToClientInit has come
		stopping bool  // no more dials: Shutdown, eviction, or a failed Start
		stopped  bool  // the supervisor is finishing; SendEvents refuses
		reason   error // why the runner stops; nil for Shutdown
		lastErr  error // the last socket's error

		runnerID           string
		lostThreshold      int64 // ms, from the last ToClientInit
		actorStopThreshold int64 // ms, from the last ToClientInit (v6+; 0 unknown)
		conn               *conn // the initialised socket, nil when none
		draining           bool  // a graceful Shutdown sent ToServerStopping

		// kv holds the KV requests without answer; tunnelOut the tunnel messages given
		// while disconnected. Both are sent after each ToClientInit, after the events.
		kv        kvState
		tunnelOut []proto.ToServerTunnelMessage

		// unacked holds every event given to SendEvents, in order, until a
		// ToClientAckEvents covers it; all are sent again after each ToClientInit.
		unacked []proto.EventWrapper
		// cmdAcks holds the last command checkpoint per actor received since the last
		// ToServerAckCommands.
		cmdAcks map[string]proto.ActorCheckpoint

		// lost is the runner-lost timer, running while the runner is disconnected after an
		// init. lostEpoch grows whenever it is stopped, so that a timer that fired while
		// being stopped does nothing.
		lost      *time.Timer
		lostEpoch uint64
	}
}

// New checks cfg and returns a runner ready to Start. An invalid cfg gives every violation
// at once, each a *ConfigError naming its field.
func New(cfg Config) (*Runner, error) {
	c, u, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	w := newWire(c)
	u = withPath(u, w)
	u.RawQuery = w.query(c).Encode()
	init := proto.ToServerInit{Name: c.Name, Version: c.Version, TotalSlots: c.TotalSlots}
	if c.Metadata != nil {
		md := string(c.Metadata)
		init.Metadata = &md
	}
	for _, name := range sortedKeys(c.PrepopulateActorNames) {
		md := "{}"
		if m := c.PrepopulateActorNames[name]; m != nil {
			md = string(m)
		}
		init.PrepopulateActorNames = append(init.PrepopulateActorNames, proto.ActorName{Name: name, Metadata: md})
	}
	frame, err := w.initFrame(init)
	if err != nil {
		return nil, fmt.Errorf("runner: encode the init: %w", err)
	}
	r := &Runner{
		cfg:       c,
		url:       u.String(),
		protocols: []string{"rivet"},
		initFrame: frame,
		wire:      w,
		log:       c.Logger.With("runner_name", c.Name, "runner_key", c.Key),
		hc:        c.HTTPClient,
		ready:     make(chan struct{}),
		done:      make(chan struct{}),
		hooks:     hookQueue{wake: make(chan struct{}, 1)},
	}
	if ew, ok := w.(*envoyWire); ok {
		ew.window = r.responseWindow
	}
	if c.Token != "" {
		r.protocols = append(r.protocols, "rivet_token."+c.Token)
	}
	if r.hc == nil {
		r.ownHC = true
		// Not http.DefaultTransport: its idle connections would outlive the runner, and its
		// HTTP/2 attempt cannot carry a WebSocket upgrade.
		r.hc = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConns:        1,
		}}
	}
	r.life, r.endLife = context.WithCancel(context.Background())
	r.mu.cmdAcks = map[string]proto.ActorCheckpoint{}
	if len(c.Actors) > 0 {
		r.host = newHost(r, c.Actors)
		r.cfg.Hooks = r.host.hooks(r.cfg.Hooks)
	}
	return r, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Key is the runner key the runner connects with (Config.Key or the drawn UUID).
func (r *Runner) Key() string { return r.cfg.Key }

// RunnerID is the id the engine gave at the last ToClientInit, or "" before the first.
func (r *Runner) RunnerID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.runnerID
}

// State is where the runner is now.
func (r *Runner) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.state
}

// UnackedEvents is how many events wait for the engine's acknowledgement.
func (r *Runner) UnackedEvents() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.mu.unacked)
}

// Done is closed when the runner has stopped for good and all its goroutines and hooks have
// ended: after Shutdown, eviction, or a failed Start.
func (r *Runner) Done() <-chan struct{} { return r.done }

// Err is why the runner stopped, once Done is closed: nil after Shutdown, a *CloseError for
// eviction, or the error Start returned.
func (r *Runner) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.reason
}

// Start connects and returns once the engine has answered ToServerInit, or with an error.
// Until then it retries with backoff, except after an answer that no retry can change (a
// refused token, an unknown namespace, an unsupported protocol version), which it returns at
// once. If ctx ends first, the runner stops and Start returns ctx's error with the last
// attempt's. A runner that failed to start is stopped: make a new one to try again. After
// Start, ctx no longer matters; the runner runs until Shutdown or eviction.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	switch {
	case r.mu.stopping:
		r.mu.Unlock()
		return ErrStopped
	case r.mu.started:
		r.mu.Unlock()
		return errors.New("runner: Start called twice")
	}
	r.mu.started = true
	r.mu.state = StateConnecting
	r.mu.Unlock()

	hooksDone := make(chan struct{})
	go func() {
		defer close(hooksDone)
		r.hooks.run()
	}()
	go r.supervise(hooksDone)

	select {
	case <-r.ready:
		return nil
	case <-r.done:
	case <-ctx.Done():
		r.mu.Lock()
		if r.mu.ready {
			// Connected as ctx ended (select picks either when both are ready): the runner
			// runs, and Run's graceful shutdown follows, with its drain.
			r.mu.Unlock()
			return nil
		}
		reason := fmt.Errorf("runner: not connected when Start's context ended: %w", ctx.Err())
		if r.mu.lastErr != nil {
			reason = fmt.Errorf("%w; last attempt: %w", reason, r.mu.lastErr)
		}
		r.mu.Unlock()
		r.stop(reason)
		<-r.done
	}
	select {
	case <-r.ready:
		return nil // connected just as it stopped; Err tells why it stopped
	default:
	}
	if err := r.Err(); err != nil {
		return err
	}
	return ErrStopped
}

// Shutdown stops the runner for good. Graceful (immediate false, the SIGTERM path): if a
// socket is open it sends ToServerStopping, so that the engine stops the runner's actors,
// waits until Hooks.ActiveActors reports 0 (checking every ShutdownPollInterval), the
// socket ends, or ShutdownTimeout passes, then closes the socket with 1000
// pegboard.runner_shutdown. Immediate: it closes at once. Either way no reconnect follows.
// Shutdown returns nil once Done is closed, or ctx's error if ctx ends first, after
// dropping the socket without a close handshake; Done then closes soon after, unless a hook
// is blocked.
func (r *Runner) Shutdown(ctx context.Context, immediate bool) error {
	r.mu.Lock()
	if !r.mu.started {
		first := !r.mu.stopping
		r.mu.started, r.mu.stopping, r.mu.stopped = true, true, true
		r.mu.state = StateStopped
		r.mu.Unlock()
		if first {
			r.endLife()
			if h := r.cfg.Hooks.OnShutdown; h != nil {
				h(nil)
			}
			close(r.done)
		}
		return nil
	}
	first := !r.mu.stopping
	c := r.mu.conn
	drain := first && !immediate && c != nil
	if first {
		r.mu.stopping = true
		r.mu.state = StateStopping
		r.stopLostLocked()
		if drain {
			r.mu.draining = true
			c.send(proto.ToServerStopping{})
		}
	}
	r.mu.Unlock()
	r.endLife()
	if first {
		if drain {
			r.log.Info("runner: draining: sent ToServerStopping")
			r.waitActors(ctx, c)
		}
		if c != nil {
			c.requestClose()
		}
	}
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		r.mu.Lock()
		c := r.mu.conn
		r.mu.Unlock()
		if c != nil {
			c.drop()
		}
		return fmt.Errorf("runner: shutdown: %w", ctx.Err())
	}
}

// closeGrace is what Run gives Shutdown beyond ShutdownTimeout: the close handshake takes at
// most 10 s (5 s to write the close frame, 5 s for the answer).
const closeGrace = 15 * time.Second

// Run starts the runner and serves until ctx ends, then shuts down gracefully, giving it
// ShutdownTimeout plus 15 s; or until the runner stops by itself (eviction), returning Err.
// With signal.NotifyContext it is the SIGTERM path of the reference client:
//
//	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
//	defer stop()
//	err := r.Run(ctx) // on SIGTERM: ToServerStopping, wait for the actors, close 1000
//
// If ctx ends before the first connection, Run returns Start's error.
func (r *Runner) Run(ctx context.Context) error {
	if err := r.Start(ctx); err != nil {
		return err
	}
	select {
	case <-r.done:
		return r.Err()
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.ShutdownTimeout+closeGrace)
	defer cancel()
	return r.Shutdown(sctx, false)
}

// waitActors waits until no actor runs, c ends, ShutdownTimeout passes or ctx ends.
func (r *Runner) waitActors(ctx context.Context, c *conn) {
	active := r.cfg.Hooks.ActiveActors
	if active == nil {
		return
	}
	deadline := time.NewTimer(r.cfg.ShutdownTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(r.cfg.ShutdownPollInterval)
	defer tick.Stop()
	for {
		n := active()
		if n <= 0 {
			return
		}
		select {
		case <-tick.C:
		case <-c.ended:
			r.log.Info("runner: the socket ended while actors were stopping", "actors", n)
			return
		case <-deadline.C:
			r.log.Warn("runner: actors still running at the shutdown timeout; closing anyway",
				"actors", n, "timeout", r.cfg.ShutdownTimeout)
			return
		case <-ctx.Done():
			return
		}
	}
}

// stop ends the runner with reason (no drain), unless it is already stopping.
func (r *Runner) stop(reason error) {
	r.mu.Lock()
	if r.mu.stopping {
		r.mu.Unlock()
		return
	}
	r.mu.stopping = true
	r.mu.reason = reason
	r.mu.state = StateStopping
	r.stopLostLocked()
	c := r.mu.conn
	r.mu.Unlock()
	r.endLife()
	if c != nil {
		c.requestClose()
	}
}

// SendEvents queues events for the engine. Each stays in the runner until a
// ToClientAckEvents covers its checkpoint, and is sent again after every reconnect, so the
// engine must (and does) drop events it has seen by their (actor, generation, index). Events
// given while disconnected go out after the next ToClientInit. An event the protocol cannot
// carry is refused with an error and nothing is queued; after the runner stopped,
// SendEvents returns ErrStopped.
func (r *Runner) SendEvents(events ...proto.EventWrapper) error {
	if len(events) == 0 {
		return nil
	}
	if _, err := proto.EncodeToServer(proto.ToServerEvents(events), r.cfg.ProtocolVersion); err != nil {
		return fmt.Errorf("runner: SendEvents: %w", err)
	}
	events = slices.Clone(events)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.stopped {
		return ErrStopped
	}
	r.mu.unacked = append(r.mu.unacked, events...)
	if r.mu.conn != nil {
		r.mu.conn.send(proto.ToServerEvents(events))
	}
	return nil
}

// supervise dials, serves the socket until it ends, and backs off, until the runner stops.
func (r *Runner) supervise(hooksDone <-chan struct{}) {
	defer r.finish(hooksDone)
	attempt := 0
	for {
		r.mu.Lock()
		stopping := r.mu.stopping
		r.mu.Unlock()
		if stopping {
			return
		}
		initialised, err := r.connectOnce()
		if initialised {
			attempt = 0
		}

		r.mu.Lock()
		r.mu.lastErr = err
		var ce *CloseError
		switch {
		case r.mu.stopping:
		case errors.As(err, &ce) && ce.Evicted():
			r.log.Info("runner: evicted by the engine; not reconnecting", "reason", ce.Reason)
			r.mu.stopping, r.mu.reason = true, err
		case !r.mu.ready && fatalAtStart(err):
			r.mu.stopping, r.mu.reason = true, err
		}
		if initialised {
			if h := r.cfg.Hooks.OnDisconnected; h != nil {
				r.hooks.push(func() { h(err) })
			}
		}
		stopping = r.mu.stopping
		if !stopping {
			if r.mu.ready {
				r.mu.state = StateReconnecting
			}
			if initialised {
				r.armLostLocked()
			}
		}
		r.mu.Unlock()
		if stopping {
			return
		}

		d := backoff(attempt, r.cfg.BackoffInitial, r.cfg.BackoffMax, rand.Float64())
		attempt++
		r.log.Warn("runner: disconnected; reconnecting", "in", d, "attempt", attempt, "error", err)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.life.Done():
			t.Stop()
		}
	}
}

// finish queues OnShutdown as the last hook, waits for the hooks, and closes Done.
func (r *Runner) finish(hooksDone <-chan struct{}) {
	r.mu.Lock()
	r.mu.stopping, r.mu.stopped = true, true
	r.mu.state = StateStopped
	r.mu.conn = nil
	r.stopLostLocked()
	r.failKVLocked(ErrStopped)
	r.mu.tunnelOut = nil
	reason := r.mu.reason
	if h := r.cfg.Hooks.OnShutdown; h != nil {
		r.hooks.push(func() { h(reason) })
	}
	r.hooks.close()
	r.mu.Unlock()
	r.endLife()
	<-hooksDone
	if r.host != nil {
		r.host.close()
	}
	if r.ownHC {
		r.hc.CloseIdleConnections()
	}
	r.log.Info("runner: stopped", "reason", reason)
	close(r.done)
}

// goLive makes c the runner's socket after its ToClientInit: a changed runner id drops the
// old runner's events and asks the host to stop its actors; then every unacked event is
// queued again, in order, before any new one. False if the runner is stopping.
func (r *Runner) goLive(c *conn, init proto.ToClientInit) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.stopping {
		return false
	}
	if old := r.mu.runnerID; old != "" && old != init.RunnerID {
		r.log.Warn("runner: the engine gave a new runner id; the old runner's actors and events are dropped",
			"old_runner_id", old, "runner_id", init.RunnerID, "dropped_events", len(r.mu.unacked))
		r.mu.unacked = nil
		clear(r.mu.cmdAcks)
		if h := r.cfg.Hooks.OnForceStopActors; h != nil {
			r.hooks.push(func() { h(RunnerIDChanged) })
		}
	}
	r.mu.runnerID = init.RunnerID
	r.mu.lostThreshold = init.Metadata.RunnerLostThreshold
	r.stopLostLocked()
	r.mu.conn = c
	r.mu.state = StateConnected
	r.mu.actorStopThreshold = init.Metadata.ActorStopThreshold
	// As the reference client: KV requests, then events, then tunnel messages.
	kv := r.resendKVLocked(c)
	for b := range slices.Chunk(r.mu.unacked, resendBatch) {
		c.send(proto.ToServerEvents(slices.Clone(b)))
	}
	for _, m := range r.mu.tunnelOut {
		c.send(m)
	}
	r.mu.tunnelOut = nil
	if h := r.cfg.Hooks.OnConnected; h != nil {
		id := init.RunnerID
		r.hooks.push(func() { h(id) })
	}
	r.log.Info("runner: connected", "runner_id", init.RunnerID, "resent_events", len(r.mu.unacked), "resent_kv", kv,
		"runner_lost_threshold_ms", init.Metadata.RunnerLostThreshold)
	if !r.mu.ready {
		r.mu.ready = true
		close(r.ready)
	}
	return true
}

// draining reports whether a graceful Shutdown is draining the runner.
func (r *Runner) draining() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.draining
}

// actorStopThreshold is the engine's actor stop threshold in ms, 0 when unknown.
func (r *Runner) actorStopThreshold() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.actorStopThreshold
}

// goOffline forgets c as the runner's socket.
func (r *Runner) goOffline(c *conn) {
	r.mu.Lock()
	if r.mu.conn == c {
		r.mu.conn = nil
	}
	r.mu.Unlock()
}

// armLostLocked starts the runner-lost timer unless it runs or the threshold is 0.
func (r *Runner) armLostLocked() {
	if r.mu.lost != nil || r.mu.lostThreshold <= 0 {
		return
	}
	epoch := r.mu.lostEpoch
	threshold := r.mu.lostThreshold
	r.mu.lost = time.AfterFunc(time.Duration(threshold)*time.Millisecond, func() { r.runnerLost(epoch, threshold) })
}

func (r *Runner) stopLostLocked() {
	if r.mu.lost != nil {
		r.mu.lost.Stop()
		r.mu.lost = nil
	}
	r.mu.lostEpoch++
}

func (r *Runner) runnerLost(epoch uint64, threshold int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.stopping || epoch != r.mu.lostEpoch {
		return
	}
	r.log.Warn("runner: disconnected for longer than the runner-lost threshold; stopping local actors",
		"threshold_ms", threshold)
	if h := r.cfg.Hooks.OnForceStopActors; h != nil {
		r.hooks.push(func() { h(RunnerLost) })
	}
}

// commands records the commands for acknowledgement and hands them to the host.
func (r *Runner) commands(cmds proto.ToClientCommands) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range cmds {
		cur, ok := r.mu.cmdAcks[w.Checkpoint.ActorID]
		if !ok || after(w.Checkpoint, cur) {
			r.mu.cmdAcks[w.Checkpoint.ActorID] = w.Checkpoint
		}
	}
	if h := r.cfg.Hooks.OnCommands; h != nil && len(cmds) > 0 {
		cmds := slices.Clone([]proto.CommandWrapper(cmds))
		r.hooks.push(func() { h(cmds) })
	}
}

// takeCommandAcks returns the checkpoints to acknowledge, by actor id, and forgets them.
func (r *Runner) takeCommandAcks() []proto.ActorCheckpoint {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.mu.cmdAcks) == 0 {
		return nil
	}
	out := make([]proto.ActorCheckpoint, 0, len(r.mu.cmdAcks))
	for _, id := range sortedKeys(r.mu.cmdAcks) {
		out = append(out, r.mu.cmdAcks[id])
	}
	clear(r.mu.cmdAcks)
	return out
}

// ackEvents drops the events the engine acknowledged: for each checkpoint, the actor's events
// of older generations and those of its generation up to the index.
func (r *Runner) ackEvents(m proto.ToClientAckEvents) {
	acked := make(map[string]proto.ActorCheckpoint, len(m.LastEventCheckpoints))
	for _, cp := range m.LastEventCheckpoints {
		if cur, ok := acked[cp.ActorID]; !ok || after(cp, cur) {
			acked[cp.ActorID] = cp
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.unacked = slices.DeleteFunc(r.mu.unacked, func(e proto.EventWrapper) bool {
		cp, ok := acked[e.Checkpoint.ActorID]
		return ok && !after(e.Checkpoint, cp)
	})
}

// after reports whether checkpoint a comes after b (same actor).
func after(a, b proto.ActorCheckpoint) bool {
	if a.Generation != b.Generation {
		return a.Generation > b.Generation
	}
	return a.Index > b.Index
}

// hookQueue runs queued hooks one at a time, in order, on one goroutine.
type hookQueue struct {
	mu     sync.Mutex
	q      []func()
	closed bool
	wake   chan struct{} // capacity 1
}

// push queues f; after close it does nothing.
func (h *hookQueue) push(f func()) {
	h.mu.Lock()
	if !h.closed {
		h.q = append(h.q, f)
	}
	h.mu.Unlock()
	h.notify()
}

// close makes run return once the queued hooks have run.
func (h *hookQueue) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.notify()
}

func (h *hookQueue) notify() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

func (h *hookQueue) run() {
	for {
		h.mu.Lock()
		q, closed := h.q, h.closed
		h.q = nil
		h.mu.Unlock()
		for _, f := range q {
			f()
		}
		switch {
		case len(q) > 0:
		case closed:
			return
		default:
			<-h.wake
		}
	}
}
