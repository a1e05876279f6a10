package multidc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/berthhq/berth/engine"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// BenchmarkKeyedCreate is the latency of actor creates through one datacenter's public API,
// one request at a time, with one datacenter and with three (in this process, over
// loopback; dc1 is the leader): an unkeyed create, a create and a get-or-create of a new key,
// and a get-or-create of an existing key whose actor lives in the datacenter asked (local) or
// in another one (remote, its holder cached after a first call). In pool "pool" the actors
// sleep at once (crash policy sleep, no runner), so the figures are the API's and the
// store's; with several datacenters a create there also asks the others whether their pool
// has a free host (engine/pegboard, placement.go). Pool "hosted" has a free runner in every
// datacenter (a seeded record that never pings, eligible for the whole run), so its creates
// stay where they are asked without asking. It reports the median and 99th percentile
// latency.
func BenchmarkKeyedCreate(b *testing.B) {
	for _, n := range []int{1, 3} {
		engines := startEngines(b, n)
		ns := defaultNamespace(b, engines[0])
		for i, e := range engines {
			if _, err := udb.Transact(context.Background(), e.DB(), func(tx udb.Transaction) (keys.RunnerConfig, error) {
				return runnerconfig.Ensure(context.Background(), tx, runnerconfig.EnsureInput{Namespace: ns, Name: "pool"})
			}); err != nil {
				b.Fatal(err)
			}
			seedHost(b, e, uint16(i+1), ns, "hosted")
		}
		for i, e := range engines {
			if n == 3 && i == 2 {
				break // dc3 is dc2's like
			}
			role := "leader"
			if i > 0 {
				role = "non-leader"
			}
			dc := fmt.Sprintf("datacenters=%d/dc=%s", n, role)
			// Keys held elsewhere: by the next datacenter, so never the one asked.
			other := engines[(i+1)%n]
			b.Run(dc+"/create-unkeyed", func(b *testing.B) { benchCreate(b, e, http.MethodPost, nil) })
			b.Run(dc+"/create-new-key", func(b *testing.B) { benchCreate(b, e, http.MethodPost, newKeys(dc+"/c")) })
			b.Run(dc+"/free-host/create-unkeyed", func(b *testing.B) { benchCreateIn(b, e, "hosted", http.MethodPost, nil) })
			b.Run(dc+"/free-host/create-new-key", func(b *testing.B) {
				benchCreateIn(b, e, "hosted", http.MethodPost, newKeys(dc+"/h"))
			})
			b.Run(dc+"/get-or-create-new-key", func(b *testing.B) { benchCreate(b, e, http.MethodPut, newKeys(dc+"/g")) })
			b.Run(dc+"/get-or-create-existing-local", func(b *testing.B) {
				benchCreate(b, e, http.MethodPut, existingKeys(b, e, dc+"/l"))
			})
			if n > 1 {
				b.Run(dc+"/get-or-create-existing-remote", func(b *testing.B) {
					benchCreate(b, e, http.MethodPut, existingKeys(b, other, dc+"/r"))
				})
			}
		}
	}
}

// newKeys returns a function giving a fresh key at each call.
func newKeys(prefix string) func(int) string {
	return func(i int) string { return fmt.Sprintf("%s-%d", prefix, i) }
}

// existingKeys creates 64 keyed actors through e and returns a function cycling over them.
func existingKeys(b *testing.B, e *engine.Engine, prefix string) func(int) string {
	b.Helper()
	client := &http.Client{}
	defer client.CloseIdleConnections()
	ks := make([]string, 64)
	for i := range ks {
		ks[i] = fmt.Sprintf("%s-%d", prefix, i)
		if status, body := send(client, e, http.MethodPut, ks[i]); status != http.StatusOK {
			b.Fatalf("seeding %s: %d %s", ks[i], status, body)
		}
	}
	return func(i int) string { return ks[i%len(ks)] }
}

// send calls method /actors on e's public API for key ("" for no key) in pool "pool".
func send(client *http.Client, e *engine.Engine, method, key string) (int, []byte) {
	return sendIn(client, e, "pool", method, key)
}

// sendIn calls method /actors on e's public API for key ("" for no key) in pool.
func sendIn(client *http.Client, e *engine.Engine, pool, method, key string) (int, []byte) {
	body := map[string]any{"name": "room", "runner_name_selector": pool, "crash_policy": "sleep"}
	if key != "" {
		body["key"] = key
	}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, "http://"+e.PublicAddr().String()+"/actors?namespace=default", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// benchCreate is benchCreateIn for pool "pool".
func benchCreate(b *testing.B, e *engine.Engine, method string, key func(int) string) {
	benchCreateIn(b, e, "pool", method, key)
}

// benchCreateIn sends method /actors in pool to e one request at a time, with key(i) as the
// i-th key (nil: no key), and reports p50-ms and p99-ms.
func benchCreateIn(b *testing.B, e *engine.Engine, pool, method string, key func(int) string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	i := 0
	one := func() time.Duration {
		k := ""
		if key != nil {
			k = key(i)
		}
		i++
		start := time.Now()
		status, body := sendIn(client, e, pool, method, k)
		took := time.Since(start)
		if status != http.StatusOK {
			b.Fatalf("%s /actors key %q: %d %s", method, k, status, body)
		}
		return took
	}
	for range 70 { // connections, and the cache of every existing key
		one()
	}
	durations := make([]time.Duration, 0, 4096)
	b.ResetTimer()
	for b.Loop() {
		durations = append(durations, one())
	}
	b.StopTimer()
	slices.Sort(durations)
	pct := func(p float64) float64 {
		return float64(durations[int(p*float64(len(durations)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// seedHost registers a runner of pool in e's store with more slots than a run fills, pinged
// now (startEngines keeps it eligible and live for the whole run), and the pool's config.
func seedHost(b *testing.B, e *engine.Engine, label uint16, ns id.ID, pool string) {
	b.Helper()
	ctx := context.Background()
	if err := udb.Update(ctx, e.DB(), func(tx udb.Transaction) error {
		if _, err := runnerconfig.Ensure(ctx, tx, runnerconfig.EnsureInput{Namespace: ns, Name: pool}); err != nil {
			return err
		}
		conn := id.New(label)
		out, err := runner.Register(ctx, tx, runner.RegisterInput{Namespace: ns, Name: pool, Key: pool, Version: 1,
			TotalSlots: 1 << 24, ProtocolVersion: 7, ConnID: conn, NewRunnerID: id.New(label), NowMs: time.Now().UnixMilli()})
		if err != nil {
			return err
		}
		_, err = runner.UpdatePing(ctx, tx, runner.UpdatePingInput{RunnerID: out.RunnerID, ConnID: conn, NowMs: time.Now().UnixMilli()})
		return err
	}); err != nil {
		b.Fatal(err)
	}
}
