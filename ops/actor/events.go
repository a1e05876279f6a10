package actor

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	proto "github.com/berthhq/berth/pkg/protocol/runner"
	"github.com/berthhq/berth/pkg/udb"
)

// EventsInput is one ToServerEvents from a runner socket, or one ToRivetEvents from an
// envoy socket (in the runner protocol's shape: the events are the same).
type EventsInput struct {
	Host   Host
	Events []proto.EventWrapper
	NowMs  int64
	Config Config
}

// EventsOutput is what applying the events asks of the engine, and the checkpoints to
// acknowledge (the last event of each actor generation seen, applied or not).
type EventsOutput struct {
	Effects Effects
	Acks    []proto.ActorCheckpoint
}

// ApplyEvents applies a host's events in order. An event is applied once: its
// generation must be the actor's current one, on this host, and its index above the
// last applied (the host resends unacknowledged events after every reconnect). Events
// that do not apply are acknowledged all the same, so the runner forgets them.
func ApplyEvents(ctx context.Context, tx udb.Transaction, in EventsInput) (EventsOutput, error) {
	m := newMachine(ctx, tx, in.Config, in.NowMs)
	loaded := map[id.ID]*actor{}
	var changed []*actor
	var acks []proto.ActorCheckpoint
	for _, ev := range in.Events {
		acks = ackAfter(acks, ev.Checkpoint)
		aid, err := id.Parse(ev.Checkpoint.ActorID)
		if err != nil {
			continue // not an actor id: nothing it could apply to
		}
		a, ok := loaded[aid]
		if !ok {
			var found bool
			if a, found, err = m.load(aid); err != nil {
				return EventsOutput{}, err
			}
			if !found {
				continue
			}
			loaded[aid] = a
		}
		st := &a.st
		if !hostedOn(*st, in.Host) || ev.Checkpoint.Generation != st.Generation ||
			ev.Checkpoint.Index <= st.LastEventIdx {
			continue
		}
		st.LastEventIdx = ev.Checkpoint.Index
		if err := m.event(a, ev.Inner); err != nil {
			return EventsOutput{}, err
		}
		if !slices.Contains(changed, a) {
			changed = append(changed, a)
		}
	}
	for _, a := range changed {
		m.save(a)
	}
	return EventsOutput{Effects: *m.eff, Acks: acks}, nil
}

// ackAfter records cp as the last checkpoint of its actor generation.
func ackAfter(acks []proto.ActorCheckpoint, cp proto.ActorCheckpoint) []proto.ActorCheckpoint {
	for i, a := range acks {
		if a.ActorID == cp.ActorID && a.Generation == cp.Generation {
			acks[i].Index = max(a.Index, cp.Index)
			return acks
		}
	}
	return append(acks, cp)
}

// event applies one event of the actor's current placement.
func (m *machine) event(a *actor, e proto.Event) error {
	st := &a.st
	switch e := e.(type) {
	case proto.EventActorStateUpdate:
		switch s := e.State.(type) {
		case proto.ActorStateRunning:
			if st.Phase != keys.PhaseStarting {
				return nil // already running, or told to stop meanwhile
			}
			st.Phase = keys.PhaseRunning
			st.Deadline = nil
			st.ConnectableTs = m.ts()
			if st.StartTs == nil {
				st.StartTs = m.ts()
			}
			st.Error = nil
			m.eff.Ready = append(m.eff.Ready, a.id)
		case proto.ActorStateStopped:
			return m.stopped(a, s)
		}
	case proto.EventActorIntent:
		if st.Phase != keys.PhaseRunning && st.Phase != keys.PhaseStarting {
			return nil // a stop is already under way
		}
		switch e.Intent.(type) {
		case proto.ActorIntentSleep:
			m.sendStop(a, keys.StopSleep)
		case proto.ActorIntentStop:
			m.sendStop(a, keys.StopIntent)
		}
	case proto.EventActorSetAlarm:
		st.AlarmTs = e.AlarmTs
	}
	return nil
}

// stopped applies the runner's report that the actor stopped.
func (m *machine) stopped(a *actor, s proto.ActorStateStopped) error {
	st := &a.st
	switch st.StopReason {
	case keys.StopSleep:
		// Runner 2.2.1 reports ERROR for a sleep stop: a normal sleep all the same.
		if st.WillWake || m.alarmDue(a) {
			return m.reschedule(a, false)
		}
		return m.sleep(a, nil)
	case keys.StopIntent, keys.StopDestroy:
		return m.destroy(a)
	case keys.StopGoingAway:
		return m.reschedule(a, false)
	case keys.StopDrain:
		return m.drained(a)
	}
	if s.Code == proto.StopCodeOK {
		return m.destroy(a) // a graceful exit
	}
	fields := map[string]any{}
	if s.Message != nil {
		fields["message"] = truncate(*s.Message, 4096)
	}
	return m.crashed(a, errorWith("crashed", fields))
}

// drained applies the crash policy to an actor its draining runner stopped, without an
// error: it sleeps, is placed again or is destroyed.
func (m *machine) drained(a *actor) error {
	switch a.st.CrashPolicy {
	case CrashRestart:
		return m.reschedule(a, false)
	case CrashDestroy:
		return m.destroy(a)
	}
	if a.st.WillWake || m.alarmDue(a) {
		return m.reschedule(a, false)
	}
	return m.sleep(a, nil)
}

// crashed applies the crash policy to an actor that stopped with an error or was lost.
func (m *machine) crashed(a *actor, errJSON json.RawMessage) error {
	return m.crashedAs(a, errJSON, a.st.CrashPolicy)
}

// crashedAs is crashed with the given policy.
func (m *machine) crashedAs(a *actor, errJSON json.RawMessage, policy string) error {
	switch policy {
	case CrashRestart:
		a.st.Error = errJSON
		return m.reschedule(a, true)
	case CrashDestroy:
		a.st.Error = errJSON
		return m.destroy(a)
	default:
		if m.alarmDue(a) {
			a.st.Error = errJSON
			return m.reschedule(a, false)
		}
		return m.sleep(a, errJSON)
	}
}

// alarmDue reports whether a's alarm time has come.
func (m *machine) alarmDue(a *actor) bool { return a.st.AlarmTs != nil && *a.st.AlarmTs <= m.now }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// AckCommandsInput is one ToServerAckCommands from a runner socket (or ToRivetAckCommands
// from an envoy's).
type AckCommandsInput struct {
	Host        Host
	Checkpoints []proto.ActorCheckpoint
}

// AckCommands clears the host's stored commands up to each checkpoint.
func AckCommands(ctx context.Context, tx udb.Transaction, in AckCommandsInput) error {
	for _, cp := range in.Checkpoints {
		aid, err := id.Parse(cp.ActorID)
		if err != nil {
			continue
		}
		tx.ClearRange(in.Host.commandsUpTo(aid, cp.Generation, cp.Index))
	}
	return nil
}
