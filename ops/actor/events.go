package actor

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// EventsInput is one batch of a host's events (a runner's ToServerEvents, an envoy's
// ToRivetEvents).
type EventsInput struct {
	Host   Host
	Events []Event
	NowMs  int64
	Config Config
}

// EventsOutput is what applying the events asks of the engine, and the checkpoints to
// acknowledge (the last event of each actor generation seen, applied or not).
type EventsOutput struct {
	Effects Effects
	Acks    []Checkpoint
}

// ApplyEvents applies a host's events in order. An event is applied once: its
// generation must be the actor's current one, on this host, and its index above the
// last applied (the host resends unacknowledged events after every reconnect). Events
// that do not apply are acknowledged all the same, so the runner forgets them.
func ApplyEvents(ctx context.Context, tx udb.Transaction, in EventsInput) (EventsOutput, error) {
	m := newMachine(ctx, tx, in.Config, in.NowMs)
	prefetchStates(ctx, tx, eventActors(in.Events)) // a busy host reports many actors at once
	loaded := map[id.ID]*actor{}
	var changed []*actor
	var acks []Checkpoint
	for _, ev := range in.Events {
		acks = ackAfter(acks, ev.Checkpoint)
		aid := ev.Checkpoint.ActorID
		a, ok := loaded[aid]
		if !ok {
			var found bool
			var err error
			if a, found, err = m.load(aid); err != nil {
				return EventsOutput{}, err
			}
			if !found {
				continue
			}
			loaded[aid] = a
		}
		st := &a.st
		if ev.Checkpoint.Generation != st.Generation || ev.Checkpoint.Index <= st.LastEventIdx {
			continue
		}
		if !hostedOn(*st, in.Host) {
			bound, err := m.bindServerless(a, in.Host)
			if err != nil {
				return EventsOutput{}, err
			}
			if !bound {
				continue
			}
		}
		st.LastEventIdx = ev.Checkpoint.Index
		if err := m.event(a, ev); err != nil {
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
func ackAfter(acks []Checkpoint, cp Checkpoint) []Checkpoint {
	for i, a := range acks {
		if a.ActorID == cp.ActorID && a.Generation == cp.Generation {
			acks[i].Index = max(a.Index, cp.Index)
			return acks
		}
	}
	return append(acks, cp)
}

// event applies one event of the actor's current placement.
func (m *machine) event(a *actor, e Event) error {
	st := &a.st
	switch e.Kind {
	case EventRunning:
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
	case EventStopped:
		return m.stopped(a, e)
	case EventSleepIntent, EventStopIntent:
		if st.Phase != keys.PhaseRunning && st.Phase != keys.PhaseStarting {
			return nil // a stop is already under way
		}
		if e.Kind == EventSleepIntent {
			m.sendStop(a, keys.StopSleep)
		} else {
			m.sendStop(a, keys.StopIntent)
		}
	case EventSetAlarm:
		st.AlarmTs = e.AlarmTs
	}
	return nil
}

// stopped applies the host's report e that the actor stopped.
func (m *machine) stopped(a *actor, e Event) error {
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
	if !e.Crashed {
		return m.destroy(a) // a graceful exit
	}
	fields := map[string]any{}
	if e.Message != nil {
		fields["message"] = truncate(*e.Message, 4096)
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

// AckCommandsInput is one acknowledgement of commands from a host (a runner's
// ToServerAckCommands, an envoy's ToRivetAckCommands).
type AckCommandsInput struct {
	Host        Host
	Checkpoints []Checkpoint
}

// AckCommands clears the host's stored commands up to each checkpoint.
func AckCommands(ctx context.Context, tx udb.Transaction, in AckCommandsInput) error {
	for _, cp := range in.Checkpoints {
		tx.ClearRange(in.Host.commandsUpTo(cp.ActorID, cp.Generation, cp.Index))
	}
	return nil
}

// eventActors are the actors events are about, in order, each once.
func eventActors(events []Event) []id.ID {
	var ids []id.ID
	seen := map[id.ID]bool{}
	for _, ev := range events {
		if aid := ev.Checkpoint.ActorID; !seen[aid] {
			seen[aid] = true
			ids = append(ids, aid)
		}
	}
	return ids
}
