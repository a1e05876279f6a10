package runner

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// How long a test waits for a process to say something it should say soon: generous, since
// the machine may be busy; nothing waits this long when all is well.
const soon = 15 * time.Second

// npmRunner is the npm runner process, connected.
type npmRunner struct {
	*proc
	key  string // the runner_key it connects with
	id   string // the runner id from ToClientInit
	init event  // the ToClientInit it received
}

// startRunner starts conformance-runner.mjs against e as runner name, with extra environment
// (RUNNER_VERSION=…, RUNNER_SLOTS=…, RUNNER_METADATA=…), and waits for onConnected.
func startRunner(t *testing.T, e *engine, name string, env ...string) *npmRunner {
	t.Helper()
	p := startNode(t, "npm runner "+name, "conformance-runner.mjs", append([]string{"BERTH_ENDPOINT=" + e.URL, "RUNNER_NAME=" + name}, env...))
	r := &npmRunner{proc: p}
	r.key = p.AwaitEv("key", soon).RunnerKey
	r.init = p.AwaitEv("init", soon)
	conn := p.AwaitEv("connected", soon)
	r.id = conn.RunnerID
	if r.id == "" || r.init.RunnerID != r.id {
		t.Fatalf("%s: onConnected with runner id %q after ToClientInit with %q", p.Name, r.id, r.init.RunnerID)
	}
	return r
}

// startRaw opens a raw runner socket (raw-socket.mjs) on e's /runners/connect with query q and
// waits until it is open.
func startRaw(t *testing.T, e *engine, name, q string) *proc {
	t.Helper()
	p := startNode(t, "raw socket "+name, "raw-socket.mjs", nil, e.ConnectURL(q))
	if open := p.AwaitEv("open", soon); open.Protocol != "rivet" {
		t.Fatalf("%s: the server chose subprotocol %q, want rivet", p.Name, open.Protocol)
	}
	return p
}

// closeReason matches a close reason group.code#ray_id for that group.code.
func closeReason(groupCode string) *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(groupCode) + `#[0-9a-z]{30}$`)
}

// idPattern is a Rivet id: 30 lowercase base36 characters.
var idPattern = regexp.MustCompile(`^[0-9a-z]{30}$`)

// TestRegisters: the npm runner registers, is told the configured thresholds in ToClientInit,
// answers pings, and GET /runners shows it with every field as it connected.
func TestRegisters(t *testing.T) {
	needNode(t)
	t.Parallel()
	const lostThreshold = 4000
	e := startEngine(t, settings{LostThresholdMs: lostThreshold, PingIntervalMs: 500})
	nsID := e.defaultNamespaceID(t)

	before := time.Now().UnixMilli()
	r := startRunner(t, e, "conformance", "RUNNER_VERSION=3", "RUNNER_SLOTS=7", `RUNNER_METADATA={"suite":"berth","n":1}`)
	connectedAt := time.Now().UnixMilli()

	// The runner's view of ToClientInit.
	if !idPattern.MatchString(r.id) {
		t.Errorf("runner id %q is not 30 lowercase base36 characters", r.id)
	}
	if got := r.init.RunnerLostThreshold; got == nil || *got != lostThreshold {
		t.Errorf("ToClientInit runnerLostThreshold = %v, want %d (pegboard.runner_lost_threshold)", deref(got), lostThreshold)
	}
	if got := r.init.ActorStopThreshold; got == nil || *got != 1800000 {
		t.Errorf("ToClientInit actorStopThreshold = %v, want 1800000", deref(got))
	}
	if r.init.ServerlessDrainGracePeriod != nil {
		t.Errorf("ToClientInit serverlessDrainGracePeriod = %d, want none for a normal runner", *r.init.ServerlessDrainGracePeriod)
	}

	// A ping reaches the runner and its pong is recorded.
	ping := r.AwaitEv("ping", soon)
	e.awaitRunner(t, r.id, "pinged", soon, func(x runnerJSON) bool { return x.LastPingTs >= ping.Ts })

	list := e.runners(t, "")
	if len(list) != 1 || list[0].RunnerID != r.id {
		t.Fatalf("GET /runners = %v, want only runner %s", list, r.id)
	}
	got := list[0]
	want := runnerJSON{
		RunnerID: r.id, NamespaceID: nsID, Datacenter: "default", Name: "conformance", Key: r.key,
		Version: 3, TotalSlots: 7, RemainingSlots: 7,
		// Checked below, copied here.
		CreateTs: got.CreateTs, LastPingTs: got.LastPingTs, LastConnectedTs: got.LastConnectedTs, LastRtt: got.LastRtt, Metadata: got.Metadata,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GET /runners runner:\n got %v\nwant %v", got, want)
	}
	if got.CreateTs < before || got.CreateTs > connectedAt {
		t.Errorf("create_ts %d is not between the runner's start (%d) and its onConnected (%d)", got.CreateTs, before, connectedAt)
	}
	if got.LastConnectedTs == nil || *got.LastConnectedTs < got.CreateTs || *got.LastConnectedTs > connectedAt {
		t.Errorf("last_connected_ts = %v, want between create_ts %d and onConnected %d", deref(got.LastConnectedTs), got.CreateTs, connectedAt)
	}
	if got.LastPingTs < ping.Ts {
		t.Errorf("last_ping_ts %d is before the ping the runner answered (%d)", got.LastPingTs, ping.Ts)
	}
	if got.LastRtt > 5000 {
		t.Errorf("last_rtt %d ms on loopback", got.LastRtt)
	}
	var meta map[string]any
	if err := json.Unmarshal(got.Metadata, &meta); err != nil || !reflect.DeepEqual(meta, map[string]any{"suite": "berth", "n": 1.0}) {
		t.Errorf("metadata = %s, want what the runner sent: {\"n\":1,\"suite\":\"berth\"}", got.Metadata)
	}

	// The filters find it by name and id, and only then.
	for q, n := range map[string]int{
		"name=conformance": 1, "name=other": 0,
		"runner_id=" + r.id: 1, "runner_ids=" + r.id: 1,
	} {
		if l := e.runners(t, q); len(l) != n {
			t.Errorf("GET /runners?%s: %d runners, want %d", q, len(l), n)
		}
	}
	var names struct {
		Names []string `json:"names"`
	}
	e.GetJSON(t, "/runners/names?namespace=default", &names)
	if !slices.Equal(names.Names, []string{"conformance"}) {
		t.Errorf("GET /runners/names = %q, want [conformance]", names.Names)
	}
	if n := r.Count("disconnected"); n != 0 {
		t.Errorf("the runner saw %d disconnects while registering", n)
	}
}

// TestHandshakeRefused: every refused handshake is accepted as a WebSocket with subprotocol
// rivet, then closed with 1011 and "group.code#ray_id"; nothing is registered. A runner
// socket on the path with a trailing slash is served like the plain one.
func TestHandshakeRefused(t *testing.T) {
	needNode(t)
	t.Parallel()
	e := startEngine(t, settings{})
	const ok = "protocol_version=7&namespace=default&runner_key="
	init := `{"init":{"name":"raw","version":1,"totalSlots":1}}`
	cases := []struct {
		name, query string
		send        []string
		want        string
		minDelay    time.Duration // the close comes no sooner after open
	}{
		{name: "missing protocol_version", query: "namespace=default&runner_key=k1", send: []string{init}, want: "ws.invalid_url"},
		{name: "missing namespace", query: "protocol_version=7&runner_key=k2", send: []string{init}, want: "ws.invalid_url"},
		{name: "missing runner_key", query: "protocol_version=7&namespace=default", send: []string{init}, want: "ws.invalid_url"},
		{name: "unsupported protocol_version", query: "protocol_version=99&namespace=default&runner_key=k3", send: []string{init}, want: "ws.invalid_packet"},
		{name: "unknown namespace", query: "protocol_version=7&namespace=nope&runner_key=k4", send: []string{init}, want: "namespace.not_found"},
		{name: "text frame first", query: ok + "k5", send: []string{`{"text":"hello"}`}, want: "ws.invalid_initial_packet"},
		{name: "garbage bytes first", query: ok + "k6", send: []string{`{"hex":"ff01"}`}, want: "ws.invalid_packet"},
		{name: "another message first", query: ok + "k7", send: []string{`{"stopping":true}`}, want: "ws.invalid_initial_packet"},
		{name: "no init", query: ok + "k8", want: "ws.timed_out_waiting_for_init", minDelay: 4500 * time.Millisecond},
	}
	t.Run("refused", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				p := startNode(t, "raw socket "+c.name, "raw-socket.mjs", nil, e.ConnectURL(c.query))
				open := p.AwaitEv("open", soon)
				if open.Protocol != "rivet" {
					t.Errorf("the server chose subprotocol %q, want rivet", open.Protocol)
				}
				for _, s := range c.send {
					p.Send(s)
				}
				cl := p.AwaitEv("close", soon)
				if cl.Code != 1011 || !closeReason(c.want).MatchString(cl.Reason) || len(cl.Reason) > 123 {
					t.Errorf("closed with %d %q, want 1011 %q#<ray id> (at most 123 bytes)", cl.Code, cl.Reason, c.want)
				}
				if d := cl.At.Sub(open.At); d < c.minDelay {
					t.Errorf("closed %v after opening, want no sooner than %v", d, c.minDelay)
				}
				if n := p.Count("message"); n != 0 {
					t.Errorf("the refused socket received %d messages: %s", n, p.Transcript())
				}
			})
		}
	})
	if l := e.runners(t, "include_stopped=true"); len(l) != 0 {
		t.Errorf("refused handshakes registered runners: %v", l)
	}

	t.Run("trailing slash", func(t *testing.T) {
		p := startNode(t, "raw socket trailing slash", "raw-socket.mjs", nil,
			"ws"+e.URL[len("http"):]+"/runners/connect/?"+ok+"slash")
		p.AwaitEv("open", soon)
		p.Send(init)
		in := p.Await("ToClientInit", soon, func(ev event) bool { return ev.Ev == "message" && ev.Tag == "ToClientInit" })
		if !idPattern.MatchString(in.RunnerID) {
			t.Errorf("ToClientInit runner id %q", in.RunnerID)
		}
		if _, found := e.runner(t, in.RunnerID); !found {
			t.Errorf("runner %s from /runners/connect/ is not listed", in.RunnerID)
		}
	})
}

// TestEviction: a second socket with the npm runner's runner_key takes the runner over once it
// has sent its init: it gets the same runner id, the npm runner is closed with 1000
// ws.eviction, shuts down and does not reconnect.
func TestEviction(t *testing.T) {
	needNode(t)
	t.Parallel()
	e := startEngine(t, settings{PingIntervalMs: 500})
	r := startRunner(t, e, "conformance")

	raw := startRaw(t, e, "same key", "protocol_version=7&namespace=default&runner_key="+url.QueryEscape(r.key))
	if n := r.Count("disconnected"); n != 0 {
		t.Errorf("the npm runner was disconnected by a socket that had not sent its init: %s", r.Transcript())
	}
	raw.Send(`{"init":{"name":"conformance","version":1,"totalSlots":10}}`)
	in := raw.Await("ToClientInit", soon, func(ev event) bool { return ev.Ev == "message" && ev.Tag == "ToClientInit" })
	if in.RunnerID != r.id {
		t.Errorf("the new socket got runner id %s, want the evicted runner's %s", in.RunnerID, r.id)
	}

	// The npm runner's view.
	dis := r.AwaitEv("disconnected", soon)
	if dis.Code != 1000 || !closeReason("ws.eviction").MatchString(dis.Reason) {
		t.Errorf("the npm runner saw close %d %q, want 1000 ws.eviction#<ray id>", dis.Code, dis.Reason)
	}
	r.AwaitEv("shutdown", soon)

	// The runner stays registered, held by the new socket, which keeps getting pings. Had the
	// npm runner come back (its reconnect backoff is 1–1.25 s), it would have evicted the new
	// socket in turn before a ping sent 2.5 s after the eviction.
	evictedMs := dis.At.UnixMilli()
	raw.Await("a ping 2.5 s after the eviction", soon, func(ev event) bool {
		return ev.Ev == "message" && ev.Tag == "ToClientPing" && ev.Ts > evictedMs+2500
	})
	if got, found := e.runner(t, r.id); !found || got.StopTs != nil || got.DrainTs != nil || got.Key != r.key {
		t.Errorf("after the eviction GET /runners shows %v (listed %v), want the runner live with key %s", got, found, r.key)
	}
	if n := raw.Count("close"); n != 0 {
		t.Errorf("the new socket was closed: %s", raw.Transcript())
	}
	for _, ev := range raw.Seen() {
		if ev.Tag == "ToClientCommands" {
			t.Errorf("the new socket got ToClientCommands with no commands stored (Rivet sends none): %s", ev.Line)
		}
	}
	if n := r.Count("connected"); n != 1 {
		t.Errorf("the evicted npm runner connected %d times, want once (no reconnect after ws.eviction)", n)
	}
}

// TestGracefulStop: a runner that stops gracefully (ToServerStopping) or that an operator
// drains (POST /runners/{id}/drain) with no actors is drained and stopped at once, not after
// runner_lost_threshold as on Rivet: drain_ts and stop_ts are written, it leaves the default
// list, and the engine closes its socket with 1000 ws.eviction when the runner does not close
// it first, after which the npm runner shuts down. Other runners are untouched.
func TestGracefulStop(t *testing.T) {
	needNode(t)
	t.Parallel()
	const lostThreshold = 10000 // long, so that "at once" cannot be mistaken for the threshold
	e := startEngine(t, settings{LostThresholdMs: lostThreshold})
	bystander := startRunner(t, e, "bystander")

	// checkStopped waits for runner id to be stopped and checks how it got there.
	checkStopped := func(t *testing.T, id string, asked time.Time) {
		t.Helper()
		got := e.awaitRunner(t, id, "stopped", lostThreshold/2*time.Millisecond, func(x runnerJSON) bool { return x.StopTs != nil })
		switch {
		case got.DrainTs == nil:
			t.Errorf("stopped without drain_ts: %v", got)
		case *got.DrainTs < asked.UnixMilli()-5 || *got.DrainTs > *got.StopTs:
			t.Errorf("drain_ts %d, stop_ts %d: want asked (%d) ≤ drain_ts ≤ stop_ts", *got.DrainTs, *got.StopTs, asked.UnixMilli())
		case *got.StopTs-*got.DrainTs >= lostThreshold/2:
			t.Errorf("stop_ts came %d ms after drain_ts; a runner with no actors stops at once", *got.StopTs-*got.DrainTs)
		}
		if e.listed(t, id) {
			t.Errorf("stopped runner %s is still in the default GET /runners list", id)
		}
	}

	t.Run("shutdown(false)", func(t *testing.T) {
		r := startRunner(t, e, "graceful")
		asked := time.Now()
		r.Send("stop")
		// The runner sends ToServerStopping and, having no actors, closes at once with 1000
		// pegboard.runner_shutdown; the engine's own close (1000 ws.eviction) may cross it.
		dis := r.AwaitEv("disconnected", soon)
		if dis.Code != 1000 || (dis.Reason != "pegboard.runner_shutdown" && !closeReason("ws.eviction").MatchString(dis.Reason)) {
			t.Errorf("the runner saw close %d %q, want 1000 pegboard.runner_shutdown or ws.eviction#<ray id>", dis.Code, dis.Reason)
		}
		t.Logf("the runner saw close %d %q", dis.Code, dis.Reason)
		r.AwaitEv("shutdown", soon)
		r.Await("stop done", soon, func(ev event) bool { return ev.Ev == "done" && ev.Command == "stop" })
		checkStopped(t, r.id, asked)
	})

	t.Run("engine closes", func(t *testing.T) {
		r := startRunner(t, e, "stopping")
		asked := time.Now()
		r.Send("send-stopping") // ToServerStopping only: the engine must end the socket
		dis := r.AwaitEv("disconnected", soon)
		if dis.Code != 1000 || !closeReason("ws.eviction").MatchString(dis.Reason) {
			t.Errorf("the runner saw close %d %q, want 1000 ws.eviction#<ray id>", dis.Code, dis.Reason)
		}
		r.AwaitEv("shutdown", soon) // evicted: the runner shuts down instead of reconnecting
		checkStopped(t, r.id, asked)
		if n := r.Count("connected"); n != 1 {
			t.Errorf("the stopped runner connected %d times, want once", n)
		}
	})

	t.Run("operator drain", func(t *testing.T) {
		r := startRunner(t, e, "drained")
		asked := time.Now()
		answer := e.drain(t, r.id)
		if answer.RunnerID != r.id || answer.DrainTs == nil {
			t.Errorf("POST /runners/%s/drain answered %v, want the runner with drain_ts", r.id, answer)
		}
		dis := r.AwaitEv("disconnected", soon)
		if dis.Code != 1000 || !closeReason("ws.eviction").MatchString(dis.Reason) {
			t.Errorf("the runner saw close %d %q, want 1000 ws.eviction#<ray id>", dis.Code, dis.Reason)
		}
		r.AwaitEv("shutdown", soon)
		checkStopped(t, r.id, asked)
		// Idempotent: a second drain changes nothing.
		before, _ := e.runner(t, r.id)
		if again := e.drain(t, r.id); !reflect.DeepEqual(again, before) {
			t.Errorf("a second drain answered %v, want the runner unchanged: %v", again, before)
		}
	})

	if got, found := e.runner(t, bystander.id); !found || got.DrainTs != nil || got.StopTs != nil || !e.listed(t, bystander.id) {
		t.Errorf("the other runner: %v (found %v), want it live", got, found)
	}
	if n := bystander.Count("disconnected"); n != 0 {
		t.Errorf("the other runner was disconnected: %s", bystander.Transcript())
	}
}

// TestKilledRunnerIsLost: a runner killed with SIGKILL (no close frame) stays registered until
// runner_lost_threshold has passed since its last ping, then is stopped (stop_ts, no drain_ts)
// and leaves the default list, within a bounded time.
func TestKilledRunnerIsLost(t *testing.T) {
	needNode(t)
	t.Parallel()
	// The ping interval must be well under the threshold, or a live runner is lost too.
	const lostThreshold = 2000
	e := startEngine(t, settings{LostThresholdMs: lostThreshold, PingIntervalMs: 500})
	r := startRunner(t, e, "doomed")
	ping := r.AwaitEv("ping", soon)
	e.awaitRunner(t, r.id, "pinged", soon, func(x runnerJSON) bool { return x.LastPingTs >= ping.Ts })

	r.Kill()
	killed := time.Now()
	<-r.Exited()

	// Rivet takes 15–25 s with its 15 s threshold (docs/protocol.md, "Observed behaviour of
	// the Rivet engine"); berth's bound here is the threshold plus a generous 10 s for its
	// expiry loop and a busy machine.
	got := e.awaitRunner(t, r.id, "stopped", lostThreshold*time.Millisecond+10*time.Second, func(x runnerJSON) bool { return x.StopTs != nil })
	if *got.StopTs < got.LastPingTs+lostThreshold {
		t.Errorf("stop_ts %d is less than runner_lost_threshold (%d ms) after last_ping_ts %d", *got.StopTs, lostThreshold, got.LastPingTs)
	}
	if *got.StopTs < killed.UnixMilli() {
		t.Errorf("stop_ts %d is before the kill (%d)", *got.StopTs, killed.UnixMilli())
	}
	if got.DrainTs != nil {
		t.Errorf("a lost runner got drain_ts %d; only a drained one should", *got.DrainTs)
	}
	if e.listed(t, r.id) {
		t.Errorf("lost runner %s is still in the default GET /runners list", r.id)
	}
}

// TestBadFrameIsolated: a runner socket that sends a frame that does not decode is closed with
// 1011 ws.invalid_packet (after ignoring a text frame), while the npm runner on the same engine
// stays connected and keeps being pinged.
func TestBadFrameIsolated(t *testing.T) {
	needNode(t)
	t.Parallel()
	e := startEngine(t, settings{PingIntervalMs: 500})
	good := startRunner(t, e, "good")
	good.AwaitEv("ping", soon)

	bad := startRaw(t, e, "bad", "protocol_version=7&namespace=default&runner_key=bad")
	bad.Send(`{"init":{"name":"bad","version":1,"totalSlots":1}}`)
	bad.Await("ToClientInit", soon, func(ev event) bool { return ev.Ev == "message" && ev.Tag == "ToClientInit" })
	bad.Send(`{"text":"text frames after init are ignored"}`)
	bad.Send(`{"hex":"ff01"}`)
	cl := bad.AwaitEv("close", soon)
	if cl.Code != 1011 || !closeReason("ws.invalid_packet").MatchString(cl.Reason) {
		t.Errorf("the bad socket closed with %d %q, want 1011 ws.invalid_packet#<ray id>", cl.Code, cl.Reason)
	}
	closedMs := cl.At.UnixMilli()

	// The good runner is pinged after the bad socket closed, answers, and is recorded.
	ping := good.Await("a ping after the bad frame", soon, func(ev event) bool { return ev.Ev == "ping" && ev.Ts > closedMs })
	got := e.awaitRunner(t, good.id, "pinged after the bad frame", soon, func(x runnerJSON) bool { return x.LastPingTs >= ping.Ts })
	if got.DrainTs != nil || got.StopTs != nil {
		t.Errorf("the good runner: %v, want it live", got)
	}
	if n := good.Count("disconnected"); n != 0 {
		t.Errorf("the good runner was disconnected: %s", good.Transcript())
	}
}

func deref(p *int64) any {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// TestEngineRestart: an engine that shuts down (SIGTERM) closes the npm runner's socket with
// 1011 ws.going_away, so the runner reconnects with backoff instead of shutting down; once the
// engine is back on the same store it registers again under the same runner id, and is pinged.
func TestEngineRestart(t *testing.T) {
	needNode(t)
	t.Parallel()
	e := newEngine(t, settings{PingIntervalMs: 500}, "file://"+t.TempDir()+"/db")
	e.Start()
	r := startRunner(t, e, "survivor")
	first, found := e.runner(t, r.id)
	if !found {
		t.Fatalf("runner %s is not listed", r.id)
	}

	e.Stop()
	dis := r.AwaitEv("disconnected", soon)
	if dis.Code != 1011 || !closeReason("ws.going_away").MatchString(dis.Reason) {
		t.Errorf("at the engine's shutdown the runner saw close %d %q, want 1011 ws.going_away#<ray id>", dis.Code, dis.Reason)
	}

	e.Start()
	again := r.AwaitEv("init", soon)
	if again.RunnerID != r.id {
		t.Errorf("after the restart the runner got id %s, want its old id %s", again.RunnerID, r.id)
	}
	r.AwaitEv("connected", soon)
	ping := r.AwaitEv("ping", soon)
	got := e.awaitRunner(t, r.id, "pinged after the restart", soon, func(x runnerJSON) bool { return x.LastPingTs >= ping.Ts })
	if got.DrainTs != nil || got.StopTs != nil || got.Key != r.key || got.CreateTs != first.CreateTs {
		t.Errorf("after the restart: %v, want the same live runner as before: %v", got, first)
	}
	if got.LastConnectedTs == nil || first.LastConnectedTs == nil || *got.LastConnectedTs <= *first.LastConnectedTs {
		t.Errorf("last_connected_ts %v after the reconnect, want later than %v", deref(got.LastConnectedTs), deref(first.LastConnectedTs))
	}
	if l := e.runners(t, "include_stopped=true"); len(l) != 1 {
		t.Errorf("after the restart %d runners are listed, want 1: %v", len(l), l)
	}
	if n := r.Count("shutdown"); n != 0 {
		t.Errorf("the runner shut down instead of reconnecting: %s", r.Transcript())
	}
}

// TestFrozenRunnerTimesOut: a runner that stops answering pings (its process frozen with
// SIGSTOP) has its socket closed with 1011 ws.timed_out after runner_ping_timeout_ms; once it
// runs again it sees that close, reconnects and keeps its runner id, the lost threshold not
// having passed.
func TestFrozenRunnerTimesOut(t *testing.T) {
	needNode(t)
	t.Parallel()
	const pingTimeout = 1500
	e := startEngine(t, settings{PingIntervalMs: 500, PingTimeoutMs: pingTimeout, LostThresholdMs: 30000})
	r := startRunner(t, e, "frozen")
	ping := r.AwaitEv("ping", soon)
	e.awaitRunner(t, r.id, "pinged", soon, func(x runnerJSON) bool { return x.LastPingTs >= ping.Ts })

	r.Signal(syscall.SIGSTOP)
	stopped := true
	defer func() {
		if stopped {
			r.Signal(syscall.SIGCONT)
		}
	}()
	// Poll until the engine has gone without a pong for longer than the ping timeout (plus a
	// ping interval and margin for its check), then let the runner run again.
	e.awaitRunner(t, r.id, "silent for longer than the ping timeout", soon, func(x runnerJSON) bool {
		return time.Now().UnixMilli()-x.LastPingTs > pingTimeout+1500
	})
	r.Signal(syscall.SIGCONT)
	stopped = false

	dis := r.AwaitEv("disconnected", soon)
	if dis.Code != 1011 || !closeReason("ws.timed_out").MatchString(dis.Reason) {
		t.Errorf("the frozen runner saw close %d %q, want 1011 ws.timed_out#<ray id>", dis.Code, dis.Reason)
	}
	again := r.AwaitEv("init", soon)
	if again.RunnerID != r.id {
		t.Errorf("after reconnecting the runner got id %s, want %s", again.RunnerID, r.id)
	}
	r.AwaitEv("connected", soon)
	got, _ := e.runner(t, r.id)
	if got.DrainTs != nil || got.StopTs != nil {
		t.Errorf("after reconnecting: %v, want the runner live", got)
	}
}

// TestAuth: with an admin token configured, the npm runner given the token (subprotocol
// rivet_token.<t>) registers; a socket without it is refused before the upgrade with 400
// guard.missing_header, and one with a wrong token with 403 api.forbidden.
func TestAuth(t *testing.T) {
	needNode(t)
	t.Parallel()
	const token = "s3cret-token"
	e := startEngine(t, settings{AdminToken: token})
	r := startRunner(t, e, "authorized", "RUNNER_TOKEN="+token)
	if _, found := e.runner(t, r.id); !found {
		t.Errorf("runner %s with the token is not listed", r.id)
	}
	q := e.ConnectURL("protocol_version=7&namespace=default&runner_key=intruder")
	// A refused token: the socket opens and is closed at once with 1008 and the error's key
	// (the reason the runner logs), as on Rivet, whose close code is 1011.
	for _, c := range []struct {
		name   string
		protos []string
		code   string
	}{
		{"no token", []string{"rivet"}, "api.unauthorized"},
		{"wrong token", []string{"rivet", "rivet_token.wrong"}, "api.forbidden"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startNode(t, "raw socket "+c.name, "raw-socket.mjs", nil, append([]string{q}, c.protos...)...)
			ev := p.AwaitEv("close", soon)
			if ev.Code != 1008 || !strings.HasPrefix(ev.Reason, c.code+"#") {
				t.Errorf("closed with %d %q, want 1008 %s#<ray>", ev.Code, ev.Reason, c.code)
			}
		})
	}
	if l := e.runners(t, "include_stopped=true"); len(l) != 1 {
		t.Errorf("%d runners listed, want only the authorized one: %v", len(l), l)
	}
}
