package multidc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/berthhq/berth/engine"
	"github.com/berthhq/berth/engine/config"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/tests/internal/harness"
)

// BenchmarkRunnersList is GET /runners?limit=100 on the public API, one request at a time
// over a kept-alive connection, with 10,000 runners in each datacenter: in one datacenter,
// and fanned out over three (each with its own engine and file store, in this process,
// talking over loopback). It reports the median and 99th percentile latency.
func BenchmarkRunnersList(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("datacenters=%d", n), func(b *testing.B) {
			engines := startEngines(b, n)
			ns := defaultNamespace(b, engines[0])
			for i, e := range engines {
				seedBench(b, e, uint16(i+1), ns, 10_000)
			}
			benchGet(b, "http://"+engines[0].PublicAddr().String()+"/runners?namespace=default&limit=100", 100)
		})
	}
}

// startEngines starts n engines in this process, datacenters dc1..dcN (labels 1..n, dc1 the
// leader), on free loopback ports, each with a file store in a temporary directory.
func startEngines(b *testing.B, n int) []*engine.Engine {
	b.Helper()
	ports := harness.FreePorts(b, 2*n)
	dcs := map[string]config.Datacenter{}
	for i := range n {
		dcs[fmt.Sprintf("dc%d", i+1)] = config.Datacenter{
			DatacenterLabel: uint16(i + 1), IsLeader: i == 0,
			PublicURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]), PeerURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var out []*engine.Engine
	for i := range n {
		cfg := config.Default()
		cfg.Topology = config.Topology{DatacenterLabel: uint16(i + 1), Datacenters: dcs}
		cfg.Guard.Host, cfg.Guard.Port = "127.0.0.1", uint16(ports[2*i])
		cfg.APIPeer.Host, cfg.APIPeer.Port = "127.0.0.1", uint16(ports[2*i+1])
		cfg.Metrics.Host, cfg.Metrics.Port = "127.0.0.1", 0
		// The seeded runners never ping: without this the engine's runner loop would expire
		// them during the benchmark, and measure itself too.
		cfg.Pegboard.RunnerLostThreshold = benchLostThreshold
		cfg.Pegboard.RunnerEligibleThreshold = benchLostThreshold // and they take actors
		cfg.Database.URL = "file://" + filepath.Join(b.TempDir(), "db")
		e, err := engine.Start(context.Background(), engine.Options{Config: cfg, Log: log})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = e.Shutdown(ctx)
		})
		out = append(out, e)
	}
	return out
}

// benchLostThreshold is the engines' runner_lost_threshold in the benchmark, in ms: 30 days,
// so that the seeded runners, which never ping, stay live throughout.
const benchLostThreshold = 30 * 24 * 3600 * 1000

// seedBench registers n runners of namespace ns in e's store, 100 per millisecond from now,
// in five names, with ids of datacenter label.
func seedBench(b *testing.B, e *engine.Engine, label uint16, ns id.ID, n int) {
	b.Helper()
	ctx := context.Background()
	now := time.Now().UnixMilli()
	const batch = 500
	for start := 0; start < n; start += batch {
		if err := udb.Update(ctx, e.DB(), func(tx udb.Transaction) error {
			for i := start; i < start+batch; i++ {
				if _, err := runner.Register(ctx, tx, runner.RegisterInput{
					Namespace: ns, Name: fmt.Sprintf("pool-%d", i%5), Key: fmt.Sprintf("k%d", i), Version: 1, TotalSlots: 8,
					ProtocolVersion: 7, ConnID: id.New(label), NewRunnerID: id.New(label), NowMs: now + int64(i/100),
				}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// defaultNamespace returns the id of the default namespace in the leader's store.
func defaultNamespace(b *testing.B, leader *engine.Engine) id.ID {
	b.Helper()
	ctx := context.Background()
	v, err := udb.ReadTransact(ctx, leader.DB(), func(r udb.ReadTransaction) (namespace.Namespace, error) {
		return namespace.ResolveByName(ctx, r, namespace.ResolveByNameInput{Name: namespace.DefaultName})
	})
	if err != nil {
		b.Fatal(err)
	}
	return v.NamespaceID
}

// benchGet sends GET url one request at a time, checks each answer lists want runners, and
// reports p50-ms and p99-ms of the request latencies.
func benchGet(b *testing.B, url string, want int) {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	// get sends one request and returns how long it took to get the whole answer.
	get := func() time.Duration {
		start := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d %v %.300s", url, resp.StatusCode, err, body)
		}
		// A light check, so that the client's own work stays small beside the server's.
		if n := bytes.Count(body, []byte(`"runner_id"`)); n != want {
			b.Fatalf("GET %s: %d runners: %.300s", url, n, body)
		}
		return took
	}
	for range 20 { // connections, caches
		get()
	}
	durations := make([]time.Duration, 0, 4096)
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		durations = append(durations, get())
	}
	b.StopTimer()
	// CPU time of the whole process (every datacenter's servers and the client) per request:
	// unlike the latencies, it hardly depends on what else the machine runs.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(len(durations)), "cpu-ms/op")
	slices.Sort(durations)
	pct := func(p float64) float64 {
		return float64(durations[int(p*float64(len(durations)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
