package bridge

import (
	ep "github.com/berthhq/berth/sdk/protocol/envoy"
	rp "github.com/berthhq/berth/sdk/protocol/runner"
)

// MARK: checkpoints, commands and events

// CheckpointToRunner and CheckpointToEnvoy convert a checkpoint (same fields).
func CheckpointToRunner(c ep.ActorCheckpoint) rp.ActorCheckpoint { return rp.ActorCheckpoint(c) }
func CheckpointToEnvoy(c rp.ActorCheckpoint) ep.ActorCheckpoint  { return ep.ActorCheckpoint(c) }

// CheckpointsToRunner and CheckpointsToEnvoy convert lists of checkpoints.
func CheckpointsToRunner(l []ep.ActorCheckpoint) []rp.ActorCheckpoint {
	return mapList(l, CheckpointToRunner)
}
func CheckpointsToEnvoy(l []rp.ActorCheckpoint) []ep.ActorCheckpoint {
	return mapList(l, CheckpointToEnvoy)
}

// CommandToEnvoy converts a command; a stop gets reason.
func CommandToEnvoy(c rp.CommandWrapper, reason ep.StopActorReason) ep.CommandWrapper {
	out := ep.CommandWrapper{Checkpoint: CheckpointToEnvoy(c.Checkpoint)}
	switch in := c.Inner.(type) {
	case rp.CommandStartActor:
		hrs := make([]ep.HibernatingRequest, len(in.HibernatingRequests))
		for i, h := range in.HibernatingRequests {
			hrs[i] = ep.HibernatingRequest{GatewayID: ep.GatewayID(h.GatewayID), RequestID: ep.RequestID(h.RequestID)}
		}
		out.Inner = ep.CommandStartActor{Config: ep.ActorConfig(in.Config), HibernatingRequests: hrs}
	default:
		out.Inner = ep.CommandStopActor{Reason: reason}
	}
	return out
}

// CommandToRunner converts an envoy command (the stop's reason is dropped; preloaded KV,
// which this engine does not send, is ignored).
func CommandToRunner(c ep.CommandWrapper) rp.CommandWrapper {
	out := rp.CommandWrapper{Checkpoint: CheckpointToRunner(c.Checkpoint)}
	switch in := c.Inner.(type) {
	case ep.CommandStartActor:
		hrs := make([]rp.HibernatingRequest, len(in.HibernatingRequests))
		for i, h := range in.HibernatingRequests {
			hrs[i] = rp.HibernatingRequest{GatewayID: rp.GatewayID(h.GatewayID), RequestID: rp.RequestID(h.RequestID)}
		}
		out.Inner = rp.CommandStartActor{Config: rp.ActorConfig(in.Config), HibernatingRequests: hrs}
	default:
		out.Inner = rp.CommandStopActor{}
	}
	return out
}

// EventToRunner converts an envoy event; ok is false for an event of no known kind.
func EventToRunner(e ep.EventWrapper) (rp.EventWrapper, bool) {
	out := rp.EventWrapper{Checkpoint: CheckpointToRunner(e.Checkpoint)}
	switch in := e.Inner.(type) {
	case ep.EventActorIntent:
		if _, stop := in.Intent.(ep.ActorIntentStop); stop {
			out.Inner = rp.EventActorIntent{Intent: rp.ActorIntentStop{}}
		} else {
			out.Inner = rp.EventActorIntent{Intent: rp.ActorIntentSleep{}}
		}
	case ep.EventActorStateUpdate:
		switch s := in.State.(type) {
		case ep.ActorStateRunning:
			out.Inner = rp.EventActorStateUpdate{State: rp.ActorStateRunning{}}
		case ep.ActorStateStopped:
			out.Inner = rp.EventActorStateUpdate{State: rp.ActorStateStopped{Code: rp.StopCode(s.Code), Message: s.Message}}
		default:
			return out, false
		}
	case ep.EventActorSetAlarm:
		out.Inner = rp.EventActorSetAlarm{AlarmTs: in.AlarmTs}
	default:
		return out, false
	}
	return out, true
}

// EventsToRunner converts events, dropping those of no known kind.
func EventsToRunner(l []ep.EventWrapper) []rp.EventWrapper {
	out := make([]rp.EventWrapper, 0, len(l))
	for _, e := range l {
		if r, ok := EventToRunner(e); ok {
			out = append(out, r)
		}
	}
	return out
}

// EventToEnvoy converts a runner event (for an SDK speaking the envoy protocol).
func EventToEnvoy(e rp.EventWrapper) ep.EventWrapper {
	out := ep.EventWrapper{Checkpoint: CheckpointToEnvoy(e.Checkpoint)}
	switch in := e.Inner.(type) {
	case rp.EventActorIntent:
		if _, stop := in.Intent.(rp.ActorIntentStop); stop {
			out.Inner = ep.EventActorIntent{Intent: ep.ActorIntentStop{}}
		} else {
			out.Inner = ep.EventActorIntent{Intent: ep.ActorIntentSleep{}}
		}
	case rp.EventActorStateUpdate:
		if s, stopped := in.State.(rp.ActorStateStopped); stopped {
			out.Inner = ep.EventActorStateUpdate{State: ep.ActorStateStopped{Code: ep.StopCode(s.Code), Message: s.Message}}
		} else {
			out.Inner = ep.EventActorStateUpdate{State: ep.ActorStateRunning{}}
		}
	case rp.EventActorSetAlarm:
		out.Inner = ep.EventActorSetAlarm{AlarmTs: in.AlarmTs}
	}
	return out
}

// EventsToEnvoy converts events.
func EventsToEnvoy(l []rp.EventWrapper) []ep.EventWrapper { return mapList(l, EventToEnvoy) }

func mapList[A, B any](l []A, f func(A) B) []B {
	out := make([]B, len(l))
	for i, v := range l {
		out[i] = f(v)
	}
	return out
}
