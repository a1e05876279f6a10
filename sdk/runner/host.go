package runner

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// host runs the actors of a runner with Config.Actors. It gets the engine's commands and
// force stops through the runner's hooks (so in order, on the hook goroutine), and tunnel
// messages from the socket's reader; it never blocks either.
//
// Lifecycle of an instance (one actor generation), on its own goroutine (instance.run):
// wait for the previous generation to finish; Start; report Running unless a stop was asked
// meanwhile; wait for the stop; Stop; end its requests and sockets; report Stopped (code OK
// when the runner drains or after Destroy, ERROR otherwise, as runner 2.2.1), unless the
// stop was forced (the engine gave the actor away). Commands are applied idempotently: the
// start of a generation at or below the highest one started for the actor is ignored (the
// engine replays unconfirmed starts after a reconnect); a newer generation replaces the
// current instance, stopping it without a report first.
//
// Goroutines: each instance's run and each tunnel request's handler counts in wg; close
// (called by the runner once its hooks have ended) force-stops every instance and waits.
type host struct {
	r         *Runner
	factories map[string]func() Actor

	// ctx ends when the runner has stopped for good: it bounds Stop and every handler.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// Lock order: host.mu, then instance.mu, then Runner.mu.
	mu struct {
		sync.Mutex
		closed  bool
		actors  map[string]*instance  // the current instance of each actor id
		lastGen map[string]uint32     // highest generation started per actor id (never shrinks)
		tunnel  map[tunnelKey]*tunnel // requests and sockets in flight
	}
}

func newHost(r *Runner, factories map[string]func() Actor) *host {
	h := &host{r: r, factories: factories}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.mu.actors = map[string]*instance{}
	h.mu.lastGen = map[string]uint32{}
	h.mu.tunnel = map[tunnelKey]*tunnel{}
	return h
}

// hooks are the runner hooks the host takes over.
func (h *host) hooks(hk Hooks) Hooks {
	hk.OnCommands = h.commands
	hk.OnForceStopActors = h.forceStop
	hk.ActiveActors = h.active
	return hk
}

// active is how many instances have not finished (ActiveActors).
func (h *host) active() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.mu.actors)
}

// commands applies the engine's commands in order.
func (h *host) commands(cmds []proto.CommandWrapper) {
	for _, c := range cmds {
		switch cmd := c.Inner.(type) {
		case proto.CommandStartActor:
			h.start(c.Checkpoint, cmd)
		case proto.CommandStopActor:
			h.stop(c.Checkpoint)
		}
	}
}

func (h *host) start(cp proto.ActorCheckpoint, cmd proto.CommandStartActor) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.closed {
		return
	}
	if last, ok := h.mu.lastGen[cp.ActorID]; ok && cp.Generation <= last {
		h.r.log.Debug("runner: ignoring the start of an actor generation already started",
			"actor_id", cp.ActorID, "generation", cp.Generation, "last_generation", last)
		return
	}
	h.mu.lastGen[cp.ActorID] = cp.Generation
	prev := h.mu.actors[cp.ActorID]
	if prev != nil {
		h.r.log.Warn("runner: a new generation replaces a running actor", "actor_id", cp.ActorID,
			"generation", cp.Generation, "replaced_generation", prev.gen)
		prev.requestStop(true)
	}
	in := newInstance(h, cp, cmd.Config, prev)
	h.mu.actors[cp.ActorID] = in
	h.wg.Add(1)
	go in.run()
}

func (h *host) stop(cp proto.ActorCheckpoint) {
	h.mu.Lock()
	in := h.mu.actors[cp.ActorID]
	h.mu.Unlock()
	if in == nil || in.gen != cp.Generation {
		// The reference client ignores it too; the engine's stop threshold ends the wait.
		h.r.log.Warn("runner: stop command for an actor not running here", "actor_id", cp.ActorID, "generation", cp.Generation)
		return
	}
	in.requestStop(false)
}

// forceStop stops every instance without reporting: the engine has given them away.
func (h *host) forceStop(reason ForceStopReason) {
	h.r.failKV(fmt.Errorf("runner: %s: %w", reason, ErrActorStopped))
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, in := range h.mu.actors {
		in.requestStop(true)
	}
}

// close force-stops every instance and waits for all the host's goroutines.
func (h *host) close() {
	h.mu.Lock()
	h.mu.closed = true
	for _, in := range h.mu.actors {
		in.requestStop(true)
	}
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
}

// remove forgets in once it has finished, unless a newer instance took its place.
func (h *host) remove(in *instance) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.actors[in.id] == in {
		delete(h.mu.actors, in.id)
	}
}

// instance is one generation of an actor on this runner.
type instance struct {
	h   *host
	id  string
	gen uint32
	cfg proto.ActorConfig
	log *slog.Logger
	ac  *ActorContext

	prev *instance // the generation this one replaces; run waits for it
	// impl is the Actor, set by run before Start; others read it only after started closed.
	impl Actor

	// life ends when the stop begins (ActorContext.Context, Start's ctx).
	life    context.Context
	endLife context.CancelFunc
	// serving ends after Stop returned: the requests' and sockets' contexts.
	serving    context.Context
	endServing context.CancelFunc

	started chan struct{} // closed once Start returned; startOK is then set
	stopCh  chan struct{} // closed when a stop is asked
	done    chan struct{} // closed when the instance has finished

	mu struct {
		sync.Mutex
		nextEvent int64                // index of the next event of this generation
		startOK   bool                 // Start returned nil
		stopping  bool                 // a stop was asked
		forced    bool                 // that stop is not reported, and KV is refused
		destroyed bool                 // Destroy was called: Stopped reports OK
		gone      bool                 // Stopped was sent or dropped: no more events
		sockets   map[*tunnel]struct{} // open WebSockets
		// socketsClosed: closeSockets ran; no socket may open.
		socketsClosed bool
	}
}

func newInstance(h *host, cp proto.ActorCheckpoint, cfg proto.ActorConfig, prev *instance) *instance {
	in := &instance{
		h: h, id: cp.ActorID, gen: cp.Generation, cfg: cfg, prev: prev,
		log:     h.r.log.With("actor_id", cp.ActorID, "actor_name", cfg.Name, "generation", cp.Generation),
		started: make(chan struct{}), stopCh: make(chan struct{}), done: make(chan struct{}),
	}
	in.ac = &ActorContext{in: in}
	base := context.WithValue(h.ctx, actorCtxKey{}, in.ac)
	in.life, in.endLife = context.WithCancel(base)
	in.serving, in.endServing = context.WithCancel(base)
	in.mu.sockets = map[*tunnel]struct{}{}
	return in
}

// requestStop asks the instance to stop; forced, it is not reported and its KV is refused.
// A forced request upgrades one already under way.
func (in *instance) requestStop(forced bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if forced {
		in.mu.forced = true
	}
	if in.mu.stopping {
		return
	}
	in.mu.stopping = true
	close(in.stopCh)
	in.endLife()
}

func (in *instance) run() {
	h := in.h
	defer h.wg.Done()
	defer close(in.done)
	defer h.remove(in)
	defer in.endServing()
	defer in.endLife()

	if in.prev != nil {
		<-in.prev.done
		in.prev = nil
	}
	startErr := in.callStart()
	in.mu.Lock()
	in.mu.startOK = startErr == nil
	in.mu.Unlock()
	close(in.started)

	var stopErr error
	if startErr == nil {
		in.mu.Lock()
		stopping := in.mu.stopping
		in.mu.Unlock()
		if !stopping {
			if err := in.emit(proto.EventActorStateUpdate{State: proto.ActorStateRunning{}}, false); err != nil {
				in.log.Warn("runner: cannot report the actor running", "error", err)
			}
			in.log.Info("runner: actor started")
		}
		<-in.stopCh
		stopErr = in.callStop()
	} else {
		in.log.Warn("runner: actor failed to start", "error", startErr)
	}
	in.closeSockets()
	in.endServing()
	in.reportStopped(startErr, stopErr)
}

// callStart makes the actor and runs its Start; a panic is an error.
func (in *instance) callStart() (err error) {
	factory := in.h.factories[in.cfg.Name]
	if factory == nil {
		return fmt.Errorf("runner: no actor named %q in Config.Actors", in.cfg.Name)
	}
	defer recoverTo(&err, in.log, "Start")
	a := factory()
	if a == nil {
		return fmt.Errorf("runner: Config.Actors[%q] returned nil", in.cfg.Name)
	}
	in.impl = a
	return a.Start(in.life, in.ac)
}

// callStop runs the actor's Stop, bounded by the engine's actor stop threshold.
func (in *instance) callStop() (err error) {
	ctx := context.WithValue(in.h.ctx, actorCtxKey{}, in.ac)
	if ms := in.h.r.actorStopThreshold(); ms > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
		defer cancel()
	}
	defer recoverTo(&err, in.log, "Stop")
	return in.impl.Stop(ctx, in.ac)
}

// reportStopped sends Stopped unless the stop was forced, and refuses later events.
func (in *instance) reportStopped(startErr, stopErr error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.mu.gone {
		return
	}
	if in.mu.forced {
		in.mu.gone = true
		in.log.Info("runner: actor stopped; not reported, the engine gave it away")
		return
	}
	st := proto.ActorStateStopped{Code: proto.StopCodeError}
	if in.mu.destroyed || in.h.r.draining() {
		st.Code = proto.StopCodeOK
	}
	if err := firstErr(startErr, stopErr); err != nil {
		msg := err.Error()
		st.Message = &msg
	}
	if err := in.emitLocked(proto.EventActorStateUpdate{State: st}); err != nil {
		in.log.Warn("runner: cannot report the actor stopped", "error", err)
	}
	in.mu.gone = true
	in.log.Info("runner: actor stopped", "code", st.Code, "error", firstErr(startErr, stopErr))
}

// emit sends one event of this generation; destroy marks the Stopped to come as OK.
func (in *instance) emit(ev proto.Event, destroy bool) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if destroy && !in.mu.gone {
		in.mu.destroyed = true
	}
	return in.emitLocked(ev)
}

func (in *instance) emitLocked(ev proto.Event) error {
	if in.mu.gone || in.mu.forced {
		return ErrActorStopped
	}
	cp := proto.ActorCheckpoint{ActorID: in.id, Generation: in.gen, Index: in.mu.nextEvent}
	if err := in.h.r.SendEvents(proto.EventWrapper{Checkpoint: cp, Inner: ev}); err != nil {
		return err
	}
	in.mu.nextEvent++
	return nil
}

// ready waits until Start returned and reports whether the instance serves requests: Start
// succeeded and no stop began. A request admitted here is served until Stop returned.
func (in *instance) ready(ctx context.Context) bool {
	select {
	case <-in.started:
	case <-ctx.Done():
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.mu.startOK && !in.mu.stopping
}

// kvAllowed reports whether the instance may use KV: until it is reported stopped, and never
// after a forced stop.
func (in *instance) kvAllowed() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return !in.mu.gone && !in.mu.forced
}

func recoverTo(err *error, log *slog.Logger, what string) {
	if p := recover(); p != nil {
		log.Error("runner: actor "+what+" panicked", "panic", p, "stack", string(debug.Stack()))
		*err = fmt.Errorf("runner: actor %s panicked: %v", what, p)
	}
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
