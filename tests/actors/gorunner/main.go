// Command gorunner is the Go runner of the berth actor tests (tests/actors): sdk/runner
// hosting the "probe" actor, with the environment, stdin commands, stdout events and actor
// routes of tests/npm/actor-runner.mjs (see there), so that one test body runs against the
// npm runner and the Go SDK. Its reconnect backoff is shortened (250 ms, at most 2 s) so that
// it comes back soon after an engine restart, as the npm runner (1 s) does.
package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/berthhq/berth/sdk/runner"
)

// out writes the events; one line each, whole.
var out = struct {
	sync.Mutex
	enc *json.Encoder
}{enc: json.NewEncoder(os.Stdout)}

func emit(ev string, fields map[string]any) {
	m := map[string]any{"ev": ev}
	for k, v := range fields {
		m[k] = v
	}
	out.Lock()
	defer out.Unlock()
	_ = out.enc.Encode(m)
}

// stops holds the stops while hold-stops is in force.
type stops struct {
	mu      sync.Mutex
	holding bool
	release chan struct{} // closed by release-stops
}

func (s *stops) hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.holding {
		s.holding, s.release = true, make(chan struct{})
	}
}

func (s *stops) releaseAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holding {
		s.holding = false
		close(s.release)
	}
}

// wait returns a channel to wait on, or nil when stops are not held.
func (s *stops) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.holding {
		return nil
	}
	return s.release
}

func main() {
	endpoint := os.Getenv("BERTH_ENDPOINT")
	if endpoint == "" {
		emit("error", map[string]any{"message": "BERTH_ENDPOINT is not set"})
		os.Exit(2)
	}
	slots := uint64(10)
	if s := os.Getenv("RUNNER_SLOTS"); s != "" {
		var err error
		if slots, err = strconv.ParseUint(s, 10, 32); err != nil {
			emit("error", map[string]any{"message": "RUNNER_SLOTS: " + err.Error()})
			os.Exit(2)
		}
	}
	st := &stops{}
	var r *runner.Runner
	var err error
	r, err = runner.New(runner.Config{
		Endpoint:       endpoint,
		Namespace:      envOr("BERTH_NAMESPACE", "default"),
		Name:           envOr("RUNNER_NAME", "actors"),
		Version:        1,
		TotalSlots:     uint32(slots),
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
		BackoffInitial: 250 * time.Millisecond,
		BackoffMax:     2 * time.Second,
		Hooks: runner.Hooks{
			OnConnected: func(id string) { emit("connected", map[string]any{"runnerId": id}) },
			OnDisconnected: func(err error) {
				f := map[string]any{"reason": err.Error()}
				var ce *runner.CloseError
				if errors.As(err, &ce) {
					f["code"], f["reason"] = ce.CloseCode, ce.Reason
				}
				emit("disconnected", f)
			},
			OnShutdown: func(error) { emit("shutdown", nil) },
		},
		Actors: map[string]func() runner.Actor{
			"probe": func() runner.Actor { return &probe{stops: st, runnerID: func() string { return r.RunnerID() }} },
		},
	})
	if err != nil {
		emit("error", map[string]any{"message": err.Error()})
		os.Exit(2)
	}
	emit("key", map[string]any{"runnerKey": r.Key()})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := r.Start(ctx); err != nil {
		emit("error", map[string]any{"message": "start: " + err.Error()})
	} else {
		emit("started", nil)
	}

	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		cmd := strings.TrimSpace(sc.Text())
		switch cmd {
		case "":
			continue
		case "hold-stops":
			st.hold()
		case "release-stops":
			st.releaseAll()
		case "stop":
			go func() { // a graceful shutdown waits for the actors, whose stops may be held
				if err := r.Shutdown(ctx, false); err != nil {
					emit("error", map[string]any{"message": "stop: " + err.Error()})
					return
				}
				emit("done", map[string]any{"command": cmd})
			}()
			continue
		default:
			emit("error", map[string]any{"message": fmt.Sprintf("unknown command %q", cmd)})
			continue
		}
		emit("done", map[string]any{"command": cmd})
	}
	// stdin ended: leave at once.
	st.releaseAll()
	_ = r.Shutdown(ctx, true)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// probe is the test actor (see tests/npm/actor-runner.mjs).
type probe struct {
	stops    *stops
	runnerID func() string
	ac       *runner.ActorContext
}

func (p *probe) Start(ctx context.Context, ac *runner.ActorContext) error {
	p.ac = ac
	var input any
	if in := ac.Input(); in != nil {
		input = base64.StdEncoding.EncodeToString(in)
	}
	var key any
	if k, ok := ac.Key(); ok {
		key = k
	}
	emit("actorStart", map[string]any{"actorId": ac.ID(), "generation": ac.Generation(), "name": ac.Name(), "key": key, "input": input})
	var opts struct {
		CrashBelowGen uint32 `json:"crashBelowGen"`
	}
	if in := ac.Input(); in != nil {
		if err := json.Unmarshal(in, &opts); err != nil {
			return fmt.Errorf("probe: input: %w", err)
		}
	}
	if ac.Generation() < opts.CrashBelowGen {
		return fmt.Errorf("probe: generation %d crashes on start", ac.Generation())
	}
	return nil
}

func (p *probe) Stop(ctx context.Context, ac *runner.ActorContext) error {
	emit("actorStop", map[string]any{"actorId": ac.ID(), "generation": ac.Generation()})
	if ch := p.stops.wait(); ch != nil {
		emit("stopHeld", map[string]any{"actorId": ac.ID(), "generation": ac.Generation()})
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (p *probe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ac := p.ac
	route := r.Method + " " + r.URL.Path
	var err error
	switch route {
	case "GET /state":
		writeJSON(w, 200, map[string]any{"actorId": ac.ID(), "generation": ac.Generation(), "runnerId": p.runnerID()})
		return
	case "POST /sleep":
		err = ac.Sleep()
	case "POST /destroy":
		err = ac.Destroy()
	case "POST /alarm":
		ms, perr := strconv.ParseInt(r.URL.Query().Get("in"), 10, 64)
		if perr != nil {
			writeJSON(w, 400, map[string]any{"error": "in: " + perr.Error()})
			return
		}
		at := time.Now().Add(time.Duration(ms) * time.Millisecond)
		if err = ac.SetAlarm(at); err == nil {
			writeJSON(w, 200, map[string]any{"alarmTs": at.UnixMilli()})
			return
		}
	case "POST /kv":
		res, kerr := p.kv(r)
		if kerr != nil {
			writeJSON(w, 422, map[string]any{"error": kerr.Error()})
			return
		}
		writeJSON(w, 200, res)
		return
	default:
		writeJSON(w, 404, map[string]any{"error": "no route " + route})
		return
	}
	if err != nil {
		writeJSON(w, 503, map[string]any{"error": err.Error()})
		return
	}
	writeJSON(w, 200, map[string]any{})
}

// kvRequest is one KV call of POST /kv.
type kvRequest struct {
	Op        string      `json:"op"`
	Keys      []string    `json:"keys"`
	Entries   [][2]string `json:"entries"`
	Prefix    *string     `json:"prefix"`
	Start     *string     `json:"start"`
	End       *string     `json:"end"`
	Exclusive bool        `json:"exclusive"`
	Reverse   bool        `json:"reverse"`
	Limit     int         `json:"limit"`
}

func (p *probe) kv(r *http.Request) (any, error) {
	var req kvRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return nil, err
	}
	ctx, kv := r.Context(), p.ac.KV()
	bs := func(ss []string) [][]byte {
		out := make([][]byte, len(ss))
		for i, s := range ss {
			out[i] = []byte(s)
		}
		return out
	}
	pairs := func(es []runner.Entry) map[string]any {
		out := make([][2]string, len(es))
		for i, e := range es {
			out[i] = [2]string{string(e.Key), string(e.Value)}
		}
		return map[string]any{"entries": out}
	}
	switch req.Op {
	case "get":
		es, err := kv.GetMany(ctx, bs(req.Keys))
		if err != nil {
			return nil, err
		}
		values := make([]*string, len(req.Keys))
		for i, k := range req.Keys {
			for _, e := range es {
				if string(e.Key) == k {
					v := string(e.Value)
					values[i] = &v
				}
			}
		}
		return map[string]any{"values": values}, nil
	case "list":
		o := runner.ListOptions{Exclusive: req.Exclusive, Reverse: req.Reverse, Limit: req.Limit}
		if req.Prefix != nil {
			o.Prefix = []byte(*req.Prefix)
		}
		if req.Start != nil {
			o.Start, o.End = []byte(*req.Start), []byte(deref(req.End))
		}
		es, err := kv.List(ctx, o)
		if err != nil {
			return nil, err
		}
		return pairs(es), nil
	case "put":
		es := make([]runner.Entry, len(req.Entries))
		for i, e := range req.Entries {
			es[i] = runner.Entry{Key: []byte(e[0]), Value: []byte(e[1])}
		}
		return map[string]any{}, kv.PutMany(ctx, es)
	case "delete":
		return map[string]any{}, kv.Delete(ctx, bs(req.Keys)...)
	case "deleteRange":
		return map[string]any{}, kv.DeleteRange(ctx, []byte(deref(req.Start)), []byte(deref(req.End)))
	case "drop":
		return map[string]any{}, kv.Drop(ctx)
	}
	return nil, fmt.Errorf("unknown op %q", req.Op)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
