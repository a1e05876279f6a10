package envoy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	proto "github.com/berthhq/berth/sdk/protocol/envoy"
	"github.com/berthhq/berth/sdk/runner"
	"github.com/berthhq/berth/tests/internal/harness"
)

// Actors hosted on envoys, against a real berth process: envoys are sdk/runner runners
// connected as envoys (Config.Envoy) in this process, or raw sockets where the test must
// control every frame (a lost envoy, the pace of an eviction).

// echoActor answers its gateway requests with where it runs; GET /count increments a
// counter kept in KV. WebSockets echo, and the message "sleep" makes the actor ask to sleep
// (not an HTTP request: the gateway retries those, on the woken actor too).
type echoActor struct{ envoy string }

func (a *echoActor) Start(context.Context, *runner.ActorContext) error { return nil }
func (a *echoActor) Stop(context.Context, *runner.ActorContext) error  { return nil }

func (a *echoActor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ac, _ := runner.FromContext(r.Context())
	out := map[string]any{"envoy": a.envoy, "generation": ac.Generation(), "path": r.URL.Path}
	switch r.URL.Path {
	case "/download": // ?mb=N MiB of byte((i·31) mod 251), streamed: flushed, in 64 KiB writes
		total, _ := strconv.Atoi(r.URL.Query().Get("mb"))
		total <<= 20
		w.Header().Set("Content-Type", "application/octet-stream")
		w.(http.Flusher).Flush()
		buf := make([]byte, 64<<10)
		for off := 0; off < total; off += len(buf) {
			b := buf[:min(len(buf), total-off)]
			for i := range b {
				b[i] = byte((off + i) * 31 % 251)
			}
			if _, err := w.Write(b); err != nil {
				return
			}
		}
		return
	case "/upload": // the body as the handler reads it: reads, bytes, largest read, sha256
		h := sha256.New()
		buf := make([]byte, 1<<20)
		reads, total, largest := 0, 0, 0
		for {
			n, err := r.Body.Read(buf)
			if n > 0 {
				reads++
				total += n
				largest = max(largest, n)
				h.Write(buf[:n])
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		out["reads"], out["bytes"], out["largest"], out["sha256"] = reads, total, largest, hex.EncodeToString(h.Sum(nil))
	case "/count":
		kv := ac.KV()
		n := 0
		if v, ok, err := kv.Get(r.Context(), []byte("count")); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		} else if ok {
			n, _ = strconv.Atoi(string(v))
		}
		n++
		if err := kv.Put(r.Context(), []byte("count"), []byte(strconv.Itoa(n))); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		out["count"] = n
	}
	_ = json.NewEncoder(w).Encode(out)
}

func (a *echoActor) ServeWebSocket(ctx context.Context, ws *runner.WebSocket) {
	for {
		typ, b, err := ws.Read(ctx)
		if err != nil {
			return
		}
		if string(b) == "sleep" {
			if ac, ok := runner.FromContext(ctx); ok {
				_ = ac.Sleep()
			}
			continue
		}
		if err := ws.Write(ctx, typ, append([]byte(a.envoy+":"), b...)); err != nil {
			return
		}
	}
}

// startEnvoy connects an SDK envoy of pool "pool" hosting the echo actor.
func startEnvoy(t *testing.T, e *harness.Engine, key string) *runner.Runner {
	t.Helper()
	r, err := runner.New(runner.Config{
		Endpoint: e.URL, Namespace: "default", Name: "pool", Key: key, Version: 1, TotalSlots: 1000, Envoy: true,
		Actors:         map[string]func() runner.Actor{"echo": func() runner.Actor { return &echoActor{envoy: key} }},
		BackoffInitial: 100 * time.Millisecond, BackoffMax: 500 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Shutdown(ctx, true)
	})
	registered(t, e, key)
	return r
}

// registered waits until envoy key is listed: the engine sends ToEnvoyInit before it
// registers the envoy, so an envoy's start does not mean it can take actors yet.
func registered(t *testing.T, e *harness.Engine, key string) {
	t.Helper()
	eventually(t, key+" registered", 10*time.Second, func() bool { _, ok := list(t, e)[key]; return ok })
}

// startEngine starts berth with the fast envoy timings (and env) and a runner config for
// "pool".
func startEngine(t *testing.T, normal map[string]any, env ...string) *harness.Engine {
	t.Helper()
	e := harness.StartEngine(t, harness.Settings{Env: append(slices.Clone(fast), env...)})
	e.CallJSON(t, "PUT", "/runner-configs/pool?namespace=default", map[string]any{
		"datacenters": map[string]any{"default": map[string]any{"normal": normal}},
	}, nil)
	return e
}

type actorJSON struct {
	ActorID string          `json:"actor_id"`
	SleepTs *int64          `json:"sleep_ts"`
	Error   json.RawMessage `json:"error"`
}

func createActor(t *testing.T, e *harness.Engine, key string) string {
	t.Helper()
	var out struct{ Actor actorJSON }
	e.CallJSON(t, "POST", "/actors?namespace=default", map[string]any{
		"name": "echo", "key": key, "runner_name_selector": "pool", "crash_policy": "sleep",
	}, &out)
	return out.Actor.ActorID
}

func getActor(t *testing.T, e *harness.Engine, aid string) actorJSON {
	t.Helper()
	var out struct{ Actors []actorJSON }
	e.GetJSON(t, "/actors?namespace=default&actor_ids="+aid, &out)
	if len(out.Actors) != 1 {
		t.Fatalf("actor %s listed %d times", aid, len(out.Actors))
	}
	return out.Actors[0]
}

var gatewayClient = &http.Client{Timeout: 30 * time.Second}

type echoReply struct {
	Envoy      string `json:"envoy"`
	Generation uint32 `json:"generation"`
	Path       string `json:"path"`
	Count      int    `json:"count"`
}

// gateway sends GET /gateway/{aid}{path} and decodes the echo actor's answer.
func gateway(t *testing.T, e *harness.Engine, aid, path string) echoReply {
	t.Helper()
	// Not e.Client: gateway paths are the actor's, outside the API contract it checks.
	resp, err := gatewayClient.Get(e.URL + "/gateway/" + aid + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /gateway/%s%s: %d %s", aid, path, resp.StatusCode, b)
	}
	var out echoReply
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("GET /gateway/%s%s: %v in %s", aid, path, err, b)
	}
	return out
}

// An actor on an envoy answers HTTP and WebSocket through /gateway, keeps its KV, sleeps
// when it asks to and wakes (a new generation) on the next request.
func TestEnvoyActorThroughGateway(t *testing.T) {
	e := startEngine(t, map[string]any{})
	startEnvoy(t, e, "envoy-a")
	aid := createActor(t, e, "one")

	if got := gateway(t, e, aid, "/hello"); got.Envoy != "envoy-a" || got.Path != "/hello" || got.Generation != 0 {
		t.Fatalf("first answer %+v", got)
	}
	for want := 1; want <= 3; want++ {
		if got := gateway(t, e, aid, "/count"); got.Count != want {
			t.Fatalf("count %d, want %d (KV through the envoy socket)", got.Count, want)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.URL, "http")+"/gateway/"+aid+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"ping", "pong"} {
		if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, b, err := ws.Read(ctx)
		if err != nil || string(b) != "envoy-a:"+msg {
			t.Fatalf("websocket echo %q, %v", b, err)
		}
	}
	if err := ws.Write(ctx, websocket.MessageText, []byte("sleep")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the actor asleep", 10*time.Second, func() bool { return getActor(t, e, aid).SleepTs != nil })
	_ = ws.CloseNow()
	if got := gateway(t, e, aid, "/count"); got.Generation != 1 || got.Count != 4 {
		t.Fatalf("after the wake %+v; want generation 1 and the KV kept (count 4)", got)
	}
}

// rawEnvoy is an envoy socket driven frame by frame: it answers pings, reports every actor
// it is told to start Running, and hands the commands to the test.
type rawEnvoy struct {
	*envoySock
	cmds   chan proto.CommandWrapper
	tunnel chan proto.ToEnvoyTunnelMessage // gateway requests to its actors
	closed <-chan websocket.CloseError

	mu   sync.Mutex
	next map[string]int64 // next event index per actor
}

func startRaw(t *testing.T, e *harness.Engine, key string) *rawEnvoy {
	t.Helper()
	s, _ := dial(t, e, "/envoys/connect", key)
	r := &rawEnvoy{envoySock: s, cmds: make(chan proto.CommandWrapper, 1024), tunnel: make(chan proto.ToEnvoyTunnelMessage, 4096), next: map[string]int64{}}
	closed := make(chan websocket.CloseError, 1)
	r.closed = closed
	defer registered(t, e, key)
	go func() {
		for {
			m, err := s.recv()
			if err != nil {
				var ce websocket.CloseError
				errors.As(err, &ce)
				closed <- ce
				return
			}
			switch m := m.(type) {
			case proto.ToEnvoyPing:
				r.write(proto.ToRivetPong{Ts: m.Ts})
			case proto.ToEnvoyCommands:
				for _, c := range m {
					if _, start := c.Inner.(proto.CommandStartActor); start {
						r.event(c.Checkpoint, proto.EventActorStateUpdate{State: proto.ActorStateRunning{}})
					}
					r.cmds <- c
				}
			case proto.ToEnvoyTunnelMessage:
				r.tunnel <- m
			}
		}
	}()
	return r
}

// write sends m, ignoring a closed socket (the test reads the close from r.closed).
func (r *rawEnvoy) write(m proto.ToRivet) {
	b, err := proto.EncodeToRivet(m, 8)
	if err == nil {
		_ = r.c.Write(context.Background(), websocket.MessageBinary, b)
	}
}

// event reports ev for the actor generation of cp.
func (r *rawEnvoy) event(cp proto.ActorCheckpoint, ev proto.Event) {
	r.mu.Lock()
	idx := r.next[cp.ActorID]
	r.next[cp.ActorID]++
	r.mu.Unlock()
	cp.Index = idx
	r.write(proto.ToRivetEvents{{Checkpoint: cp, Inner: ev}})
}

func (r *rawEnvoy) command(t *testing.T) proto.CommandWrapper {
	t.Helper()
	select {
	case c := <-r.cmds:
		return c
	case <-time.After(15 * time.Second):
		t.Fatal("no command")
	}
	return proto.CommandWrapper{}
}

// An envoy that disappears (its socket drops, no ToRivetStopping) loses its actors once it
// has not pinged for the lost threshold: they sleep with envoy_connection_lost, and the next
// request places them on another envoy.
func TestEnvoyLostActorsWakeElsewhere(t *testing.T) {
	e := startEngine(t, map[string]any{})
	raw := startRaw(t, e, "envoy-raw")
	aid := createActor(t, e, "lost")
	if c := raw.command(t); c.Checkpoint.ActorID != aid {
		t.Fatalf("command %+v, want the start of %s", c, aid)
	}
	startEnvoy(t, e, "envoy-b")
	_ = raw.c.CloseNow()
	eventually(t, "the actor asleep after its envoy was lost", 15*time.Second, func() bool {
		a := getActor(t, e, aid)
		return a.SleepTs != nil && strings.Contains(string(a.Error), "envoy_connection_lost")
	})
	if got := gateway(t, e, aid, "/where"); got.Envoy != "envoy-b" || got.Generation != 1 {
		t.Fatalf("after the wake %+v; want envoy-b, generation 1", got)
	}
}

// ToRivetStopping: the envoy leaves placement at once (stop_ts set), its actors are evicted
// after actor_eviction_delay, paced by min(1/actor_eviction_rate, actor_eviction_period/n),
// each told to stop with reason going_away and placed on another envoy once stopped; the
// socket closes with ws.eviction when the last has left.
func TestEnvoyStoppingEvictsPaced(t *testing.T) {
	// 4 actors over a 2 s period at 1 actor/s: 0.5 s apart, after a 1 s delay.
	e := startEngine(t, map[string]any{"actor_eviction_delay": 1, "actor_eviction_period": 2, "actor_eviction_rate": 1})
	raw := startRaw(t, e, "envoy-raw")
	var aids []string
	for i := range 4 {
		aids = append(aids, createActor(t, e, fmt.Sprint("evict-", i)))
		raw.command(t)
	}
	startEnvoy(t, e, "envoy-b")
	stopping := time.Now()
	raw.write(proto.ToRivetStopping{})
	eventually(t, "stop_ts set", 5*time.Second, func() bool { return list(t, e)["envoy-raw"].StopTs != nil })
	var at []time.Duration
	for range aids {
		c := raw.command(t)
		stop, ok := c.Inner.(proto.CommandStopActor)
		if !ok || stop.Reason != proto.StopActorReasonGoingAway {
			t.Fatalf("command %+v; want a going-away stop", c)
		}
		at = append(at, time.Since(stopping))
		raw.event(c.Checkpoint, proto.EventActorStateUpdate{State: proto.ActorStateStopped{Code: proto.StopCodeOK}})
	}
	if at[0] < 900*time.Millisecond {
		t.Errorf("first eviction %v after stopping; want the 1 s delay", at[0])
	}
	for i := 1; i < len(at); i++ {
		if gap := at[i] - at[i-1]; gap < 400*time.Millisecond {
			t.Errorf("evictions %d and %d %v apart; want about 500 ms", i-1, i, gap)
		}
	}
	closedWith(t, raw.closed, websocket.StatusNormalClosure, "ws.eviction")
	for _, aid := range aids {
		if got := gateway(t, e, aid, "/where"); got.Envoy != "envoy-b" {
			t.Fatalf("%s answered from %+v; want envoy-b", aid, got)
		}
	}
}

// Placement spread: 1,000 actors over 10 envoys, none above 1.5× the mean, with either
// placement strategy (pegboard.envoy_placement).
func TestEnvoyPlacementSpread(t *testing.T) {
	for _, strategy := range []string{"hash_ring", "load_balancer"} {
		t.Run(strategy, func(t *testing.T) { testSpread(t, strategy) })
	}
}

func testSpread(t *testing.T, strategy string) {
	e := startEngine(t, map[string]any{}, "BERTH__pegboard__envoy_placement="+strategy)
	for i := range 10 {
		startEnvoy(t, e, fmt.Sprintf("envoy-%02d", i))
	}
	const n, workers = 1000, 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				createActor(t, e, fmt.Sprint("spread-", i))
			}
		})
	}
	wg.Wait()
	l := list(t, e)
	total := uint64(0)
	for i := range 10 {
		total += l[fmt.Sprintf("envoy-%02d", i)].Slots
	}
	if total != n {
		t.Fatalf("slots add up to %d, want %d: %+v", total, n, l)
	}
	for k, v := range l {
		if v.Slots > n/10*3/2 {
			t.Errorf("%s holds %d actors; want at most 150 (1.5× the mean)", k, v.Slots)
		}
	}
}
