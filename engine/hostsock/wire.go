package hostsock

import (
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// Translation between the lifecycle's commands and events (ops/actor) and the runner
// protocol's; the envoy adapter goes through these and sdk/protocol/bridge.

// commandsToRunner is cmds as the runner protocol carries them: a stop's reason is not
// told to runners.
func commandsToRunner(cmds []actor.Command) []proto.CommandWrapper {
	out := make([]proto.CommandWrapper, len(cmds))
	for i, c := range cmds {
		out[i] = proto.CommandWrapper{Checkpoint: checkpointToRunner(c.Checkpoint), Inner: proto.CommandStopActor{}}
		if s := c.Start; s != nil {
			hrs := make([]proto.HibernatingRequest, len(s.Hibernating))
			for j, h := range s.Hibernating {
				hrs[j] = proto.HibernatingRequest{GatewayID: h.GatewayID, RequestID: h.RequestID}
			}
			out[i].Inner = proto.CommandStartActor{
				Config:              proto.ActorConfig{Name: s.Name, Key: s.Key, CreateTs: s.CreateTs, Input: s.Input},
				HibernatingRequests: hrs,
			}
		}
	}
	return out
}

func checkpointToRunner(c actor.Checkpoint) proto.ActorCheckpoint {
	return proto.ActorCheckpoint{ActorID: c.ActorID.String(), Generation: c.Generation, Index: c.Index}
}

func checkpointsToRunner(l []actor.Checkpoint) []proto.ActorCheckpoint {
	out := make([]proto.ActorCheckpoint, len(l))
	for i, c := range l {
		out[i] = checkpointToRunner(c)
	}
	return out
}

// checkpointFromRunner is c, or false when its actor id is not one: no actor has it.
func checkpointFromRunner(c proto.ActorCheckpoint) (actor.Checkpoint, bool) {
	aid, err := id.Parse(c.ActorID)
	return actor.Checkpoint{ActorID: aid, Generation: c.Generation, Index: c.Index}, err == nil
}

func checkpointsFromRunner(l []proto.ActorCheckpoint) []actor.Checkpoint {
	out := make([]actor.Checkpoint, 0, len(l))
	for _, c := range l {
		if cp, ok := checkpointFromRunner(c); ok {
			out = append(out, cp)
		}
	}
	return out
}

// eventsFromRunner is evs as the lifecycle takes them; an event of no actor id is dropped.
func eventsFromRunner(evs []proto.EventWrapper) []actor.Event {
	out := make([]actor.Event, 0, len(evs))
	for _, e := range evs {
		cp, ok := checkpointFromRunner(e.Checkpoint)
		if !ok {
			continue
		}
		ev := actor.Event{Checkpoint: cp}
		switch in := e.Inner.(type) {
		case proto.EventActorStateUpdate:
			switch s := in.State.(type) {
			case proto.ActorStateRunning:
				ev.Kind = actor.EventRunning
			case proto.ActorStateStopped:
				ev.Kind, ev.Crashed, ev.Message = actor.EventStopped, s.Code != proto.StopCodeOK, s.Message
			}
		case proto.EventActorIntent:
			ev.Kind = actor.EventSleepIntent
			if _, stop := in.Intent.(proto.ActorIntentStop); stop {
				ev.Kind = actor.EventStopIntent
			}
		case proto.EventActorSetAlarm:
			ev.Kind, ev.AlarmTs = actor.EventSetAlarm, in.AlarmTs
		}
		if ev.Kind != 0 {
			out = append(out, ev)
		}
	}
	return out
}
