package actor

import "github.com/berthhq/berth/pkg/id"

// The lifecycle talks to hosts in these types; the socket server translates them to and
// from each protocol's wire messages (docs/design.md, "Host sockets").

// Checkpoint is the place of a command or an event in the sequence of one actor
// generation: hosts acknowledge commands, and the engine events, up to a checkpoint.
type Checkpoint struct {
	ActorID    id.ID
	Generation uint32
	Index      int64
}

// Command is one command for an actor's host: Start it, or (Start nil) stop it.
type Command struct {
	Host       Host
	Checkpoint Checkpoint
	// Start is what the host needs to run the actor; nil for a stop.
	Start *Start
	// StopReason says why a stop stops the actor (envoys are told; runners are not).
	StopReason StopReason
}

// Start is the start of an actor generation.
type Start struct {
	Name     string
	Key      *string
	CreateTs int64
	Input    []byte // nil: the actor was created without input
	// Hibernating are the client WebSockets the gateway kept open while the actor slept,
	// for the host to restore.
	Hibernating []HibernatingRequest
}

// HibernatingRequest names a hibernating client WebSocket: the gateway that holds it and
// the request's id there.
type HibernatingRequest struct {
	GatewayID [4]byte
	RequestID [4]byte
}

// StopReason says why a host is told to stop an actor. The values are stored with the
// command (encodeStored) and match the envoy protocol's StopActorReason.
type StopReason uint8

const (
	StopReasonSleep     StopReason = 0 // the actor asked to sleep
	StopReasonIntent    StopReason = 1 // the actor asked to stop
	StopReasonDestroy   StopReason = 2 // destroyed through the API
	StopReasonGoingAway StopReason = 3 // its host is draining; the actor moves
	StopReasonLost      StopReason = 4 // the engine considers the actor lost
)

// Event is one report of a host about an actor.
type Event struct {
	Checkpoint Checkpoint
	Kind       EventKind
	// Crashed is set on EventStopped when the actor stopped with an error, Message its
	// message (if any).
	Crashed bool
	Message *string
	// AlarmTs is EventSetAlarm's time to wake the actor, in ms; nil clears the alarm.
	AlarmTs *int64
}

// EventKind is what an Event reports.
type EventKind uint8

const (
	EventRunning     EventKind = iota + 1 // the actor runs
	EventStopped                          // the actor stopped
	EventSleepIntent                      // the actor asks to sleep
	EventStopIntent                       // the actor asks to stop for good
	EventSetAlarm                         // the actor sets (or clears) its alarm
)
