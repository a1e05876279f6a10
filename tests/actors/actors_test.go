package actors

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/berthhq/berth/tests/internal/harness"
)

// base is the engine configuration of these tests: runners pinged every 500 ms and lost
// after 3 s, crash backoff from 100 ms.
var base = harness.Settings{PingIntervalMs: 500, LostThresholdMs: 3000, BaseRetryTimeoutMs: 100}

// TestLifecycle: create → running (the runner starts generation 0 with the actor's name and
// input; the API shows start_ts and connectable_ts); a sleep asked by the actor and one asked
// through the API each stop it and leave it sleeping with no error (runner 2.2.1's Stopped
// ERROR after a sleep intent is a normal sleep); a gateway request wakes it as a new
// generation on the runner; DELETE stops it and destroys it, after which the gateway no
// longer reaches it; an actor destroying itself (intent stop) is destroyed without error.
func TestLifecycle(t *testing.T) {
	eachRunner(t, func(t *testing.T, k runnerKind) {
		e := harness.StartEngine(t, base)
		r := startRunner(t, k, e, "actors", 10)
		nsID := defaultNamespaceID(t, e)

		input := map[string]any{"hello": "world"}
		a := create(t, e, "actors", "sleep", input)
		aid := a.ActorID
		if a.Name != "probe" || a.RunnerNameSelector != "actors" || a.CrashPolicy != "sleep" || a.NamespaceID != nsID || a.Datacenter != "default" {
			t.Errorf("POST /actors answered %v", a)
		}
		ev := r.awaitStart(aid, 0)
		wantInput, _ := json.Marshal(input)
		if ev.Name != "probe" || ev.Key != nil || ev.Input == nil || *ev.Input != base64.StdEncoding.EncodeToString(wantInput) {
			t.Errorf("runner started %s", ev.Line)
		}
		got := awaitActor(t, e, aid, "running", running)
		if got.StartTs == nil || *got.StartTs < got.CreateTs || *got.ConnectableTs < *got.StartTs || got.SleepTs != nil || got.Error != nil {
			t.Errorf("running actor: %v", got)
		}
		if s := state(t, e, aid); s.Generation != 0 || s.RunnerID != r.id || s.ActorID != aid {
			t.Errorf("GET /state = %+v, want generation 0 on runner %s", s, r.id)
		}

		// The actor asks to sleep.
		gatewayJSON(t, e, http.MethodPost, aid, "/sleep", nil, nil)
		r.awaitStop(aid, 0)
		slept := awaitActor(t, e, aid, "sleeping", sleeping)
		if slept.ConnectableTs != nil || slept.Error != nil {
			t.Errorf("after a sleep intent: %v, want sleeping without connectable_ts or error", slept)
		}

		// A request wakes it: generation 1.
		if s := state(t, e, aid); s.Generation != 1 {
			t.Errorf("woken by a request as generation %d, want 1", s.Generation)
		}
		r.awaitStart(aid, 1)
		awaitActor(t, e, aid, "running again", running)

		// The API sleeps it; a request wakes generation 2.
		e.CallJSON(t, http.MethodPost, "/actors/"+aid+"/sleep?namespace=default", struct{}{}, nil)
		r.awaitStop(aid, 1)
		if slept := awaitActor(t, e, aid, "sleeping", sleeping); slept.Error != nil {
			t.Errorf("after POST /actors/{id}/sleep: %v, want no error", slept)
		}
		if s := state(t, e, aid); s.Generation != 2 {
			t.Errorf("woken by a request as generation %d, want 2", s.Generation)
		}
		r.awaitStart(aid, 2)

		// DELETE stops it on the runner and destroys it.
		e.CallJSON(t, http.MethodDelete, "/actors/"+aid+"?namespace=default", nil, nil)
		r.awaitStop(aid, 2)
		gone := awaitActor(t, e, aid, "destroyed", destroyed)
		if gone.ConnectableTs != nil || gone.SleepTs != nil {
			t.Errorf("destroyed actor: %v", gone)
		}
		if status, b := gateway(t, e, http.MethodGet, aid, "/state", nil); status == http.StatusOK {
			t.Errorf("the gateway still reaches the destroyed actor: %s", b)
		}
		if gens := r.starts(aid); !slices.Equal(gens, []int{0, 1, 2}) {
			t.Errorf("the runner started generations %v, want [0 1 2]", gens)
		}

		// An actor that destroys itself.
		b := create(t, e, "actors", "sleep", nil).ActorID
		r.awaitStart(b, 0)
		awaitActor(t, e, b, "running", running)
		gatewayJSON(t, e, http.MethodPost, b, "/destroy", nil, nil)
		r.awaitStop(b, 0)
		if gone := awaitActor(t, e, b, "destroyed", destroyed); gone.Error != nil {
			t.Errorf("self-destroyed actor: %v, want no error", gone)
		}
		if gens := r.starts(b); !slices.Equal(gens, []int{0}) {
			t.Errorf("the runner started the self-destroyed actor as generations %v, want [0]", gens)
		}
	})
}

// TestAlarmWakes: an actor sets an alarm 1.5 s ahead and sleeps; with no request, the engine
// starts generation 1 once the alarm is due, not before.
func TestAlarmWakes(t *testing.T) {
	eachRunner(t, func(t *testing.T, k runnerKind) {
		e := harness.StartEngine(t, base)
		r := startRunner(t, k, e, "actors", 10)
		aid := create(t, e, "actors", "sleep", nil).ActorID
		r.awaitStart(aid, 0)
		awaitActor(t, e, aid, "running", running)

		var alarm struct {
			AlarmTs int64 `json:"alarmTs"`
		}
		gatewayJSON(t, e, http.MethodPost, aid, "/alarm?in=1500", nil, &alarm)
		gatewayJSON(t, e, http.MethodPost, aid, "/sleep", nil, nil)
		r.awaitStop(aid, 0)
		slept := awaitActor(t, e, aid, "sleeping", sleeping)
		if *slept.SleepTs >= alarm.AlarmTs {
			t.Fatalf("the actor fell asleep at %d, after its alarm %d: the test proves nothing", *slept.SleepTs, alarm.AlarmTs)
		}
		woke := r.awaitStart(aid, 1)
		if woke.At.UnixMilli() < alarm.AlarmTs {
			t.Errorf("generation 1 started at %d, before the alarm at %d", woke.At.UnixMilli(), alarm.AlarmTs)
		}
		awaitActor(t, e, aid, "running after the alarm", running)
	})
}

// TestCrashPolicies: an actor whose start fails (the probe crashes while its generation is
// below the input's crashBelowGen) is restarted as a new generation until it runs (restart),
// left sleeping with a crashed error until a request wakes it (sleep), or destroyed with the
// error (destroy).
func TestCrashPolicies(t *testing.T) {
	eachRunner(t, func(t *testing.T, k runnerKind) {
		e := harness.StartEngine(t, base)
		r := startRunner(t, k, e, "actors", 10)

		t.Run("restart", func(t *testing.T) {
			aid := create(t, e, "actors", "restart", map[string]int{"crashBelowGen": 2}).ActorID
			for gen := range 3 {
				r.awaitStart(aid, gen)
			}
			if a := awaitActor(t, e, aid, "running", running); a.Error != nil {
				t.Errorf("running after the crashes: %v, want no error", a)
			}
			if s := state(t, e, aid); s.Generation != 2 {
				t.Errorf("running generation %d, want 2", s.Generation)
			}
		})

		t.Run("sleep", func(t *testing.T) {
			aid := create(t, e, "actors", "sleep", map[string]int{"crashBelowGen": 1}).ActorID
			r.awaitStart(aid, 0)
			a := awaitActor(t, e, aid, "asleep after its crash", sleeping)
			if !hasErrorKey(a.Error, "crashed") {
				t.Errorf("crashed and asleep: %v, want error {crashed: …}", a)
			}
			if gens := r.starts(aid); !slices.Equal(gens, []int{0}) {
				t.Errorf("the runner started generations %v while the actor slept, want [0]", gens)
			}
			if s := state(t, e, aid); s.Generation != 1 {
				t.Errorf("woken by a request as generation %d, want 1", s.Generation)
			}
			if a := awaitActor(t, e, aid, "running", running); a.Error != nil {
				t.Errorf("running after the wake: %v, want no error", a)
			}
		})

		t.Run("destroy", func(t *testing.T) {
			aid := create(t, e, "actors", "destroy", map[string]int{"crashBelowGen": 1}).ActorID
			r.awaitStart(aid, 0)
			a := awaitActor(t, e, aid, "destroyed after its crash", destroyed)
			if !hasErrorKey(a.Error, "crashed") {
				t.Errorf("crashed and destroyed: %v, want error {crashed: …}", a)
			}
		})
	})
}

// TestDrainMovesActors: draining a runner (POST /runners/{id}/drain) stops its actors there,
// and each runs again as a new generation on the other runner of the pool: the
// restart-policy one at once, the sleep-policy one at its next request; the drained runner
// shows drain_ts.
func TestDrainMovesActors(t *testing.T) {
	eachRunner(t, func(t *testing.T, k runnerKind) {
		e := harness.StartEngine(t, base)
		r1 := startRunner(t, k, e, "actors", 10)
		ids := []string{create(t, e, "actors", "sleep", nil).ActorID, create(t, e, "actors", "restart", nil).ActorID}
		awaitAll(r1, "actorStart", ids, 0)
		for _, aid := range ids {
			awaitActor(t, e, aid, "running", running)
		}
		r2 := startRunner(t, k, e, "actors", 10)

		e.CallJSON(t, http.MethodPost, "/runners/"+r1.id+"/drain?namespace=default", nil, nil)
		awaitAll(r1, "actorStop", ids, 0)
		// As on Rivet, the crash policy decides: the restart-policy actor is placed on the
		// other runner at once, the sleep-policy one sleeps, without an error, until its next
		// request, which wakes it there (state, below, is one).
		awaitAll(r2, "actorStart", ids[1:], 1)
		if a := awaitActor(t, e, ids[0], "asleep after the drain", sleeping); a.Error != nil {
			t.Errorf("slept actor: %v, want no error", a)
		}
		for _, aid := range ids {
			if s := state(t, e, aid); s.RunnerID != r2.id || s.Generation != 1 {
				t.Errorf("actor %s answers from runner %s generation %d, want %s generation 1", aid, s.RunnerID, s.Generation, r2.id)
			}
			if a := awaitActor(t, e, aid, "running on the other runner", running); a.Error != nil {
				t.Errorf("moved actor: %v, want no error", a)
			}
		}
		var rs struct {
			Runners []struct {
				DrainTs *int64 `json:"drain_ts"`
			} `json:"runners"`
		}
		e.GetJSON(t, "/runners?namespace=default&include_stopped=true&runner_id="+url.QueryEscape(r1.id), &rs)
		if len(rs.Runners) != 1 || rs.Runners[0].DrainTs == nil {
			t.Errorf("drained runner: %+v, want drain_ts set", rs.Runners)
		}
	})
}

// TestRunnerLossReschedules: a runner killed with SIGKILL is lost after the lost threshold;
// its actors go by their crash policy with error runner_connection_lost naming it: restart
// starts a new generation on the other runner, sleep sleeps, destroy is destroyed.
func TestRunnerLossReschedules(t *testing.T) {
	eachRunner(t, func(t *testing.T, k runnerKind) {
		e := harness.StartEngine(t, base)
		r1 := startRunner(t, k, e, "actors", 10)
		restart := create(t, e, "actors", "restart", nil).ActorID
		sleeper := create(t, e, "actors", "sleep", nil).ActorID
		destroyer := create(t, e, "actors", "destroy", nil).ActorID
		awaitAll(r1, "actorStart", []string{restart, sleeper, destroyer}, 0)
		for _, aid := range []string{restart, sleeper, destroyer} {
			awaitActor(t, e, aid, "running", running)
		}
		r2 := startRunner(t, k, e, "actors", 10)

		r1.Signal(syscall.SIGKILL)
		<-r1.Exited()
		r2.awaitStart(restart, 1)
		awaitActor(t, e, restart, "running on the other runner", running)
		if s := state(t, e, restart); s.RunnerID != r2.id {
			t.Errorf("the restarted actor answers from runner %s, want %s", s.RunnerID, r2.id)
		}
		lost := func(a actorJSON) bool {
			var e map[string]struct {
				RunnerID string `json:"runner_id"`
			}
			return json.Unmarshal(a.Error, &e) == nil && e["runner_connection_lost"].RunnerID == r1.id
		}
		if a := awaitActor(t, e, sleeper, "asleep", sleeping); !lost(a) {
			t.Errorf("sleep policy after the loss: %v, want error runner_connection_lost with runner_id %s", a, r1.id)
		}
		if a := awaitActor(t, e, destroyer, "destroyed", destroyed); !lost(a) {
			t.Errorf("destroy policy after the loss: %v, want error runner_connection_lost with runner_id %s", a, r1.id)
		}
		if n := len(r2.starts(sleeper)) + len(r2.starts(destroyer)); n != 0 {
			t.Errorf("the other runner started the sleep- or destroy-policy actor %d times", n)
		}
	})
}

// TestKV: the actor's KV through the runner: get returns only found keys (null for others),
// list all / prefix / range (end included unless exclusive) / reverse with limit, delete,
// delete range, a value over 128 KiB refused naming the limit with nothing written, the
// REST API reading a key, the data kept across sleep and wake (read by the next generation
// and by the API while asleep), drop, and nothing left once the actor is destroyed.
func TestKV(t *testing.T) {
	eachRunner(t, func(t *testing.T, k runnerKind) {
		e := harness.StartEngine(t, base)
		r := startRunner(t, k, e, "actors", 10)
		aid := create(t, e, "actors", "sleep", nil).ActorID
		r.awaitStart(aid, 0)
		awaitActor(t, e, aid, "running", running)

		kv := func(req map[string]any) map[string]json.RawMessage {
			t.Helper()
			var out map[string]json.RawMessage
			gatewayJSON(t, e, http.MethodPost, aid, "/kv", req, &out)
			return out
		}
		list := func(req map[string]any) [][2]string {
			t.Helper()
			req["op"] = "list"
			var es [][2]string
			if err := json.Unmarshal(kv(req)["entries"], &es); err != nil {
				t.Fatal(err)
			}
			return es
		}
		get := func(keys ...string) []*string {
			t.Helper()
			var vs []*string
			if err := json.Unmarshal(kv(map[string]any{"op": "get", "keys": keys})["values"], &vs); err != nil {
				t.Fatal(err)
			}
			return vs
		}
		check := func(what string, got, want any) {
			t.Helper()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s = %v, want %v", what, got, want)
			}
		}
		str := func(s string) *string { return &s }

		kv(map[string]any{"op": "put", "entries": [][2]string{{"c", "4"}, {"a", "1"}, {"b/2", "3"}, {"b/1", "2"}}})
		check("get a, missing, c", get("a", "missing", "c"), []*string{str("1"), nil, str("4")})
		all := [][2]string{{"a", "1"}, {"b/1", "2"}, {"b/2", "3"}, {"c", "4"}}
		check("list all", list(map[string]any{}), all)
		check("list prefix b/", list(map[string]any{"prefix": "b/"}), all[1:3])
		check("list range a..c", list(map[string]any{"start": "a", "end": "c"}), all)
		check("list range a..c exclusive", list(map[string]any{"start": "a", "end": "c", "exclusive": true}), all[:3])
		check("list reverse limit 2", list(map[string]any{"reverse": true, "limit": 2}), [][2]string{{"c", "4"}, {"b/2", "3"}})

		kv(map[string]any{"op": "delete", "keys": []string{"a", "never"}})
		kv(map[string]any{"op": "deleteRange", "start": "b/", "end": "b0"})
		check("list after delete and delete range", list(map[string]any{}), [][2]string{{"c", "4"}})

		status, b := gateway(t, e, http.MethodPost, aid, "/kv", map[string]any{"op": "put", "entries": [][2]string{{"big", strings.Repeat("x", 128<<10+1)}}})
		if status != http.StatusUnprocessableEntity || !strings.Contains(string(b), "too large") {
			t.Errorf("a value of 128 KiB + 1: %d %s, want the engine's refusal naming the limit", status, b)
		}
		check("get big after the refused put", get("big"), []*string{nil})

		if v, ok := kvValue(t, e, aid, "c"); !ok || v != "4" {
			t.Errorf("GET /actors/{id}/kv/keys/c = %q %v, want 4", v, ok)
		}
		if _, ok := kvValue(t, e, aid, "a"); ok {
			t.Errorf("GET /actors/{id}/kv/keys/a found the deleted key")
		}

		// Asleep, the data stays; the next generation reads it.
		gatewayJSON(t, e, http.MethodPost, aid, "/sleep", nil, nil)
		r.awaitStop(aid, 0)
		awaitActor(t, e, aid, "sleeping", sleeping)
		if v, ok := kvValue(t, e, aid, "c"); !ok || v != "4" {
			t.Errorf("asleep: GET /actors/{id}/kv/keys/c = %q %v, want 4", v, ok)
		}
		check("generation 1: get c", get("c"), []*string{str("4")})
		r.awaitStart(aid, 1)

		kv(map[string]any{"op": "drop"})
		check("list after drop", list(map[string]any{}), [][2]string{})

		kv(map[string]any{"op": "put", "entries": [][2]string{{"z", "26"}}})
		e.CallJSON(t, http.MethodDelete, "/actors/"+aid+"?namespace=default", nil, nil)
		awaitActor(t, e, aid, "destroyed", destroyed)
		if v, ok := kvValue(t, e, aid, "z"); ok {
			t.Errorf("destroyed: GET /actors/{id}/kv/keys/z = %q, want no value", v)
		}
	})
}

// hasErrorKey reports whether an Actor error is an object with key (or the string key).
func hasErrorKey(raw json.RawMessage, key string) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		_, ok := obj[key]
		return ok
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && s == key
}

// awaitAll awaits the runner's events named ev (actorStart, actorStop) for every actor of
// ids at generation gen, in any order.
func awaitAll(r *actorRunner, ev string, ids []string, gen int) {
	left := map[string]bool{}
	for _, aid := range ids {
		left[aid] = true
	}
	r.Await(ev+" of "+strings.Join(ids, ", "), soon, func(x harness.Event) bool {
		if x.Ev == ev && x.Generation == gen {
			delete(left, x.ActorID)
		}
		return len(left) == 0
	})
}

// defaultNamespaceID is the id of the namespace "default".
func defaultNamespaceID(t *testing.T, e *harness.Engine) string {
	t.Helper()
	var out struct {
		Namespaces []struct {
			NamespaceID string `json:"namespace_id"`
			Name        string `json:"name"`
		} `json:"namespaces"`
	}
	e.GetJSON(t, "/namespaces?name=default", &out)
	for _, ns := range out.Namespaces {
		if ns.Name == "default" {
			return ns.NamespaceID
		}
	}
	t.Fatalf("no namespace named default in %+v", out.Namespaces)
	return ""
}
