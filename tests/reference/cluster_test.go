package reference

import (
	"net/http"
	"time"
)

func init() {
	register(scenario{name: "other_node", run: otherNode})
}

// otherNode: a runner's socket is on one node (the first) and its actor's client talks to
// another (the last; on one node, the same): the actor is asked to sleep, woken, asked to
// destroy itself and asked for again, all through that other node. Every request gets its
// answer at once.
func otherNode(s *Session) {
	s.RunnerConfig("pool")
	first, other := 0, s.LastNode()
	s.StartRunner(RunnerOptions{Pool: "pool", Node: &first})
	aid := s.Actor("pool", "sleep", "")
	var r Reply
	s.Eventually("the actor answering through the other node", 30*time.Second, func() bool {
		r = s.GatewayVia(other, http.MethodGet, aid, "/ping")
		return r.Status == http.StatusOK
	})
	s.Record("request", map[string]any{"status": r.Status, "actor": echoOf(r).ActorID == aid})

	r = s.GatewayVia(other, http.MethodPost, aid, "/sleep")
	s.Record("sleep", map[string]any{"status": r.Status})
	var a map[string]any
	s.Eventually("the actor asleep", 30*time.Second, func() bool {
		a = s.GetActor(aid)
		return a["sleep_ts"] != nil
	})
	s.Record("asleep", actorState(a))
	r = s.GatewayVia(other, http.MethodGet, aid, "/ping")
	s.T.Logf("%s: a wake through node %d took %v", s.Target.Name, other, r.Elapsed)
	s.Record("wake through the other node", map[string]any{"status": r.Status, "actor": echoOf(r).ActorID == aid,
		"elapsed": bucket(r.Elapsed, 2*time.Second)})

	// The same through the node holding the runner's socket.
	s.GatewayVia(first, http.MethodPost, aid, "/sleep")
	s.Eventually("the actor asleep", 30*time.Second, func() bool { return s.GetActor(aid)["sleep_ts"] != nil })
	r = s.GatewayVia(first, http.MethodGet, aid, "/ping")
	s.T.Logf("%s: a wake through node %d took %v", s.Target.Name, first, r.Elapsed)
	s.Record("wake through the runner's node", map[string]any{"status": r.Status, "actor": echoOf(r).ActorID == aid,
		"elapsed": bucket(r.Elapsed, 2*time.Second)})

	r = s.GatewayVia(other, http.MethodPost, aid, "/destroy")
	s.Record("destroy", map[string]any{"status": r.Status})
	s.Eventually("the actor destroyed", 30*time.Second, func() bool {
		a = s.GetActor(aid)
		return a["destroy_ts"] != nil
	})
	r = s.GatewayVia(other, http.MethodGet, aid, "/ping")
	e := errorOf(r)
	e["elapsed"] = bucket(r.Elapsed, 2*time.Second)
	s.Record("request after the destroy", e)
}
