package multinode

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/sdk/runner"
	"github.com/berthhq/berth/tests/internal/harness"
)

// BenchmarkDrain measures the time from SIGTERM to exit of a node holding 10,000 ownership
// records: 1,000 live runner sockets and 9,000 records kept from before (a restart after a
// preserve shutdown). Over PostgreSQL its runners reconnect to a second node while it
// drains; on the embedded store it is alone. Reported: ms from SIGTERM to exit, and the
// drain's own ms from its log (ns/op is the time from SIGTERM to exit too). The timer runs
// through the setup (thousands of connections), so one run is usually past -benchtime; each
// run shuts its runners down before the next.
func BenchmarkDrain(b *testing.B) {
	b.Run("postgres", func(b *testing.B) { benchDrain(b, true) })
	b.Run("embedded", func(b *testing.B) { benchDrain(b, false) })
}

var drainedElapsed = regexp.MustCompile(`msg="berth drained" mode=handoff elapsed_ms=(\d+) grace_ms=(\d+) .*timed_out=(\w+)`)

func benchDrain(b *testing.B, postgres bool) {
	const sockets, records = 1000, 10000
	for range b.N {
		var nc nodeConfig
		if postgres {
			nc = nodeConfig{db: postgresStore(b), pubsub: harness.StartNATS(b)}
		} else {
			nc = nodeConfig{db: "file://" + b.TempDir() + "/store"}
		}
		// The runners all connect from 127.0.0.1: past the per-address caps.
		nc.env = []string{"BERTH__guard__max_connections_per_client=0", "BERTH__guard__max_websockets_per_client=0"}
		seedHeld(b, nc.db, "n1", records-sockets)
		n1 := newNode(b, "n1", nc)
		n1.start()
		nodes := []*node{n1}
		lb := startBalancer(b, nodes)
		var wg sync.WaitGroup
		sem := make(chan struct{}, 32)
		rs := make([]*runner.Runner, sockets)
		for i := range sockets {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				rs[i] = startRunner(b, lb.URL(), fmt.Sprintf("runner-%d", i), 1)
			})
		}
		wg.Wait()
		if postgres {
			n2 := newNode(b, "n2", nc)
			n2.start()
			lb.nodes = append(lb.nodes, n2) // runners reconnect to n2 while n1 drains
		}
		took := n1.term(120 * time.Second)
		b.ReportMetric(float64(took.Nanoseconds()), "ns/op")
		b.ReportMetric(float64(took.Milliseconds()), "ms-sigterm-to-exit")
		m := drainedElapsed.FindStringSubmatch(string(n1.log()))
		if m == nil {
			b.Fatalf("no drain line in the log:\n%s", n1.log())
		}
		ms, _ := strconv.Atoi(m[1])
		b.ReportMetric(float64(ms), "ms-drain")
		grace, _ := strconv.Atoi(m[2])
		b.ReportMetric(float64(grace), "ms-grace")
		if m[3] != "false" {
			b.Errorf("the drain hit its deadline")
		}
		if h := held(b, nc.db, "n1"); len(h) != 0 {
			b.Errorf("%d ownership records left", len(h))
		}
		// The next run must not meet these runners (its nodes may get this run's ports).
		for _, r := range rs {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_ = r.Shutdown(ctx, true)
			})
		}
		wg.Wait()
	}
}

// BenchmarkRollingRestart restarts three nodes one after the other under continuous gateway
// traffic (4 clients, POSTs to 12 counters through every node; 300 acknowledged before each
// restart) and reports the requests acknowledged, the attempts that met a draining or missing node (retried by the client),
// and the requests that failed even after retries. The timer runs through the setup, so that
// one run is past -benchtime (see BenchmarkDrain); requests/s is over the restarts only.
func BenchmarkRollingRestart(b *testing.B) {
	for range b.N {
		c := startCluster(b, 3, 6, 12)
		tr := startTraffic(c, 4)
		retriedBefore := c.client.retried.Load()
		start, okStart := time.Now(), tr.ok.Load()
		for _, n := range c.nodes {
			before := tr.ok.Load()
			awaitCond(b, "traffic flowing", 120*time.Second, func() bool { return tr.ok.Load() > before+300 })
			n.term(60 * time.Second)
			n.start()
		}
		elapsed := time.Since(start)
		tr.finish()
		tr.checkState(b, c)
		b.ReportMetric(float64(tr.ok.Load()-okStart)/elapsed.Seconds(), "requests/s")
		b.ReportMetric(float64(tr.ok.Load()), "requests")
		b.ReportMetric(float64(c.client.retried.Load()-retriedBefore), "retried-attempts")
		b.ReportMetric(float64(tr.failed.Load()), "failed-after-retry")
	}
}
