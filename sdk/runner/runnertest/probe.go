package runnertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/berthhq/berth/sdk/runner"
)

// Probe is a test actor: it reports its calls on buffered channels (64 each) and behaves as
// set. Its fields are set before the runner starts.
type Probe struct {
	Starts chan *runner.ActorContext
	Stops  chan *runner.ActorContext
	// StartErr is what Start returns; Hold, if set, blocks Start until it is closed or ctx ends.
	StartErr error
	Hold     chan struct{}
	// StopHold, if set, blocks Stop until it is closed.
	StopHold chan struct{}
	// StopKV makes Stop write "stopped-<generation>" = "yes" to KV; StopKVErr gets the result.
	StopKV    bool
	StopKVErr chan error
	// Waiting receives when a /wait request begins, Waited when its context ended.
	Waiting, Waited chan struct{}
}

// NewProbe returns a Probe whose Start and Stop succeed at once.
func NewProbe() *Probe {
	return &Probe{Starts: make(chan *runner.ActorContext, 64), Stops: make(chan *runner.ActorContext, 64), Waiting: make(chan struct{}, 64), Waited: make(chan struct{}, 64), StopKVErr: make(chan error, 64)}
}

// Actors is the actor "probe", for runner.Config.Actors.
func (p *Probe) Actors() map[string]func() runner.Actor {
	return map[string]func() runner.Actor{"probe": func() runner.Actor { return &probeActor{p: p} }}
}

type probeActor struct {
	p  *Probe
	ac *runner.ActorContext
}

func (a *probeActor) Start(ctx context.Context, ac *runner.ActorContext) error {
	a.ac = ac
	if got, ok := runner.FromContext(ctx); !ok || got != ac {
		return errors.New("runnertest: Start's ctx does not carry the actor")
	}
	a.p.Starts <- ac
	if a.p.Hold != nil {
		select {
		case <-a.p.Hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return a.p.StartErr
}

func (a *probeActor) Stop(ctx context.Context, ac *runner.ActorContext) error {
	if a.p.StopKV {
		a.p.StopKVErr <- ac.KV().Put(ctx, []byte(fmt.Sprintf("stopped-%d", ac.Generation())), []byte("yes"))
	}
	a.p.Stops <- ac
	if a.p.StopHold != nil {
		<-a.p.StopHold
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
		a.p.Waiting <- struct{}{}
		<-r.Context().Done()
		a.p.Waited <- struct{}{}
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

// PlainActor has neither ServeHTTP nor ServeWebSocket; its Start and Stop succeed.
type PlainActor struct{}

func (PlainActor) Start(context.Context, *runner.ActorContext) error { return nil }
func (PlainActor) Stop(context.Context, *runner.ActorContext) error  { return nil }

// HostConfig is Config without hooks, hosting p's actor "probe" and the PlainActor "plain".
func HostConfig(endpoint string, p *Probe) runner.Config {
	cfg := Config(endpoint, nil)
	cfg.Actors = p.Actors()
	cfg.Actors["plain"] = func() runner.Actor { return PlainActor{} }
	return cfg
}
