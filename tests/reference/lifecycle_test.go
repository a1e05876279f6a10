package reference

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"time"
)

func init() {
	register(
		scenario{name: "drain_alone", doc: "the only runner of a pool drains: its actors by crash policy, then a request with no runner", run: drainAlone},
		scenario{name: "drain_elsewhere", doc: "a runner drains while another of its pool runs: a sleep-policy actor, then a request for it", run: drainElsewhere},
		scenario{name: "runner_killed", doc: "a runner is SIGKILLed and a replacement connects: a request sent right after the kill", run: runnerKilled},
		scenario{name: "runner_reconnects", doc: "a runner's connection is cut and the runner reconnects: a request sent during the cut", run: runnerReconnects},
		scenario{name: "machine_lost", doc: "an engine node and the runner it held are SIGKILLed, the node restarts: a request through another node", alone: true, run: machineLost},
	)
}

// actorState is what the scenarios compare of an actor: which of its timestamps are set and
// its error (its values are the engines' own).
func actorState(a map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"start_ts", "connectable_ts", "sleep_ts", "pending_allocation_ts", "reschedule_ts", "destroy_ts"} {
		out[k] = a[k] != nil
	}
	out["error"] = a["error"]
	return out
}

// settled reports whether an actor has left its host for good: not connectable, and
// asleep, pending, rescheduled or destroyed.
func settled(a map[string]any) bool {
	return a["connectable_ts"] == nil &&
		(a["sleep_ts"] != nil || a["pending_allocation_ts"] != nil || a["reschedule_ts"] != nil || a["destroy_ts"] != nil)
}

// echo is what reference-runner.mjs answers.
type echo struct {
	ActorID    string            `json:"actorId"`
	Generation int               `json:"generation"`
	RunnerID   string            `json:"runnerId"`
	Method     string            `json:"method"`
	Path       string            `json:"path"`
	Headers    map[string]string `json:"headers"`
	Body       string            `json:"body"`
}

// echoOf decodes a gateway answer's echo; the zero echo when it is not one.
func echoOf(r Reply) echo {
	var e echo
	_ = json.Unmarshal(r.Body, &e)
	return e
}

// runningActor creates an actor of policy in pool and waits until a request through the
// gateway reaches it; it returns the actor id and the id of the runner that served it.
func runningActor(s *Session, pool, policy string) (aid, runnerID string) {
	s.T.Helper()
	aid = s.Actor(pool, policy, "")
	var e echo
	s.Eventually("the actor answering", 30*time.Second, func() bool {
		r := s.Gateway(http.MethodGet, aid, "/ping")
		e = echoOf(r)
		return r.Status == http.StatusOK && e.ActorID == aid
	})
	s.Record("running "+policy, actorState(s.GetActor(aid)))
	return aid, e.RunnerID
}

// drainAlone: the only runner of a pool shuts down gracefully (ToServerStopping, its
// actors stopped, the socket closed); its actors go by their crash policy (a sleep-policy
// actor is then asleep), and a request for the sleeping one waits for a runner until
// actor_ready_timeout.
func drainAlone(s *Session) {
	s.RunnerConfig("pool")
	r := s.StartRunner(RunnerOptions{Pool: "pool"})
	aid, _ := runningActor(s, "pool", "sleep")
	others := map[string]string{}
	for _, policy := range []string{"restart", "destroy"} {
		others[policy], _ = runningActor(s, "pool", policy)
	}
	r.Send("stop")
	r.AwaitEv("done", 60*time.Second)
	var a map[string]any
	s.Eventually("the actor settling after the drain", 60*time.Second, func() bool {
		a = s.GetActor(aid)
		return settled(a)
	})
	s.Record("after the drain", actorState(a))
	for _, policy := range []string{"restart", "destroy"} {
		var o map[string]any
		s.Eventually("the "+policy+" actor settling after the drain", 60*time.Second, func() bool {
			o = s.GetActor(others[policy])
			return settled(o)
		})
		s.Record(policy+" policy after the drain", actorState(o))
	}
	g := s.Gateway(http.MethodGet, aid, "/ping")
	e := errorOf(g)
	e["elapsed"] = bucket(g.Elapsed, 25*time.Second, 40*time.Second)
	s.Record("request with no runner", e)
	s.Record("request with no runner: metadata", metadataKeys(g))
}

// metadataKeys lists the metadata fields of an error answer, naming the actor id field's
// value when it is the actor's.
func metadataKeys(r Reply) any {
	var e struct {
		Metadata map[string]any `json:"metadata"`
	}
	if json.Unmarshal(r.Body, &e) != nil || e.Metadata == nil {
		return nil
	}
	return sortedKeys(e.Metadata)
}

// drainElsewhere: a pool of two runners; the one hosting a sleep-policy actor shuts down
// gracefully, the other stays.
func drainElsewhere(s *Session) {
	s.RunnerConfig("pool")
	first := s.StartRunner(RunnerOptions{Pool: "pool"})
	aid, _ := runningActor(s, "pool", "sleep")
	second := s.StartRunner(RunnerOptions{Pool: "pool"})
	first.Send("stop")
	first.AwaitEv("done", 60*time.Second)
	var a map[string]any
	s.Eventually("the actor settling after the drain", 60*time.Second, func() bool {
		a = s.GetActor(aid)
		// Connectable again, it runs on the second runner: the first is gone.
		return settled(a) || a["connectable_ts"] != nil
	})
	s.Record("after the drain", actorState(a))
	g := s.Gateway(http.MethodGet, aid, "/ping")
	e := echoOf(g)
	s.Record("request after the drain", map[string]any{"status": g.Status, "actor": e.ActorID == aid,
		"second runner": e.RunnerID == second.ID, "elapsed": bucket(g.Elapsed, 5*time.Second)})
}

// runnerKilled: the runner hosting an actor is SIGKILLed and a replacement of the same pool
// connects at once; a request sent right after the kill is answered by the actor on the new
// runner, within the lost threshold plus actor_ready_timeout.
func runnerKilled(s *Session) {
	s.RunnerConfig("pool")
	first := s.StartRunner(RunnerOptions{Pool: "pool"})
	aid, _ := runningActor(s, "pool", "sleep")
	first.Kill()
	second := s.StartRunner(RunnerOptions{Pool: "pool"})
	g := s.Gateway(http.MethodGet, aid, "/ping")
	e := echoOf(g)
	s.Record("request after the kill", map[string]any{"status": g.Status, "error": errorOf(g)["error"], "actor": e.ActorID == aid,
		"second runner": e.RunnerID == second.ID, "elapsed": bucket(g.Elapsed, 45*time.Second)})
	s.Record("after the request", actorState(s.GetActor(aid)))
}

// machineLost: the machine of an engine node and of the runner hosting an actor dies (both
// SIGKILLed; on a cluster the node holding that runner's socket, with the other node and a
// second runner on it alive), and the node comes back with its id and store. A request for
// the actor through the other node (the only one elsewhere) is answered by the actor on the
// second runner once the first is declared lost.
//
// On one node the second runner's socket dies with the engine too, and the reference may
// give it a new runner id when it reconnects (twice in about ten runs), and its answer came
// after 30 s, once after 62 s. So the answer counts as the second runner's under any id that
// runner was given, and the time bound is the client's 90 s patience.
func machineLost(s *Session) {
	s.RunnerConfig("pool")
	first, other := 0, s.LastNode()
	doomed := s.StartRunner(RunnerOptions{Pool: "pool", Node: &first})
	aid, _ := runningActor(s, "pool", "sleep")
	second := s.StartRunner(RunnerOptions{Pool: "pool", Node: &other})
	doomed.Kill()
	s.Target.Crash(s.T, first)
	r := s.GatewayVia(other, http.MethodGet, aid, "/ping")
	e := echoOf(r)
	s.T.Logf("%s: the request after the crash took %v, answered by runner %q; the first runner was %q, the second %q",
		s.Target.Name, r.Elapsed, e.RunnerID, doomed.ID, second.IDs())
	s.Record("request after the crash", map[string]any{"status": r.Status, "error": errorOf(r)["error"], "actor": e.ActorID == aid,
		"second runner": slices.Contains(second.IDs(), e.RunnerID), "elapsed": bucket(r.Elapsed, 90*time.Second)})
}

// runnerReconnects: the network between a runner and the engine fails (its connection is cut)
// and the runner reconnects at once with its key: a request for its actor sent during the
// cut is answered by the same runner, without waiting for the lost threshold.
func runnerReconnects(s *Session) {
	s.RunnerConfig("pool")
	u, err := url.Parse(s.Target.Nodes[0])
	if err != nil {
		s.T.Fatal(err)
	}
	p := startProxy(s.T)
	p.SetBackends([]string{u.Host})
	r := s.StartRunner(RunnerOptions{Pool: "pool", Endpoint: p.URL()})
	aid, _ := runningActor(s, "pool", "sleep")
	first := 0
	p.cut()
	g := s.Do(Request{Method: http.MethodGet, Path: "/gateway/" + aid + "/ping", Anonymous: true, Node: &first, Timeout: 30 * time.Second})
	e := echoOf(g)
	s.T.Logf("%s: the request during the cut took %v", s.Target.Name, g.Elapsed)
	s.Record("request during the cut", map[string]any{"status": g.Status, "actor": e.ActorID == aid,
		"same runner": e.RunnerID == r.ID, "elapsed": bucket(g.Elapsed, 10*time.Second)})
}
