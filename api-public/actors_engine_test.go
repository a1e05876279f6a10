package apipublic_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/api-public/openapitest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/sdk/client"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// scriptRunner is a minimal runner on a real socket: it answers pings, reports every actor
// it is told to start as running and every actor it is told to stop as stopped (code OK).
type scriptRunner struct {
	mu      sync.Mutex
	started []string // actor ids, in start order
	stopped []string
}

// connectRunner connects a runner of pool "pool" with slots slots to the engine at
// publicURL and serves it until the test ends.
func connectRunner(t *testing.T, publicURL, token string, slots uint32) *scriptRunner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(publicURL, "http")+"/runners/connect?protocol_version=7&namespace=default&runner_key=k",
		&websocket.DialOptions{Subprotocols: []string{"rivet", "rivet_token." + token}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ws.SetReadLimit(-1)
	send := func(m proto.ToServer) error {
		b, err := proto.EncodeToServer(m, 7)
		if err != nil {
			return err
		}
		return ws.Write(ctx, websocket.MessageBinary, b)
	}
	if err := send(proto.ToServerInit{Name: "pool", Version: 1, TotalSlots: slots}); err != nil {
		cancel()
		t.Fatal(err)
	}
	r := &scriptRunner{}
	done := make(chan error, 1)
	go func() { done <- r.serve(ctx, ws, send) }()
	t.Cleanup(func() {
		cancel()
		ws.CloseNow()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("runner: %v", err)
		}
	})
	return r
}

func (r *scriptRunner) serve(ctx context.Context, ws *websocket.Conn, send func(proto.ToServer) error) error {
	next := map[string]int64{} // next event index per actor generation ("id/gen")
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			return err
		}
		m, err := proto.DecodeToClient(b, 7)
		if err != nil {
			return err
		}
		switch m := m.(type) {
		case proto.ToClientPing:
			if err := send(proto.ToServerPong{Ts: m.Ts}); err != nil {
				return err
			}
		case proto.ToClientCommands:
			var evs proto.ToServerEvents
			for _, c := range m {
				cp := c.Checkpoint
				k := cp.ActorID + "/" + strconv.FormatUint(uint64(cp.Generation), 10)
				ev := proto.EventWrapper{Checkpoint: proto.ActorCheckpoint{ActorID: cp.ActorID, Generation: cp.Generation, Index: next[k]}}
				next[k]++
				r.mu.Lock()
				switch c.Inner.(type) {
				case proto.CommandStartActor:
					r.started = append(r.started, cp.ActorID)
					ev.Inner = proto.EventActorStateUpdate{State: proto.ActorStateRunning{}}
				case proto.CommandStopActor:
					r.stopped = append(r.stopped, cp.ActorID)
					ev.Inner = proto.EventActorStateUpdate{State: proto.ActorStateStopped{Code: proto.StopCodeOK}}
				}
				r.mu.Unlock()
				evs = append(evs, ev)
			}
			if err := send(evs); err != nil {
				return err
			}
		}
	}
}

func (r *scriptRunner) counts() (started, stopped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.started), len(r.stopped)
}

// waitActor polls the actor through c until ok holds, for at most 10 s.
func waitActor(t *testing.T, c *client.Client, actorID string, what string, ok func(client.Actor) bool) client.Actor {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a, err := c.Actors().Get(context.Background(), actorID)
		if err == nil && ok(a) {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("actor %s not %s: %+v, %v", actorID, what, a, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestActorsEngines runs the actor endpoints on three engines started as in production: an
// actor is created in us through eu, placed on a runner connected to us, read through ap,
// put to sleep through eu and destroyed through ap (routed by its id's label, the delete
// waiting for the runner to report the stop). Every exchange is checked against openapi.yaml.
func TestActorsEngines(t *testing.T) {
	const token = "s3cret"
	urls := startEngines(t, token, "eu", "us", "ap")
	runner := connectRunner(t, urls["us"], token, 4)

	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: openapitest.NewValidatingTransport(t, transport), Timeout: 30 * time.Second}
	sdk := func(dc string) *client.Client {
		c, err := client.New(urls[dc], client.WithToken(token), client.WithHTTPClient(hc))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	eu, ap := sdk("eu"), sdk("ap")
	ctx := context.Background()

	// The runner's connect creates the pool's config in us; a create may race it.
	var a client.Actor
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		a, err = eu.Actors().Create(ctx, client.ActorCreateOptions{Name: "counter", Key: "k1", Input: []byte("hi"),
			Pool: "pool", CrashPolicy: client.CrashRestart, Datacenter: "us"})
		if err == nil {
			break
		}
		if !errors.Is(err, &client.APIError{Group: "actor", Code: "no_runner_config_configured"}) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if a.Datacenter != "us" {
		t.Fatalf("created in %s", a.Datacenter)
	}
	// The pool has no config in eu: a create there by name is refused (one that names no
	// datacenter goes where the pool has a free runner: the end of the test).
	if _, err := eu.Actors().Create(ctx, client.ActorCreateOptions{Name: "counter", Pool: "pool", CrashPolicy: client.CrashRestart,
		Datacenter: "eu"}); !errors.Is(err, &client.APIError{Group: "actor", Code: "no_runner_config_configured"}) {
		t.Fatalf("create in eu: %v", err)
	}

	running := waitActor(t, ap, a.ActorId, "connectable", func(a client.Actor) bool { return a.ConnectableTs != nil })
	if running.StartTs == nil || running.Datacenter != "us" {
		t.Fatalf("running: %+v", running)
	}

	// GetOrCreate through ap, in us: the running actor, not a new one.
	got, created, err := ap.Actors().GetOrCreate(ctx, client.ActorCreateOptions{Name: "counter", Key: "k1", Pool: "pool",
		CrashPolicy: client.CrashRestart, Datacenter: "us"})
	if err != nil || created || got.ActorId != a.ActorId {
		t.Fatalf("GetOrCreate = %+v %v, %v", got, created, err)
	}
	// Lists through ap fan out and find it in us, by name and by key.
	for _, o := range []client.ActorListOptions{{Name: "counter"}, {Name: "counter", Key: "k1"}, {ActorIDs: []string{a.ActorId}}} {
		p, err := ap.Actors().List(ctx, o)
		if err != nil || len(p.Items) != 1 || p.Items[0].ActorId != a.ActorId || p.Items[0].Datacenter != "us" {
			t.Fatalf("list %+v: %+v, %v", o, p, err)
		}
	}
	names, err := client.Collect(ap.Actors().AllNames(ctx, client.NameListOptions{}))
	if err != nil || len(names) != 1 || names[0].Name != "counter" {
		t.Fatalf("names: %+v, %v", names, err)
	}

	// Sleep through eu: the runner is told to stop, reports it, and the actor sleeps.
	if err := eu.Actors().Sleep(ctx, a.ActorId); err != nil {
		t.Fatal(err)
	}
	waitActor(t, ap, a.ActorId, "asleep", func(a client.Actor) bool { return a.SleepTs != nil && a.ConnectableTs == nil })
	// Reschedule through ap: placed on the runner again.
	if err := ap.Actors().Reschedule(ctx, a.ActorId); err != nil {
		t.Fatal(err)
	}
	waitActor(t, eu, a.ActorId, "connectable again", func(a client.Actor) bool { return a.ConnectableTs != nil })

	// Destroy through ap: the delete returns once the runner reported the stop.
	if err := ap.Actors().Destroy(ctx, a.ActorId); err != nil {
		t.Fatal(err)
	}
	gone, err := eu.Actors().Get(ctx, a.ActorId)
	if err != nil || gone.DestroyTs == nil || gone.ConnectableTs != nil {
		t.Fatalf("after Destroy: %+v, %v", gone, err)
	}
	if started, stopped := runner.counts(); started != 2 || stopped != 2 {
		t.Fatalf("runner started %d and stopped %d actors, want 2 and 2", started, stopped)
	}
	if err := eu.Actors().Destroy(ctx, a.ActorId); err != nil {
		t.Fatalf("second Destroy: %v", err)
	}
	// The key is free again in us.
	if _, created, err := eu.Actors().GetOrCreate(ctx, client.ActorCreateOptions{Name: "counter", Key: "k1", Pool: "pool",
		CrashPolicy: client.CrashRestart, Datacenter: "us"}); err != nil || !created {
		t.Fatalf("GetOrCreate after destroy: %v %v", created, err)
	}
	// Through eu, naming no datacenter: created where the pool has a free runner, us.
	if moved, err := eu.Actors().Create(ctx, client.ActorCreateOptions{Name: "counter", Pool: "pool", CrashPolicy: client.CrashRestart}); err != nil || moved.Datacenter != "us" {
		t.Fatalf("create through eu naming no datacenter: %v, in %q; want us", err, moved.Datacenter)
	}
	// An id of no datacenter, and a malformed one.
	if err := ap.Actors().Destroy(ctx, id.New(9).String()); !errors.Is(err, &client.APIError{Group: "actor", Code: "not_found"}) {
		t.Fatalf("Destroy of an id of no datacenter: %v", err)
	}
	var apiErr *client.APIError
	if err := ap.Actors().Sleep(ctx, "nope"); !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Metadata["field"] != "actor_id" {
		t.Fatalf("Sleep(nope): %v", err)
	}
}
