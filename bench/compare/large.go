package main

import (
	"context"
	"fmt"
	"time"

	"github.com/berthhq/berth/bench/sidebyside"
)

// Step 9's sizes besides its actors (-large) and its creates' budget (-large-within).
const (
	largeRunners = 100              // runners of pool "large", enough slots for every actor
	restFor      = 10 * time.Second // the window at rest, after statsSettle
	spreadWakes  = 20               // actors put to sleep and woken, spread over the created
	spreadConns  = 16               // connections of the spread gateway loop
	spreadFor    = 10 * time.Second // how long it runs
)

// largeStep is step 9: w.large more actors on largeRunners runners of their own, created by
// w.creators clients within w.largeFor, then lists, wakes and gateway traffic spread over
// them. Besides the latencies it records the engine's CPU per operation, every node's and all
// together, and, on PostgreSQL, the store's commits (pg_stat_database) at rest and per
// operation beyond those at rest.
func (w *workload) largeStep(ctx context.Context, s *session) error {
	e, f := s.e, s.f
	m := &meter{s: s, pg: w.pg}
	slots := (w.large + largeRunners - 1) / largeRunners
	logf("  %s: %d runners of %d slots for %d actors", e.name, largeRunners, slots, w.large)
	start := time.Now()
	if err := s.connect("large", largeRunners, slots); err != nil {
		return err
	}
	f["large_connect_s"] = time.Since(start).Seconds()

	// At rest, every runner connected: what pings and the engine's own work cost.
	if err := sleep(ctx, statsSettle); err != nil {
		return err
	}
	rest, err := m.begin(ctx)
	if err != nil {
		return err
	}
	if err := sleep(ctx, restFor); err != nil {
		return err
	}
	if err := m.end(ctx, rest, "large_rest", 0); err != nil {
		return err
	}

	logf("  %s: creating %d actors (%v at most)", e.name, w.large, w.largeFor)
	phase, err := m.begin(ctx)
	if err != nil {
		return err
	}
	ids, err := w.createAndStart(ctx, s, "large", w.large, w.largeFor)
	if err != nil {
		return err
	}
	if err := m.end(ctx, phase, "large_create", len(ids)); err != nil {
		return err
	}

	logf("  %s: lists, wakes and gateway traffic over %d actors", e.name, len(ids))
	if err := s.a.listTimes(ctx, f, "list_large", "/actors?namespace=default&name=listed-large&limit=100", "actors", min(100, len(ids))); err != nil {
		return err
	}
	var sleepers []string
	for i := range min(spreadWakes, len(ids)) {
		sleepers = append(sleepers, ids[i*len(ids)/min(spreadWakes, len(ids))])
	}
	wake, err := s.wake(ctx, sleepers)
	if err != nil {
		return err
	}
	f["large_wake_p50_ms"], f["large_wake_max_ms"] = ms(sidebyside.Percentile(wake, 50)), ms(sidebyside.Percentile(wake, 100))

	var targets []*sidebyside.Target
	for _, u := range s.eng.urls {
		targets = append(targets, sidebyside.NewTarget(e.name, u, 0, 0, 40+s.rep))
	}
	phase, err = m.begin(ctx)
	if err != nil {
		return err
	}
	l := sidebyside.HTTPLoadSpread(ctx, targets, sidebyside.RawClient, spreadConns, spreadFor, func(c, n int) string {
		return "/gateway/" + ids[(c+n*spreadConns)%len(ids)] + "/bench"
	})
	if l.Failed > 0 {
		return fmt.Errorf("%d requests of the spread gateway loop failed, the first: %v", l.Failed, l.FirstErr)
	}
	f["large_http_rps"] = l.RPS
	f["large_http_p50_ms"], f["large_http_p99_ms"] = ms(sidebyside.Percentile(l.Latency, 50)), ms(sidebyside.Percentile(l.Latency, 99))
	if err := m.end(ctx, phase, "large_http", int(l.Answered)); err != nil {
		return err
	}
	s.resident("rss_large")
	return ctx.Err()
}

// meter measures a phase: each node's CPU and the store's commits.
type meter struct {
	s         *session
	pg        *pgServer
	restRate  float64 // store commits per second at rest, once measured
	restKnown bool
	restCPU   []float64 // each node's CPU ms per second at rest, once measured
}

// mark is the state at a phase's start.
type mark struct {
	at      time.Time
	cpu     []time.Duration
	commits int64
}

func (m *meter) begin(ctx context.Context) (mark, error) {
	k := mark{at: time.Now(), cpu: m.s.cpu()}
	if m.pg != nil {
		var err error
		if k.commits, err = m.pg.commits(ctx, m.s.db); err != nil {
			return k, err
		}
	}
	return k, nil
}

// end records the phase begun at k as key's figures, for ops operations (0 for the window at
// rest): engine CPU per operation (per second at rest), all nodes and each node's when there
// are several, and on PostgreSQL the store's commits. Per operation, both are what the
// operations cost beyond the engine's background work: less the rate at rest over the phase.
// The commits are read after statsSettle, whose commits at rest are left out too.
func (m *meter) end(ctx context.Context, k mark, key string, ops int) error {
	took := time.Since(k.at)
	cpu := m.s.cpu()
	per := float64(ops)
	unit := "_cpu_ms"
	if ops == 0 {
		per, unit = took.Seconds(), "_cpu_ms_per_s"
	}
	if per > 0 {
		var all float64
		for i := range cpu {
			d := ms(cpu[i] - k.cpu[i])
			if ops == 0 {
				m.restCPU = append(m.restCPU, d/per)
			} else if i < len(m.restCPU) {
				d -= m.restCPU[i] * took.Seconds()
			}
			all += d
			if len(cpu) > 1 {
				m.s.f[fmt.Sprintf("%s%s_node%d", key, unit, i+1)] = d / per
			}
		}
		m.s.f[key+unit] = all / per
	}
	if m.pg == nil {
		return nil
	}
	if ops > 0 {
		if err := sleep(ctx, statsSettle); err != nil {
			return err
		}
	}
	n, err := m.pg.commits(ctx, m.s.db)
	if err != nil {
		return err
	}
	commits := float64(n - k.commits)
	if ops == 0 {
		m.restRate, m.restKnown = commits/took.Seconds(), true
		m.s.f[key+"_commits_per_s"] = m.restRate
		return nil
	}
	settled := time.Since(k.at) - took
	m.s.f[key+"_commits_per_s"] = (commits - m.restRate*settled.Seconds()) / took.Seconds()
	if m.restKnown {
		m.s.f[key+"_commits"] = (commits - m.restRate*time.Since(k.at).Seconds()) / float64(ops)
	}
	return nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
