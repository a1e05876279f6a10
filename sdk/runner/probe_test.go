package runner_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
	"github.com/berthhq/berth/sdk/runner"
)

// probe is a test actor: it reports its calls on buffered channels and behaves as set.
type probe struct {
	starts chan *runner.ActorContext
	stops  chan *runner.ActorContext
	// startErr is what Start returns; hold, if set, blocks Start until it is closed or ctx ends.
	startErr error
	hold     chan struct{}
	// stopHold, if set, blocks Stop until it is closed.
	stopHold chan struct{}
	// stopKV makes Stop write "stopped-<generation>" = "yes" to KV; stopKVErr gets the result.
	stopKV    bool
	stopKVErr chan error
	// waiting receives when a /wait request begins, waited when its context ended.
	waiting, waited chan struct{}
}

func newProbe() *probe {
	return &probe{starts: make(chan *runner.ActorContext, 64), stops: make(chan *runner.ActorContext, 64), waiting: make(chan struct{}, 64), waited: make(chan struct{}, 64), stopKVErr: make(chan error, 64)}
}

func (p *probe) actors() map[string]func() runner.Actor {
	return map[string]func() runner.Actor{"probe": func() runner.Actor { return &probeActor{p: p} }}
}

type probeActor struct {
	p  *probe
	ac *runner.ActorContext
}

func (a *probeActor) Start(ctx context.Context, ac *runner.ActorContext) error {
	a.ac = ac
	if got, ok := runner.FromContext(ctx); !ok || got != ac {
		return errors.New("Start's ctx does not carry the actor")
	}
	a.p.starts <- ac
	if a.p.hold != nil {
		select {
		case <-a.p.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return a.p.startErr
}

func (a *probeActor) Stop(ctx context.Context, ac *runner.ActorContext) error {
	if a.p.stopKV {
		a.p.stopKVErr <- ac.KV().Put(ctx, []byte(fmt.Sprintf("stopped-%d", ac.Generation())), []byte("yes"))
	}
	a.p.stops <- ac
	if a.p.stopHold != nil {
		<-a.p.stopHold
	}
	return nil
}

// ServeHTTP: GET /hello answers the actor's id; POST /echo the body; /panic panics;
// /wait waits for the request's context and answers nothing.
func (a *probeActor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ac, ok := runner.FromContext(r.Context())
	if !ok || ac != a.ac {
		http.Error(w, "no actor in the request's context", http.StatusInternalServerError)
		return
	}
	switch r.URL.Path {
	case "/hello":
		w.Header().Set("X-Query", r.URL.Query().Get("q"))
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		_, _ = io.WriteString(w, "hello "+ac.ID()+" from "+r.Header.Get("X-Client"))
	case "/echo":
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(b)
	case "/stream": // "head", flushed, then 100 KiB of 'x'
		_, _ = io.WriteString(w, "head")
		w.(http.Flusher).Flush()
		_, _ = w.Write([]byte(strings.Repeat("x", 100<<10)))
	case "/panic":
		panic("boom")
	case "/wait":
		a.p.waiting <- struct{}{}
		<-r.Context().Done()
		a.p.waited <- struct{}{}
	default:
		http.NotFound(w, r)
	}
}

// ServeWebSocket echoes messages, upper-casing text, until the client closes; a text
// message "close" makes it close with 4000 "asked".
func (a *probeActor) ServeWebSocket(ctx context.Context, ws *runner.WebSocket) {
	for {
		typ, b, err := ws.Read(ctx)
		if err != nil {
			return
		}
		if typ == runner.MessageText && string(b) == "close" {
			_ = ws.Close(4000, "asked")
			return
		}
		if typ == runner.MessageText {
			b = []byte(strings.ToUpper(string(b)) + ws.Request().URL.Query().Get("suffix"))
		}
		if err := ws.Write(ctx, typ, b); err != nil {
			return
		}
	}
}

// plainActor has neither ServeHTTP nor ServeWebSocket.
type plainActor struct{}

func (plainActor) Start(context.Context, *runner.ActorContext) error { return nil }
func (plainActor) Stop(context.Context, *runner.ActorContext) error  { return nil }

// hostConfig is a test config hosting the probe (and "plain") actors.
func hostConfig(endpoint string, p *probe) runner.Config {
	cfg := testConfig(endpoint, nil)
	cfg.Actors = p.actors()
	cfg.Actors["plain"] = func() runner.Actor { return plainActor{} }
	return cfg
}

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
