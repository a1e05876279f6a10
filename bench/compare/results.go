package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// metric is one row of the table.
type metric struct {
	Key    string `json:"key"`
	Step   string `json:"step"`
	Label  string `json:"label"`
	Unit   string `json:"unit"`
	Higher bool   `json:"higher_is_better,omitempty"`
}

// metrics are the rows, in the order.
var metrics = []metric{
	{"start_ms", "1", "engine start until /health answers", "ms", false},
	{"runner_connect_ms", "2", "runner connect until listed in GET /runners (median of 5)", "ms", false},
	{"cold_p50_ms", "3", "actor cold start, create until first gateway answer, p50 of 50", "ms", false},
	{"cold_p99_ms", "3", "actor cold start, p99 of 50", "ms", false},
	{"http_p50_ms", "4", "gateway HTTP p50, 2,000 sequential requests", "ms", false},
	{"http_p99_ms", "4", "gateway HTTP p99", "ms", false},
	{"http_nethttp_p50_ms", "4", "gateway HTTP p50 with Go's net/http client", "ms", false},
	{"http_rps", "4", "gateway HTTP, 16 connections for 10 s", "req/s", true},
	{"http_cpu_ms_per_req", "4", "engine CPU per request in that loop", "ms", false},
	{"ws_p50_ms", "5", "WebSocket echo round trip p50, 2,000 echoes", "ms", false},
	{"ws_p99_ms", "5", "WebSocket echo round trip p99", "ms", false},
	{"wake_p50_ms", "6", "wake from sleep until first answer, p50 of 10", "ms", false},
	{"wake_max_ms", "6", "wake from sleep, slowest of 10", "ms", false},
	{"fleet_connect_s", "7", "200 more runners connected (20 at a time)", "s", false},
	{"fleet_created", "7", "actors created of 2,000 (16 clients, within 60 s)", "actors", true},
	{"fleet_creates_per_s", "7", "creates per second", "creates/s", true},
	{"fleet_started", "7", "of those, started on a runner within 20 s more", "actors", true},
	{"list_runners_p50_ms", "7", "GET /runners?limit=100 p50 (206 runners), 100 calls", "ms", false},
	{"list_runners_p99_ms", "7", "GET /runners?limit=100 p99", "ms", false},
	{"list_actors_p50_ms", "7", "GET /actors?name=...&limit=100 p50 (the actors created), 100 calls", "ms", false},
	{"list_actors_p99_ms", "7", "GET /actors?name=...&limit=100 p99", "ms", false},
	{"rss_idle_mib", "8", "engine RSS at idle (3 s after /health)", "MiB", false},
	{"rss_idle_anon_mib", "8", "of which private (RssAnon: heap, stacks)", "MiB", false},
	{"rss_idle_file_mib", "8", "of which the binary's mapped pages (RssFile)", "MiB", false},
	{"cpu_idle_s", "8", "engine CPU seconds at idle", "s", false},
	{"rss_after_mib", "8", "engine RSS after step 7", "MiB", false},
	{"rss_after_anon_mib", "8", "of which private (RssAnon)", "MiB", false},
	{"rss_after_file_mib", "8", "of which the binary's mapped pages (RssFile)", "MiB", false},
	{"cpu_after_s", "8", "engine CPU seconds after step 7 (whole session)", "s", false},
	{"rss_settled_mib", "8", "engine RSS 3 s after step 7 (runners connected, no requests)", "MiB", false},
	{"rss_settled_anon_mib", "8", "of which private (RssAnon)", "MiB", false},
	{"rss_settled_file_mib", "8", "of which the binary's mapped pages (RssFile)", "MiB", false},
	{"large_connect_s", "9", "100 more runners connected (20 at a time), slots for every actor of step 9", "s", false},
	{"large_rest_cpu_ms_per_s", "9", "at rest with 306 runners: engine CPU per second", "ms/s", false},
	{"large_rest_commits_per_s", "9", "at rest with 306 runners: PostgreSQL transactions per second", "xact/s", false},
	{"large_created", "9", "actors created of step 9's (16 clients, within -large-within)", "actors", true},
	{"large_creates_per_s", "9", "creates per second", "creates/s", true},
	{"large_started", "9", "of those, started on a runner within 20 s more", "actors", true},
	{"large_create_cpu_ms", "9", "engine CPU per create (and its start), beyond that at rest", "ms", false},
	{"large_create_commits", "9", "PostgreSQL transactions per create (and its start), beyond those at rest", "xact", false},
	{"large_create_commits_per_s", "9", "PostgreSQL transactions per second while creating, beyond those at rest", "xact/s", false},
	{"list_large_p50_ms", "9", "GET /actors?name=...&limit=100 p50 over them, 100 calls", "ms", false},
	{"list_large_p99_ms", "9", "GET /actors?name=...&limit=100 p99", "ms", false},
	{"large_wake_p50_ms", "9", "wake from sleep, 20 actors spread over them, p50", "ms", false},
	{"large_wake_max_ms", "9", "wake from sleep, slowest of 20", "ms", false},
	{"large_http_rps", "9", "gateway HTTP spread over them (each request the next actor), 16 connections for 10 s", "req/s", true},
	{"large_http_p50_ms", "9", "that loop's p50", "ms", false},
	{"large_http_p99_ms", "9", "that loop's p99", "ms", false},
	{"large_http_cpu_ms", "9", "engine CPU per request in that loop, beyond that at rest", "ms", false},
	{"large_http_commits", "9", "PostgreSQL transactions per request in that loop, beyond those at rest", "xact", false},
	{"large_http_commits_per_s", "9", "PostgreSQL transactions per second in that loop, beyond those at rest", "xact/s", false},
	{"rss_large_mib", "9", "engine RSS after step 9", "MiB", false},
}

// nodeMetrics are the rows of each node's CPU with several nodes.
func nodeMetrics(nodes int) []metric {
	var out []metric
	for _, m := range []struct{ key, label, unit string }{
		{"large_rest_cpu_ms_per_s", "at rest: CPU per second of node", "ms/s"},
		{"large_create_cpu_ms", "CPU per create beyond that at rest, node", "ms"},
		{"large_http_cpu_ms", "CPU per spread gateway request beyond that at rest, node", "ms"},
	} {
		for i := range nodes {
			out = append(out, metric{Key: fmt.Sprintf("%s_node%d", m.key, i+1), Step: "9", Label: fmt.Sprintf("%s %d", m.label, i+1), Unit: m.unit})
		}
	}
	return out
}

// results are every session's figures, then their medians.
type results struct {
	Nodes       int        `json:"nodes"`    // berth's nodes in the subject
	Subject     string     `json:"subject"`  // the target measured: berth, or berth with several nodes
	Baseline    string     `json:"baseline"` // the target it is compared with: the reference, or berth with one node
	GeneratedAt string     `json:"generated_at"`
	Took        string     `json:"took"`
	Make        string     `json:"-"` // the make variables of the run, " STORE=postgres" or ""
	JSONName    string     `json:"-"` // the raw figures' file name
	Machine     machine    `json:"machine"`
	Order       [][]string `json:"order"`              // per repetition, the engines in the order they ran
	Failures    []string   `json:"failures,omitempty"` // what went wrong in a session
	Metrics     []row      `json:"metrics"`
}

// row is one metric: each target's value per repetition, the medians and the ratio.
type row struct {
	metric
	Values map[string][]float64 `json:"values"`          // target → per repetition
	Median map[string]float64   `json:"median"`          // target → median of Values
	Ratio  *float64             `json:"ratio,omitempty"` // subject / baseline
	Ahead  *bool                `json:"berth_ahead,omitempty"`
}

// newResults holds the rows of a run with nodes berth nodes: berth against the reference for
// one, berth with nodes against berth with one for more.
func newResults(nodes int) *results {
	r := &results{Nodes: nodes, Subject: targetBerth, Baseline: targetRef}
	all := metrics
	if nodes > 1 {
		r.Subject, r.Baseline = berthEngine("", nodes).target, targetBerth
		all = append(slices.Clone(metrics), nodeMetrics(nodes)...)
	}
	for _, m := range all {
		r.Metrics = append(r.Metrics, row{metric: m, Values: map[string][]float64{}, Median: map[string]float64{}})
	}
	return r
}

// add records one session's figures for target.
func (r *results) add(target string, f figures) {
	for i := range r.Metrics {
		if v, ok := f[r.Metrics[i].Key]; ok {
			r.Metrics[i].Values[target] = append(r.Metrics[i].Values[target], v)
		}
	}
}

// finish computes the medians and ratios.
func (r *results) finish() {
	for i := range r.Metrics {
		m := &r.Metrics[i]
		for t, vs := range m.Values {
			m.Median[t] = median(vs)
		}
		b, okB := m.Median[r.Subject]
		ref, okR := m.Median[r.Baseline]
		if okB && okR && ref != 0 {
			ratio := b / ref
			ahead := b < ref
			if m.Higher {
				ahead = b > ref
			}
			m.Ratio, m.Ahead = &ratio, &ahead
		}
	}
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// format shows v with a precision that suits its size.
func format(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// markdown is RESULTS.md.
func (r *results) markdown() string {
	var b strings.Builder
	m := r.Machine
	reps := len(r.Order)
	nodes := r.Nodes > 1
	title, subject, baseline, ratioCol := "berth vs the Rivet engine, side by side", "berth", "rivet 2.3.19", "berth/rivet"
	if nodes {
		title = fmt.Sprintf("berth on %d nodes vs one node, on PostgreSQL", r.Nodes)
		subject, baseline, ratioCol = fmt.Sprintf("berth %d nodes", r.Nodes), "berth 1 node", fmt.Sprintf("%d nodes/1 node", r.Nodes)
	}
	fmt.Fprintf(&b, "# %s\n\n", title)
	fmt.Fprintf(&b, "Generated by `make bench-compare%s` (bench/compare) on %s in %s; do not edit by hand, run it again.\n", r.Make, r.GeneratedAt, r.Took)
	fmt.Fprintf(&b, "Raw figures of every repetition: `%s`.\n\n", r.JSONName)
	fmt.Fprintf(&b, "- machine: %d cores (%s), %d MiB, Linux %s\n", m.Cores, m.CPU, m.MemTotalMiB, m.Kernel)
	fmt.Fprintf(&b, "- load average (1, 5, 15 min): %s at start, %s at the end\n", m.LoadAvgStart, m.LoadAvgEnd)
	fmt.Fprintf(&b, "- berth: %s; reference: %s\n", m.Berth, m.Reference)
	fmt.Fprintf(&b, "- runner: %s on node %s, the same for both engines\n", m.Runner, m.Node)
	fmt.Fprintf(&b, "- store: %s\n", m.Store)
	order := make([]string, len(r.Order))
	for i, o := range r.Order {
		order[i] = strings.Join(o, " then ")
	}
	fmt.Fprintf(&b, "- %d repetitions (%s), each engine with a fresh data folder on loopback; figures are medians over the repetitions\n\n", reps, strings.Join(order, ", "))
	fmt.Fprintf(&b, "| step | measure | unit | %s | %s | %s | plain node |\n", subject, baseline, ratioCol)
	fmt.Fprintf(&b, "|---|---|---|---:|---:|---:|---:|\n")
	for _, row := range r.Metrics {
		if len(row.Median) == 0 {
			continue // a step this run left out
		}
		cell := func(t string) string {
			if v, ok := row.Median[t]; ok {
				return format(v)
			}
			return ""
		}
		ratio := ""
		if row.Ratio != nil {
			ratio = fmt.Sprintf("%.2f", *row.Ratio)
			if !*row.Ahead && !nodes {
				ratio += " (not ahead)"
			}
		}
		label := row.Label
		if row.Higher {
			label += " (higher is better)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", row.Step, label, row.Unit, cell(r.Subject), cell(r.Baseline), ratio, cell(targetPlain))
	}
	if len(r.Failures) > 0 {
		fmt.Fprintf(&b, "\nWhat went wrong (a session that stopped early lacks its later figures in the medians):\n\n")
		for _, f := range r.Failures {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	fmt.Fprintf(&b, "\nThe plain node column is the same echo handler served by a node HTTP server without an engine: the floor under the gateway figures. "+
		"The gateway HTTP figures are measured with a client that writes each request and reads its answer on one goroutine per connection; "+
		"the row \"with Go's net/http client\" shows the same p50 measured through net/http's per-connection goroutines. "+
		"RSS is RssAnon, the engine's private memory, plus RssFile, its binary's pages mapped from the page cache (shared and reclaimable; "+
		"how much is mapped depends on the page cache more than on the engine, see docs/benchmarks.md).\n")
	return b.String()
}

// write writes the table as md and the figures as js into dir.
func (r *results) write(dir, md, js, table string) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, js), append(raw, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, md), []byte(table), 0o644); err != nil {
		return err
	}
	logf("wrote %s and %s", filepath.Join(dir, md), filepath.Join(dir, js))
	return nil
}
