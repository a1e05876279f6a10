package runner_test

import (
	"strings"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// startCmd is the start of actor a's generation gen.
func startCmd(a, name string, gen uint32) proto.CommandWrapper {
	key := "key-" + a
	return proto.CommandWrapper{
		Checkpoint: proto.ActorCheckpoint{ActorID: a, Generation: gen, Index: 0},
		Inner:      proto.CommandStartActor{Config: proto.ActorConfig{Name: name, Key: &key, CreateTs: 1700000000000, Input: []byte("input-" + a)}},
	}
}

func stopCmd(a string, gen uint32, idx int64) proto.CommandWrapper {
	return proto.CommandWrapper{Checkpoint: proto.ActorCheckpoint{ActorID: a, Generation: gen, Index: idx}, Inner: proto.CommandStopActor{}}
}

// nextEvent reads the next message, which must be ToServerEvents with one event, and
// returns it.
func nextEvent(s *fakeSock) proto.EventWrapper {
	s.t.Helper()
	evs := expect[proto.ToServerEvents](s)
	if len(evs) != 1 {
		s.t.Fatalf("events %+v, want one", evs)
	}
	return evs[0]
}

// expectEvent checks the next event's checkpoint and content.
func expectEvent(s *fakeSock, a string, gen uint32, idx int64, want proto.Event) {
	s.t.Helper()
	ev := nextEvent(s)
	if cp := (proto.ActorCheckpoint{ActorID: a, Generation: gen, Index: idx}); ev.Checkpoint != cp {
		s.t.Fatalf("event %+v at %+v, want at %+v", ev.Inner, ev.Checkpoint, cp)
	}
	if !sameEvent(ev.Inner, want) {
		s.t.Fatalf("event %#v at %+v, want %#v", ev.Inner, ev.Checkpoint, want)
	}
}

// sameEvent compares events, a Stopped's message by whether it is set when want's is nil
// and by prefix when want's is set.
func sameEvent(got, want proto.Event) bool {
	gs, ok1 := got.(proto.EventActorStateUpdate)
	ws, ok2 := want.(proto.EventActorStateUpdate)
	if ok1 && ok2 {
		g, ok1 := gs.State.(proto.ActorStateStopped)
		w, ok2 := ws.State.(proto.ActorStateStopped)
		if ok1 && ok2 {
			if g.Code != w.Code {
				return false
			}
			if w.Message == nil {
				return g.Message == nil
			}
			return g.Message != nil && strings.HasPrefix(*g.Message, *w.Message)
		}
	}
	ga, ok1 := got.(proto.EventActorSetAlarm)
	wa, ok2 := want.(proto.EventActorSetAlarm)
	if ok1 && ok2 {
		return (ga.AlarmTs == nil) == (wa.AlarmTs == nil) && (ga.AlarmTs == nil || *ga.AlarmTs == *wa.AlarmTs)
	}
	return got == want
}

var (
	running   = proto.EventActorStateUpdate{State: proto.ActorStateRunning{}}
	stoppedOK = proto.EventActorStateUpdate{State: proto.ActorStateStopped{Code: proto.StopCodeOK}}
	stoppedER = proto.EventActorStateUpdate{State: proto.ActorStateStopped{Code: proto.StopCodeError}}
	sleepInt  = proto.EventActorIntent{Intent: proto.ActorIntentSleep{}}
	stopInt   = proto.EventActorIntent{Intent: proto.ActorIntentStop{}}
)

func stoppedWith(code proto.StopCode, msgPrefix string) proto.Event {
	return proto.EventActorStateUpdate{State: proto.ActorStateStopped{Code: code, Message: &msgPrefix}}
}

// barrier pings the runner and returns every message up to its pong: everything the runner
// had queued before the ping was handled.
func barrier(s *fakeSock, ts int64) []proto.ToServer {
	s.t.Helper()
	s.send(proto.ToClientPing{Ts: ts})
	var out []proto.ToServer
	for {
		m, err := s.recv()
		if err != nil {
			s.t.Fatalf("fake engine: socket ended before the pong: %v", err)
		}
		if p, ok := m.(proto.ToServerPong); ok && p.Ts == ts {
			return out
		}
		out = append(out, m)
	}
}
