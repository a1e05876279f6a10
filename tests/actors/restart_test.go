package actors

import (
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"github.com/berthhq/berth/tests/internal/harness"
)

// TestEngineKilled: the engine (file store) is killed with SIGKILL while its actors are in
// every state — running, sleeping, sleeping with an alarm, stopping for a sleep and for a
// destroy (the runner holds their stops), pending for want of a slot — and started again on
// the same store. The runner reconnects with the same id; every actor shows the state it had
// and KV kept what was written; once the runner lets the stops finish, the stopping actors
// sleep and are destroyed, the freed slots go to the waiting actors, the running actor was
// never started again, and the sleeping one wakes as generation 1 with its KV.
func TestEngineKilled(t *testing.T) {
	eachRunner(t, func(t *testing.T, k runnerKind) {
		st := base
		st.LostThresholdMs = 10000 // the runner comes back within it
		e := harness.NewEngine(t, st, "file://"+filepath.Join(t.TempDir(), "db"))
		e.Start()
		r := startRunner(t, k, e, "actors", 3)
		put := func(aid, key, value string) {
			t.Helper()
			gatewayJSON(t, e, http.MethodPost, aid, "/kv", map[string]any{"op": "put", "entries": [][2]string{{key, value}}}, nil)
		}
		startRunning := func(policy string) string {
			t.Helper()
			aid := create(t, e, "actors", policy, nil).ActorID
			r.awaitStart(aid, 0)
			awaitActor(t, e, aid, "running", running)
			return aid
		}
		asleep := func(aid string) {
			t.Helper()
			gatewayJSON(t, e, http.MethodPost, aid, "/sleep", nil, nil)
			r.awaitStop(aid, 0)
			awaitActor(t, e, aid, "sleeping", sleeping)
		}
		awaitHeld := func(aid string) {
			t.Helper()
			r.Await("stopHeld of "+aid, soon, func(ev harness.Event) bool { return ev.Ev == "stopHeld" && ev.ActorID == aid })
			awaitActor(t, e, aid, "stopping", stopping)
		}

		run := startRunning("sleep") // stays running
		put(run, "r", "1")
		sleeper := startRunning("sleep") // sleeps with KV
		put(sleeper, "s", "2")
		asleep(sleeper)
		alarmed := startRunning("sleep") // sleeps with an alarm 3 s ahead
		gatewayJSON(t, e, http.MethodPost, alarmed, "/alarm?in=3000", nil, nil)
		asleep(alarmed)
		r.command("hold-stops")
		toSleep := startRunning("sleep") // stopping for a sleep
		e.CallJSON(t, http.MethodPost, "/actors/"+toSleep+"/sleep?namespace=default", struct{}{}, nil)
		awaitHeld(toSleep)
		toDestroy := startRunning("sleep") // stopping for a destroy (its own intent)
		put(toDestroy, "d", "4")
		gatewayJSON(t, e, http.MethodPost, toDestroy, "/destroy", nil, nil)
		awaitHeld(toDestroy)
		waiting := create(t, e, "actors", "restart", nil).ActorID // no slot left: pending
		awaitActor(t, e, waiting, "pending", pending)

		e.Kill()
		r.AwaitEv("disconnected", soon)
		e.Start()
		if again := r.AwaitEv("connected", soon); again.RunnerID != r.id {
			t.Errorf("the runner reconnected as %s, want %s", again.RunnerID, r.id)
		}

		// As they were.
		for aid, want := range map[string]struct {
			what string
			ok   func(actorJSON) bool
		}{
			run: {"running", running}, sleeper: {"sleeping", sleeping},
			toSleep: {"stopping", stopping}, toDestroy: {"stopping", stopping}, waiting: {"pending", pending},
		} {
			if a := getActor(t, e, aid); !want.ok(a) {
				t.Errorf("after the restart actor %s is %v, want %s", aid, a, want.what)
			}
		}
		for _, kv := range []struct{ aid, key, value string }{{run, "r", "1"}, {sleeper, "s", "2"}, {toDestroy, "d", "4"}} {
			if v, ok := kvValue(t, e, kv.aid, kv.key); !ok || v != kv.value {
				t.Errorf("after the restart KV %s of %s = %q %v, want %q", kv.key, kv.aid, v, ok, kv.value)
			}
		}

		// The stops finish: one sleeps, one is destroyed, and their slots start the waiting
		// actor and the alarmed one (woken by its alarm).
		r.command("release-stops")
		if a := awaitActor(t, e, toSleep, "sleeping", sleeping); a.Error != nil {
			t.Errorf("slept across the restart: %v, want no error", a)
		}
		awaitActor(t, e, toDestroy, "destroyed", destroyed)
		if _, ok := kvValue(t, e, toDestroy, "d"); ok {
			t.Errorf("the destroyed actor's KV is still there")
		}
		r.awaitStart(waiting, 0)
		awaitActor(t, e, waiting, "running", running)
		awaitActor(t, e, alarmed, "running after its alarm", running)
		if gens := r.starts(alarmed); !slices.Equal(gens, []int{0, 1}) {
			t.Errorf("the alarmed actor was started as generations %v, want [0 1]", gens)
		}

		// The running actor ran throughout: never started again, still generation 0.
		if s := state(t, e, run); s.Generation != 0 {
			t.Errorf("the running actor answers as generation %d, want 0", s.Generation)
		}
		if gens := r.starts(run); !slices.Equal(gens, []int{0}) {
			t.Errorf("the running actor was started as generations %v, want [0]", gens)
		}
		// The sleeping one wakes with its KV, in the slot of the waiting actor, destroyed.
		e.CallJSON(t, http.MethodDelete, "/actors/"+waiting+"?namespace=default", nil, nil)
		awaitActor(t, e, waiting, "destroyed", destroyed)
		var got struct {
			Values []*string `json:"values"`
		}
		gatewayJSON(t, e, http.MethodPost, sleeper, "/kv", map[string]any{"op": "get", "keys": []string{"s"}}, &got)
		if len(got.Values) != 1 || got.Values[0] == nil || *got.Values[0] != "2" {
			t.Errorf("the woken actor reads s = %v, want 2", got.Values)
		}
		if s := state(t, e, sleeper); s.Generation != 1 {
			t.Errorf("the sleeping actor woke as generation %d, want 1", s.Generation)
		}
	})
}
