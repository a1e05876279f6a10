package runner

import (
	"context"
	"errors"
	"log/slog"
	"time"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// Actor is one generation of an actor hosted by the runner: Config.Actors makes a new value
// for every start the engine commands (a wake after sleep is a new generation, so a new value).
// Its state lives in KV (ActorContext.KV), never only in memory: the next generation may run
// on another runner.
//
// Start is called once, on a goroutine of its own; the runner reports the actor Running to
// the engine when Start returns nil, so the engine routes requests to it only once it is
// ready. Start must return within the engine's actor start threshold (30 s by default),
// else the engine counts the actor as lost; its ctx ends when a stop is asked meanwhile. An
// error (or a panic) from Start reports the actor Stopped with code ERROR and the error's
// text, and Stop is not called.
//
// Stop is called once after a successful Start, when the engine stops the actor (sleep,
// destroy, drain, or a new generation replacing it) or the runner lost it; the runner then
// reports it Stopped, unless the engine had given it away. KV works in Stop (but for an
// actor the runner lost, whose KV calls fail with ErrActorStopped). Its ctx ends at
// the engine's actor stop threshold (from ToClientInit), or when the runner stops for good.
//
// An actor may also implement http.Handler (requests through the gateway, answered whole)
// and WebSocketHandler (WebSockets through the gateway). Both are served only between a
// successful Start and the end of Stop; requests for an actor that is not (or no longer)
// running are answered 503 with x-rivet-error: runner.actor_not_found, which the gateway
// retries. An actor without ServeHTTP answers 501.
type Actor interface {
	Start(ctx context.Context, a *ActorContext) error
	Stop(ctx context.Context, a *ActorContext) error
}

// WebSocketHandler is implemented by actors that accept WebSockets through the gateway.
// ServeWebSocket runs on a goroutine of its own for one socket, which is open when it is
// called; when it returns, the socket is closed with 1000 unless it was closed already. Its
// ctx ends when the actor has stopped (after Stop). An actor without it has each socket
// closed with 1011 "websocket not supported" right after the open.
type WebSocketHandler interface {
	ServeWebSocket(ctx context.Context, ws *WebSocket)
}

// ErrActorStopped is returned by ActorContext calls once the instance has stopped (its Stopped
// event is sent, or the runner dropped it), and by KV calls of an instance the runner lost.
var ErrActorStopped = errors.New("runner: actor stopped")

// ActorContext is an actor instance's handle on the runner: its identity, its KV, and the
// calls that change its lifecycle. It is safe for concurrent use and stays valid after the
// instance stopped (calls then return ErrActorStopped).
type ActorContext struct {
	in *instance
}

// ID is the actor id.
func (a *ActorContext) ID() string { return a.in.id }

// Name is the actor name (a key of Config.Actors).
func (a *ActorContext) Name() string { return a.in.cfg.Name }

// Key is the actor's key, if it was created with one.
func (a *ActorContext) Key() (string, bool) {
	if a.in.cfg.Key == nil {
		return "", false
	}
	return *a.in.cfg.Key, true
}

// Generation counts the actor's starts: 0 at creation, one more at every wake or reschedule.
func (a *ActorContext) Generation() uint32 { return a.in.gen }

// CreateTs is when the engine placed this generation (the start command's createTs).
func (a *ActorContext) CreateTs() time.Time { return time.UnixMilli(a.in.cfg.CreateTs) }

// Input is the input the actor was created with (the API's base64 input, decoded), or nil.
// Every generation gets the same input. The caller must not change it.
func (a *ActorContext) Input() []byte { return a.in.cfg.Input }

// Context ends when the runner begins to stop this instance (before Stop is called): the
// lifetime of work the actor runs in the background.
func (a *ActorContext) Context() context.Context { return a.in.life }

// Logger is the runner's logger with the actor's id, name and generation.
func (a *ActorContext) Logger() *slog.Logger { return a.in.log }

// KV is the actor's key-value store in the engine.
func (a *ActorContext) KV() *KV { return &KV{in: a.in} }

// Sleep asks the engine to put the actor to sleep (EventActorIntent Sleep): the engine
// answers with a stop, and wakes a new generation on the next request or at the alarm.
// It returns once the intent is queued, before the stop.
func (a *ActorContext) Sleep() error {
	return a.in.emit(proto.EventActorIntent{Intent: proto.ActorIntentSleep{}}, false)
}

// Destroy asks the engine to destroy the actor (EventActorIntent Stop): the engine answers
// with a stop, the runner reports Stopped with code OK, and the actor and its KV are gone.
// It returns once the intent is queued.
func (a *ActorContext) Destroy() error {
	return a.in.emit(proto.EventActorIntent{Intent: proto.ActorIntentStop{}}, true)
}

// SetAlarm asks the engine to start the actor at t if it is asleep then (EventActorSetAlarm).
// It replaces an earlier alarm. The engine does not call a running actor at t: a running
// actor keeps its own timer.
func (a *ActorContext) SetAlarm(t time.Time) error {
	ts := t.UnixMilli()
	return a.in.emit(proto.EventActorSetAlarm{AlarmTs: &ts}, false)
}

// ClearAlarm removes the alarm.
func (a *ActorContext) ClearAlarm() error {
	return a.in.emit(proto.EventActorSetAlarm{}, false)
}

type actorCtxKey struct{}

// FromContext returns the actor of a context given to Start, Stop, ServeHTTP (the request's)
// or ServeWebSocket.
func FromContext(ctx context.Context) (*ActorContext, bool) {
	a, ok := ctx.Value(actorCtxKey{}).(*ActorContext)
	return a, ok
}
