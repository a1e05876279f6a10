package multidc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/sdk/runner"
)

// TestGlobalKeys starts three datacenters and checks that a key has one actor across all of
// them: concurrent get-or-creates of the same keys from every datacenter, also while a
// datacenter that is not the leader is stopped (SIGSTOP) and resumed or killed (SIGKILL) and
// restarted; a destroy that frees a key for another datacenter; and, with the leader stopped,
// existing keys still answered and new ones refused with 503. Every acknowledged answer is
// recorded, and a history check at the end asserts that no key ever had two actors and that
// every acknowledged actor is what lookups return.
func TestGlobalKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("builds berth and starts three processes")
	}
	c := newCluster(t, buildBerth(t, t.TempDir()), time.Second)
	seedPools(t, c)
	c.start()
	a, b, cc := c.dcs[0], c.dcs[1], c.dcs[2]
	h := &history{acks: map[string][]ack{}}

	t.Run("migration", func(t *testing.T) {
		// b and c reserve their existing keys at start; m-shared is a conflict.
		c.waitMetric(t, []*dc{b, cc}, `berth_key_reservations_migrated_total{outcome="reserved"}`, 11)
		c.waitMetric(t, []*dc{b, cc}, `berth_key_reservations_migrated_total{outcome="conflict"}`, 1)
		for _, from := range []*dc{a, b, cc} {
			for _, owner := range []*dc{b, cc} {
				key := "m-" + owner.name + "-003"
				if got := c.putActor(from, key); got.status != http.StatusOK || got.created || got.actor.Datacenter != owner.name {
					t.Errorf("existing key %s from %s: %d %s", key, from.name, got.status, got.body)
				}
			}
			got := c.putActor(from, "m-shared")
			if got.status != http.StatusOK || got.created || from != a && got.actor.Datacenter != from.name {
				t.Errorf("conflicting key from %s: %d %s", from.name, got.status, got.body)
			}
		}
		if status, body := c.do(a, http.MethodPost, "/actors?namespace=default", createBody("m-shared")); status != http.StatusConflict {
			t.Errorf("create of the conflicting key: %d %s", status, body)
		}
		if all := c.actorsByKey(a, "m-shared", true); len(all) != 2 {
			t.Errorf("conflicting key: %d actors, want the 2 kept", len(all))
		}
		c.checkDoctor(t, a, "m-shared", b, cc)
	})
	t.Run("concurrent", func(t *testing.T) {
		c.getOrCreateAll(t, h, keyRange("p1", 200), nil)
	})
	t.Run("non-leader stopped", func(t *testing.T) {
		c.getOrCreateAll(t, h, keyRange("p2", 200), func() {
			c.hang(cc)
			time.Sleep(1500 * time.Millisecond)
			c.resume(cc)
		})
	})
	t.Run("non-leader killed", func(t *testing.T) {
		c.getOrCreateAll(t, h, keyRange("p3", 200), func() {
			cc.kill()
			time.Sleep(500 * time.Millisecond)
			c.startDC(cc)
			if err := c.waitHealthy(cc); err != nil {
				t.Error(err)
			}
		})
	})
	t.Run("destroy frees the key", func(t *testing.T) {
		for i, from := range []*dc{a, b, cc} {
			key := fmt.Sprintf("d-%d", i)
			first := c.putActor(from, key)
			if first.status != http.StatusOK || !first.created {
				t.Fatalf("create %s on %s: %+v", key, from.name, first)
			}
			if status, body := c.do(from, http.MethodDelete, "/actors/"+first.actor.ActorID.String()+"?namespace=default", nil); status != http.StatusOK {
				t.Fatalf("destroy: %d %s", status, body)
			}
			next := c.dcs[(i+1)%3]
			second := c.putActor(next, key)
			if second.status != http.StatusOK || !second.created || second.actor.ActorID == first.actor.ActorID ||
				second.actor.Datacenter != next.name {
				t.Fatalf("get-or-create %s on %s after the destroy: %+v", key, next.name, second)
			}
			if all := c.actorsByKey(a, key, true); len(all) != 2 {
				t.Errorf("%s: %d actors ever, want 2", key, len(all))
			}
		}
	})
	t.Run("placement", func(t *testing.T) {
		// A runner of pool "placed" in b only: b's pool has a free host, and a and c have no
		// runner config for it. Creates that name no datacenter go to b from anywhere.
		c.startRunner(t, b, "placed")
		for _, from := range []*dc{a, b, cc} {
			body := map[string]any{"name": "room", "key": "placed-" + from.name, "runner_name_selector": "placed", "crash_policy": "sleep"}
			for _, method := range []string{http.MethodPut, http.MethodPost} {
				if method == http.MethodPost {
					delete(body, "key")
				}
				status, resp := c.do(from, method, "/actors?namespace=default", mustJSON(body))
				var out struct{ Actor actor.Actor }
				_ = json.Unmarshal(resp, &out)
				if status != http.StatusOK || out.Actor.Datacenter != "b" || out.Actor.ActorID.Label() != 2 {
					t.Errorf("%s from %s of a pool with a free host in b only: %d %s", method, from.name, status, resp)
				}
			}
		}
		// Named, a datacenter without the pool is its own error, not a move.
		body := mustJSON(map[string]any{"datacenter": "a", "name": "room", "runner_name_selector": "placed", "crash_policy": "sleep"})
		status, got := c.do(cc, http.MethodPost, "/actors?namespace=default", body)
		if e, err := rerr.Parse(status, got); err != nil || e.Key() != "actor.no_runner_config_configured" {
			t.Errorf("create in a named datacenter without the pool: %d %s", status, got)
		}
		// "pool" has a config everywhere and no runner: the receiving datacenter keeps it.
		for _, from := range []*dc{b, cc} {
			if got := c.putActor(from, "kept-"+from.name); got.status != http.StatusOK || got.actor.Datacenter != from.name {
				t.Errorf("a pool without free hosts, from %s: %d %s", from.name, got.status, got.body)
			}
		}
	})
	t.Run("leader stopped", func(t *testing.T) {
		// Keys whose actor lives in b or c, which b and c have both answered since they last
		// started: each answers them again, from its index or its cache.
		var existing []string
		for key, acks := range h.acks {
			if acks[0].dc != "a" && len(existing) < 60 {
				existing = append(existing, key)
			}
		}
		ask := func(what string) {
			for _, key := range existing {
				for _, from := range []*dc{b, cc} {
					got, want := c.putActor(from, key), h.acks[key][0].actorID
					if got.status != http.StatusOK || got.created || got.actor.ActorID != want {
						t.Errorf("existing key %s on %s %s: %d %s, want actor %v", key, from.name, what, got.status, got.body, want)
					}
				}
			}
		}
		ask("with the leader up")
		c.hang(a)
		defer c.resume(a)
		ask("with the leader stopped")
		for _, from := range []*dc{b, cc} {
			for _, method := range []string{http.MethodPut, http.MethodPost} {
				start := time.Now()
				status, body := c.do(from, method, "/actors?namespace=default", createBody("new-"+from.name+method))
				e, err := rerr.Parse(status, body)
				if err != nil || status != http.StatusServiceUnavailable || e.Key() != "actor.key_reservation_unavailable" || e.Metadata["datacenter"] != "a" {
					t.Errorf("%s of a new key on %s with the leader stopped: %d %s", method, from.name, status, body)
				}
				if took := time.Since(start); took > 5*time.Second {
					t.Errorf("%s of a new key on %s answered after %s", method, from.name, took)
				}
			}
			var body map[string]any
			_ = json.Unmarshal(createBody(""), &body)
			delete(body, "key")
			if status, b := c.do(from, http.MethodPost, "/actors?namespace=default", mustJSON(body)); status != http.StatusOK {
				t.Errorf("unkeyed create on %s with the leader stopped: %d %s", from.name, status, b)
			}
		}
	})
	h.check(t, c)
}

// waitMetric polls the metrics of dcs until the sum of the sample named series is want.
func (c *cluster) waitMetric(t *testing.T, dcs []*dc, series string, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		sum := 0
		for _, d := range dcs {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", d.metricsPort))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for line := range strings.SplitSeq(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, series+" "); ok {
					n, _ := strconv.Atoi(v)
					sum += n
				}
			}
		}
		if sum == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, want %d", series, sum, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// seedPools creates the default namespace in the leader's store and a runner config for
// pool "pool" in every datacenter's, so that actors can be created (with crash policy sleep
// and no runner, an actor sleeps at once), and keyed actors in b and c as an engine that
// did not reserve keys left them.
func seedPools(t *testing.T, c *cluster) {
	t.Helper()
	var ns id.ID
	for _, d := range c.dcs {
		db := d.openStore(t)
		if d.leader {
			ns = transact(t, db, func(tx udb.Transaction) (id.ID, error) {
				out, err := namespace.EnsureDefault(bg, tx, namespace.EnsureDefaultInput{NamespaceID: id.New(d.label), NowMs: time.Now().UnixMilli()})
				return out.Namespace.NamespaceID, err
			})
		}
		transact(t, db, func(tx udb.Transaction) (keys.RunnerConfig, error) {
			return runnerconfig.Ensure(bg, tx, runnerconfig.EnsureInput{Namespace: ns, Name: "pool"})
		})
		if !d.leader {
			// Actors from before keys were reserved: five keys of this datacenter's own, and
			// one that the other non-leader datacenter has too.
			for _, key := range append(keyRange("m-"+d.name, 5), "m-shared") {
				transact(t, db, func(tx udb.Transaction) (actor.CreateOutput, error) {
					return actor.Create(bg, tx, actor.CreateInput{Namespace: ns, NamespaceName: "default", ActorID: id.New(d.label),
						Name: "room", Key: &key, Selector: "pool", CrashPolicy: "sleep", NowMs: time.Now().UnixMilli(),
						Datacenter: d.name, Config: actor.DefaultConfig()})
				})
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func keyRange(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

func createBody(key string) []byte {
	return mustJSON(map[string]any{"name": "room", "key": key, "runner_name_selector": "pool", "crash_policy": "sleep"})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// do sends method path with body (JSON, nil for none) to d's public API; a transport error
// is status 0 with the error as the body.
func (c *cluster) do(d *dc, method, path string, body []byte) (int, []byte) {
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(bg, method, d.publicURL()+path, rd)
	if err != nil {
		panic(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, []byte(err.Error())
	}
	return resp.StatusCode, b
}

// answer is a get-or-create's outcome.
type answer struct {
	status  int
	actor   actor.Actor
	created bool
	body    string
}

// putActor sends PUT /actors for key to d.
func (c *cluster) putActor(d *dc, key string) answer {
	status, b := c.do(d, http.MethodPut, "/actors?namespace=default", createBody(key))
	ans := answer{status: status, body: string(b)}
	if status == http.StatusOK {
		var out struct {
			Actor   actor.Actor `json:"actor"`
			Created bool        `json:"created"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			ans.status = 0
			return ans
		}
		ans.actor, ans.created = out.Actor, out.Created
	}
	return ans
}

// actorsByKey lists the actors of key through d's public API (every datacenter): the live
// one, or with all every actor ever created with it.
func (c *cluster) actorsByKey(d *dc, key string, all bool) []actor.Actor {
	q := url.Values{"namespace": {"default"}, "name": {"room"}, "key": {key}}
	if all {
		q.Set("include_destroyed", "true")
	}
	var out struct {
		Actors []actor.Actor `json:"actors"`
	}
	c.getJSON(d, "/actors?"+q.Encode(), &out)
	return out.Actors
}

// getOrCreateAll sends get-or-create for every key from every datacenter at once, 16 at a
// time per datacenter, each datacenter in its own random order, retrying what fails until
// it is answered (at most a minute); disturb, if not nil, runs meanwhile, once a tenth of
// the answers are in. Every answer is recorded in h.
func (c *cluster) getOrCreateAll(t *testing.T, h *history, ks []string, disturb func()) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done, failures := 0, 0
	started := make(chan struct{})
	var once sync.Once
	for _, d := range c.dcs {
		order := rand.Perm(len(ks))
		next := make(chan string, len(ks))
		for _, i := range order {
			next <- ks[i]
		}
		close(next)
		for range 16 {
			wg.Go(func() {
				for key := range next {
					for {
						ans := c.putActor(d, key)
						if ans.status == http.StatusOK {
							h.record(key, d.name, ans)
							break
						}
						mu.Lock()
						failures++
						mu.Unlock()
						if ans.status == http.StatusConflict || time.Now().After(deadline) {
							t.Errorf("get-or-create %s on %s: %d %s", key, d.name, ans.status, ans.body)
							break
						}
						time.Sleep(50 * time.Millisecond)
					}
					mu.Lock()
					if done++; done >= len(ks)*len(c.dcs)/10 {
						once.Do(func() { close(started) })
					}
					mu.Unlock()
				}
			})
		}
	}
	if disturb != nil {
		select {
		case <-started:
		case <-time.After(30 * time.Second):
		}
		disturb()
	}
	wg.Wait()
	t.Logf("%d keys from %d datacenters: %d failed attempts retried", len(ks), len(c.dcs), failures)
}

// history is every acknowledged get-or-create answer, by key.
type history struct {
	mu   sync.Mutex
	acks map[string][]ack
}

type ack struct {
	dc      string // where the actor lives
	from    string // the datacenter asked
	actorID id.ID
	created bool
}

func (h *history) record(key, from string, ans answer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.acks[key] = append(h.acks[key], ack{dc: ans.actor.Datacenter, from: from, actorID: ans.actor.ActorID, created: ans.created})
}

// check asserts that every key's acknowledged answers name one actor, created by at most one
// of them, and that listing the key across datacenters finds that actor alone, live, and no
// other actor ever created with it.
func (h *history) check(t *testing.T, c *cluster) {
	t.Helper()
	lookups := 0
	for key, acks := range h.acks {
		ids := map[id.ID]bool{}
		created := 0
		for _, a := range acks {
			ids[a.actorID] = true
			if a.created {
				created++
			}
		}
		if len(ids) != 1 || created > 1 {
			t.Errorf("key %s: %d actors acknowledged, %d answers said created: %+v", key, len(ids), created, acks)
			continue
		}
		live, all := c.actorsByKey(c.dcs[lookups%3], key, false), c.actorsByKey(c.dcs[(lookups+1)%3], key, true)
		lookups++
		if len(live) != 1 || live[0].ActorID != acks[0].actorID || len(all) != 1 {
			t.Errorf("key %s: acknowledged %v; lookups found live %+v, ever %+v", key, acks[0].actorID, live, all)
		}
	}
	if lookups == 0 {
		t.Error("no answer recorded")
	}
	t.Logf("history: %d keys checked", lookups)
}

// checkDoctor runs `berth doctor` against d and checks that it reports key as the one key
// held twice, by an actor of each of holders, with exit status 1.
func (c *cluster) checkDoctor(t *testing.T, d *dc, key string, holders ...*dc) {
	t.Helper()
	cmd := exec.Command(c.bin, "doctor", "--json", "--endpoint", d.publicURL(), "--namespace", "default")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("berth doctor: %v, want exit status 1\n%s", err, stderr.Bytes())
	}
	if !strings.Contains(stderr.String(), "1 key is held by more than one live actor") {
		t.Errorf("berth doctor's stderr: %s", stderr.Bytes())
	}
	var rep struct {
		KeyedActors  int `json:"keyed_actors"`
		KeyConflicts []struct {
			Name, Key string
			Actors    []actor.Actor
		} `json:"key_conflicts"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("berth doctor --json: %v\n%s", err, out)
	}
	if len(rep.KeyConflicts) != 1 || rep.KeyConflicts[0].Key != key || len(rep.KeyConflicts[0].Actors) != len(holders) {
		t.Fatalf("berth doctor: %s, want key %s held by %d actors", out, key, len(holders))
	}
	var got, want []string
	for i, h := range holders {
		got, want = append(got, rep.KeyConflicts[0].Actors[i].Datacenter), append(want, h.name)
	}
	if slices.Sort(got); !slices.Equal(got, want) {
		t.Errorf("berth doctor: the actors holding %s are in datacenters %v, want %v", key, got, want)
	}
	if rep.KeyedActors != 12 {
		t.Errorf("berth doctor read %d keyed actors, want the 12 seeded", rep.KeyedActors)
	}
}

// startRunner connects a runner of pool to d (the Go runner SDK; it hosts no actor) and
// waits until d lists it.
func (c *cluster) startRunner(t *testing.T, d *dc, pool string) {
	t.Helper()
	r, err := runner.New(runner.Config{Endpoint: d.publicURL(), Namespace: "default", Name: pool, Key: pool + "-1",
		Version: 1, TotalSlots: 100, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, 15*time.Second)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(bg, 5*time.Second)
		defer cancel()
		_ = r.Shutdown(ctx, true)
	})
	for {
		var out struct {
			Runners []json.RawMessage `json:"runners"`
		}
		c.getJSON(d, "/runners?namespace=default&name="+pool, &out)
		if len(out.Runners) > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("runner of %s not listed by %s", pool, d.name)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
