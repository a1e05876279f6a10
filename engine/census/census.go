package census

import (
	"context"
	"log/slog"
	"time"

	"github.com/berthhq/berth/engine/metrics"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/udb"
)

// Defaults of Options.
const (
	DefaultInterval = 15 * time.Second
	DefaultMaxRows  = 100_000
	pageRows        = 500 // rows per transaction: each stays far below udb's 5 s limit
)

// Options configures a Census.
type Options struct {
	DB      udb.Database
	Metrics *metrics.Metrics
	Log     *slog.Logger
	// Interval between passes; DefaultInterval when zero.
	Interval time.Duration
	// MaxRows bounds the index rows one pass reads (namespaces, runners, envoys, actors
	// and pending entries together); DefaultMaxRows when zero. A pass that reaches it
	// stops, publishes what it counted and sets berth_census_truncated to 1.
	MaxRows int
}

// Census keeps the store gauges (berth_actors{state}, berth_runners{state},
// berth_envoys{state}, berth_pending_allocations) current.
//
// Why a periodic bounded scan: a scrape then costs nothing (it reads gauges), the store's
// hot transactions (creates, lifecycle transitions, pings) carry no extra counter writes
// and no new conflicts, and a pass's cost is capped by MaxRows however large the store
// grows. The price is staleness of up to one Interval, and lower-bound counts past
// MaxRows (flagged by berth_census_truncated).
//
// Each pass reads at snapshot isolation in short transactions of pageRows rows, so it
// never makes a writer retry; counts may mix read versions a few milliseconds apart.
type Census struct {
	o Options
}

// State names used as gauge labels.
var (
	runnerStates = []string{"active", "draining", "disconnected"}
	envoyStates  = []string{"active", "draining", "disconnected"}
)

// New returns a Census; Run drives it.
func New(o Options) *Census {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.MaxRows <= 0 {
		o.MaxRows = DefaultMaxRows
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Census{o: o}
}

// Run takes a census at once and then every Interval until ctx ends.
func (c *Census) Run(ctx context.Context) {
	t := time.NewTicker(c.o.Interval)
	defer t.Stop()
	for {
		if err := c.Pass(ctx); err != nil && ctx.Err() == nil {
			c.o.Log.Warn("metrics census failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Counts is the result of one pass.
type Counts struct {
	Actors    map[actor.Phase]int
	Runners   map[string]int
	Envoys    map[string]int
	Pending   int
	Truncated bool
}

// Pass takes one census and publishes it in the gauges.
func (c *Census) Pass(ctx context.Context) error {
	start := time.Now()
	n, err := c.Count(ctx)
	if err != nil {
		return err
	}
	m := c.o.Metrics
	for _, s := range actor.LivePhases {
		m.Actors.WithLabelValues(string(s)).Set(float64(n.Actors[s]))
	}
	for _, s := range runnerStates {
		m.Runners.WithLabelValues(s).Set(float64(n.Runners[s]))
	}
	for _, s := range envoyStates {
		m.Envoys.WithLabelValues(s).Set(float64(n.Envoys[s]))
	}
	m.PendingAllocations.Set(float64(n.Pending))
	truncated := 0.0
	if n.Truncated {
		truncated = 1
	}
	m.CensusTruncated.Set(truncated)
	m.CensusDuration.Set(time.Since(start).Seconds())
	return nil
}

// Count reads the store, at most MaxRows index rows.
func (c *Census) Count(ctx context.Context) (Counts, error) {
	n := Counts{Actors: map[actor.Phase]int{}, Runners: map[string]int{}, Envoys: map[string]int{}}
	budget := c.o.MaxRows
	take := func(rows int) bool { // false once the budget is spent
		budget -= rows
		if budget <= 0 {
			n.Truncated = true
			return false
		}
		return true
	}
	after := ""
	for {
		var page namespace.ListOutput
		if err := c.read(ctx, func(r udb.ReadTransaction) (err error) {
			page, err = namespace.List(ctx, r, namespace.ListInput{Limit: pageRows, AfterName: after})
			return err
		}); err != nil {
			return n, err
		}
		if !take(len(page.Namespaces)) {
			return n, nil
		}
		for _, ns := range page.Namespaces {
			if ok, err := c.countNamespace(ctx, ns, &n, take); err != nil || !ok {
				return n, err
			}
		}
		if page.Cursor == nil || len(page.Namespaces) < pageRows { // a short page is the last
			return n, nil
		}
		after = *page.Cursor
	}
}

// countNamespace adds ns's runners, envoys, actors and pending entries to n; false when
// the budget ran out.
func (c *Census) countNamespace(ctx context.Context, ns namespace.Namespace, n *Counts, take func(int) bool) (bool, error) {
	for cur := ""; ; {
		var page runner.ListForNsOutput
		if err := c.read(ctx, func(r udb.ReadTransaction) (err error) {
			page, err = runner.ListForNs(ctx, r, runner.ListForNsInput{Namespace: ns.NamespaceID, Limit: runner.MaxListLimit, Cursor: cur})
			return err
		}); err != nil {
			return false, err
		}
		for _, run := range page.Runners {
			n.Runners[hostState(run.DrainTs != nil, run.LastConnectedTs != nil)]++
		}
		if !take(len(page.Runners)) {
			return false, nil
		}
		if page.Cursor == nil || len(page.Runners) < runner.MaxListLimit {
			break
		}
		cur = *page.Cursor
	}
	for cur := ""; ; {
		var page envoy.ListOutput
		if err := c.read(ctx, func(r udb.ReadTransaction) (err error) {
			page, err = envoy.List(ctx, r, envoy.ListInput{Namespace: ns.NamespaceID, Limit: envoy.MaxListLimit, Cursor: cur})
			return err
		}); err != nil {
			return false, err
		}
		for _, e := range page.Envoys {
			n.Envoys[hostState(e.StopTs != nil, e.LastConnectedTs != nil)]++
		}
		if !take(len(page.Envoys)) {
			return false, nil
		}
		if page.Cursor == nil || len(page.Envoys) < envoy.MaxListLimit {
			break
		}
		cur = *page.Cursor
	}
	for after := []byte(nil); ; {
		var page actor.CountPhasesOutput
		if err := c.read(ctx, func(r udb.ReadTransaction) (err error) {
			page, err = actor.CountPhases(ctx, r, actor.CountPhasesInput{Namespace: ns.NamespaceID, After: after, Limit: pageRows})
			return err
		}); err != nil {
			return false, err
		}
		for p, k := range page.Phases {
			n.Actors[p] += k
		}
		if !take(page.Rows) {
			return false, nil
		}
		if after = page.Next; after == nil {
			break
		}
	}
	for after := []byte(nil); ; {
		var rows int
		var next []byte
		if err := c.read(ctx, func(r udb.ReadTransaction) (err error) {
			rows, next, err = actor.CountPending(ctx, r, actor.CountPendingInput{Namespace: ns.NamespaceID, After: after, Limit: pageRows})
			return err
		}); err != nil {
			return false, err
		}
		n.Pending += rows
		if !take(rows) {
			return false, nil
		}
		if after = next; after == nil {
			return true, nil
		}
	}
}

func hostState(draining, connected bool) string {
	switch {
	case draining:
		return "draining"
	case !connected:
		return "disconnected"
	}
	return "active"
}

// read runs f in a read transaction; f must be safe to retry, as a retry runs it again.
func (c *Census) read(ctx context.Context, f func(udb.ReadTransaction) error) error {
	return udb.View(ctx, c.o.DB, f)
}
