// Command compare is `make bench-compare`: it runs the same workload against berth and against
// the Rivet reference engine (rivet-engine 2.3.19 from npm), each in turn with a fresh data
// folder on loopback and the same npm runner (tests/npm/bench-echo-runner.mjs), alternating
// which engine goes first, plus a plain node server as the floor. It prints the medians and
// the ratio berth/reference and rewrites bench/RESULTS.md and bench/results.json. The
// workload's steps (start, runner connect, cold start, gateway HTTP, WebSocket echo, wake,
// lists, memory and CPU) are described in docs/benchmarks.md. Every child process runs in its
// own process group and is killed when the program ends, fails or is interrupted. With
// -store postgres both engines run on one PostgreSQL server, a fresh database each, and step 9
// creates 20,000 actors; with -nodes N berth on N nodes runs against berth on one instead of
// the reference (docs/benchmarks.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/berthhq/berth/bench/sidebyside"
)

// options are the command line's.
type options struct {
	berth    string        // the berth binary
	npm      string        // tests/npm
	out      string        // where RESULTS.md and results.json go
	reps     int           // repetitions planned
	budget   time.Duration // the whole run's time limit
	creators int           // concurrent creates in steps 7 and 9
	only     string        // targets to run, comma-separated
	store    string        // storeEmbedded or storePostgres
	postgres string        // the PostgreSQL server's admin URL
	nodes    int           // berth nodes: more than 1 compares them with one node
	large    int           // actors of step 9
	largeFor time.Duration // budget of step 9's creates
}

func main() {
	var o options
	flag.StringVar(&o.berth, "berth", "bin/berth", "berth binary (`make build` makes it; built into a temporary folder if missing)")
	flag.StringVar(&o.npm, "npm", "tests/npm", "folder of the npm runner script and its node_modules")
	flag.StringVar(&o.out, "out", "bench", "folder for RESULTS.md and results.json")
	flag.IntVar(&o.reps, "reps", 3, "repetitions (each runs every engine once); at least 2 so that each engine goes first once")
	flag.DurationVar(&o.budget, "budget", 10*time.Minute, "time limit of the whole run; repetitions that would not fit are left out")
	flag.IntVar(&o.creators, "creators", 16, "concurrent clients creating the 2,000 actors of step 7")
	flag.StringVar(&o.only, "only", "", "targets to run, comma-separated (a partial run for trying things out); default plain,berth,reference, or berth,berth_Nnodes with -nodes N")
	flag.StringVar(&o.store, "store", storeEmbedded, "the engines' store: embedded (each its own, in its data folder) or postgres (a fresh database each on the server of -postgres)")
	flag.StringVar(&o.postgres, "postgres", os.Getenv("BERTH_TEST_POSTGRES_URL"), "with -store postgres: URL of a database on the PostgreSQL server, as a role that may create databases (`source .ci/postgres.sh` starts a server and sets BERTH_TEST_POSTGRES_URL)")
	flag.IntVar(&o.nodes, "nodes", 1, "with -store postgres: more than 1 runs berth with that many nodes on one PostgreSQL database and NATS against berth with one node, instead of the reference")
	flag.IntVar(&o.large, "large", -1, "actors of step 9 (0 leaves it out); default 20000 with -store postgres, else 0")
	flag.DurationVar(&o.largeFor, "large-within", 2*time.Minute, "time limit of step 9's creates")
	flag.Parse()
	if err := o.check(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-compare:", err)
		os.Exit(1)
	}
}

// check validates the options and fills in the defaults that depend on others.
func (o *options) check() error {
	if o.reps < 1 {
		return errors.New("-reps must be at least 1")
	}
	switch o.store {
	case storeEmbedded:
		if o.nodes != 1 {
			return errors.New("-nodes needs -store postgres: nodes share a PostgreSQL database")
		}
	case storePostgres:
		if o.postgres == "" {
			return errors.New("-store postgres needs -postgres URL or BERTH_TEST_POSTGRES_URL (`source .ci/postgres.sh`)")
		}
	default:
		return fmt.Errorf("-store %q: want embedded or postgres", o.store)
	}
	if o.nodes < 1 || o.nodes > 9 {
		return errors.New("-nodes must be 1 to 9")
	}
	if o.large < 0 {
		o.large = 0
		if o.store == storePostgres {
			o.large = 20000
		}
	}
	if o.largeFor <= 0 {
		return errors.New("-large-within must be positive")
	}
	if o.only == "" {
		o.only = strings.Join([]string{targetPlain, targetBerth, targetRef}, ",")
		if o.nodes > 1 {
			o.only = targetBerth + "," + berthEngine("", o.nodes).target
		}
	}
	return nil
}

// outName is the results' file name for base (RESULTS, results): with -store postgres it ends
// in -postgres, with several nodes also in -Nnodes.
func (o *options) outName(base string) string {
	if o.store == storePostgres {
		base += "-postgres"
	}
	if o.nodes > 1 {
		base += fmt.Sprintf("-%dnodes", o.nodes)
	}
	return base
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func run(o options) error {
	started := time.Now()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.budget)
	defer cancel()
	kids := newChildren()
	defer kids.stopAll()
	go func() { // an interrupt or the budget's end stops every child at once
		<-ctx.Done()
		kids.stopAll()
	}()

	machine := readMachine() // load average before anything of ours runs
	logf("%d cores, load average %s", machine.Cores, machine.LoadAvgStart)

	tmp, err := os.MkdirTemp("", "berth-bench-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	if err := npmInstall(o.npm); err != nil {
		return err
	}
	refBin, err := sidebyside.ReferenceBinary(logf)
	if err != nil {
		return err
	}
	berthBin, err := berthBinary(o.berth, tmp)
	if err != nil {
		return err
	}
	machine.Berth = berthVersion(berthBin)
	machine.Node = commandOutput("node", "--version")

	w := &workload{npm: o.npm, tmp: tmp, kids: kids, creators: o.creators, large: o.large, largeFor: o.largeFor}
	kinds := []engineKind{berthEngine(berthBin, 1), referenceEngine(refBin)}
	res := newResults(o.nodes)
	machine.Store = "each engine's embedded store (berth: file store; reference: RocksDB), in a fresh data folder"
	if o.store == storePostgres {
		w.pg = &pgServer{admin: o.postgres}
		version, err := w.pg.version(ctx)
		if err != nil {
			return fmt.Errorf("PostgreSQL at -postgres: %w", err)
		}
		machine.Store = "PostgreSQL " + version + " on loopback, a fresh database per session"
	}
	if o.nodes > 1 {
		url, stopNATS, err := startNATS()
		if err != nil {
			return err
		}
		defer stopNATS()
		w.nats = url
		kinds = []engineKind{berthEngine(berthBin, 1), berthEngine(berthBin, o.nodes)}
		machine.Store += fmt.Sprintf("; %d nodes share it and an in-process NATS server", o.nodes)
	}
	only := strings.Split(o.only, ",")
	var engines []engineKind
	for _, e := range kinds {
		if slices.Contains(only, e.target) {
			engines = append(engines, e)
		}
	}
	var repTook time.Duration
	for rep := range o.reps {
		if left := time.Until(started.Add(o.budget)); rep > 0 && repTook+30*time.Second > left {
			logf("repetition %d left out: the last one took %v and %v of the budget is left", rep+1, repTook.Round(time.Second), left.Round(time.Second))
			break
		}
		repStart := time.Now()
		order := slices.Clone(engines)
		if rep%2 == 1 {
			slices.Reverse(order)
		}
		var names []string
		for _, e := range order {
			names = append(names, e.target)
		}
		logf("repetition %d: %s", rep+1, strings.Join(append([]string{"floor"}, names...), ", then "))
		// A repetition counts once it is complete; one cut off by the budget is left out.
		done, err := w.repetition(ctx, rep, order, slices.Contains(only, targetPlain))
		if err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && rep > 0 {
				logf("repetition %d cut off by the time budget: left out", rep+1)
				w.failures = append(w.failures, fmt.Sprintf("repetition %d: cut off by the time budget, left out", rep+1))
				break
			}
			return fmt.Errorf("repetition %d: %w", rep+1, interrupted(ctx, err))
		}
		for target, f := range done {
			res.add(target, f)
		}
		res.Order = append(res.Order, names)
		repTook = time.Since(repStart)
		logf("repetition %d took %v", rep+1, repTook.Round(time.Second))
	}
	machine.LoadAvgEnd = loadAvg()
	res.Machine = machine
	res.Failures = w.failures
	res.Took = time.Since(started).Round(time.Second).String()
	res.JSONName = o.outName("results") + ".json"
	if o.store == storePostgres {
		res.Make = " STORE=postgres"
	}
	if o.nodes > 1 {
		res.Make += fmt.Sprintf(" NODES=%d", o.nodes)
	}
	res.GeneratedAt = time.Now().UTC().Format(time.RFC3339)
	res.finish()
	table := res.markdown()
	fmt.Println(table)
	return res.write(o.out, o.outName("RESULTS")+".md", o.outName("results")+".json", table)
}

// repetition runs the floor (when plain) and a session of each engine in order and returns
// their figures by target. A session that fails keeps the figures it has and the repetition
// goes on (the failure is noted); only the end of ctx stops it.
func (w *workload) repetition(ctx context.Context, rep int, order []engineKind, plain bool) (map[string]figures, error) {
	out := map[string]figures{}
	if plain {
		f, err := w.floor(ctx, rep)
		if err != nil {
			return nil, fmt.Errorf("plain node: %w", err)
		}
		out[targetPlain] = f
	}
	for _, e := range order {
		f, err := w.session(ctx, e, rep)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s: %w", e.name, err)
			}
			w.failed(e, rep, err)
		}
		out[e.target] = f
	}
	return out, nil
}

// interrupted names the interrupt or the budget's end as the cause when ctx ended.
func interrupted(ctx context.Context, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("the time budget ran out (%v)", err)
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted (%v)", err)
	}
	return err
}

// npmInstall installs the npm runner's packages into dir/node_modules when they are missing.
func npmInstall(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@rivetkit", "engine-runner", "package.json")); err == nil {
		return nil
	}
	logf("npm install --prefix %s", dir)
	out, err := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund").CombinedOutput()
	if err != nil {
		return fmt.Errorf("npm install --prefix %s: %v\n%s", dir, err, out)
	}
	return nil
}

// berthBinary returns path if it exists, else builds berth into dir.
func berthBinary(path, dir string) (string, error) {
	if _, err := os.Stat(path); err == nil {
		return filepath.Abs(path)
	}
	bin := filepath.Join(dir, "berth")
	logf("building berth into %s", bin)
	out, err := exec.Command("go", "build", "-trimpath", "-o", bin, "./engine/cmd/berth").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./engine/cmd/berth: %v\n%s", err, out)
	}
	return bin, nil
}

func berthVersion(bin string) string {
	return commandOutput(bin, "version") // "berth VERSION"
}

// commandOutput is the first line of what name args prints, or "unknown".
func commandOutput(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// machine describes where the run happened.
type machine struct {
	Cores        int    `json:"cores"`
	CPU          string `json:"cpu"`
	MemTotalMiB  int64  `json:"mem_total_mib"`
	Kernel       string `json:"kernel"`
	LoadAvgStart string `json:"load_avg_start"` // 1, 5 and 15 minutes, from /proc/loadavg
	LoadAvgEnd   string `json:"load_avg_end"`
	Go           string `json:"go"`
	Node         string `json:"node"`
	Berth        string `json:"berth"`
	Reference    string `json:"reference"`
	Runner       string `json:"runner"`
	Store        string `json:"store"`
}

func readMachine() machine {
	m := machine{Cores: runtime.NumCPU(), LoadAvgStart: loadAvg(), Go: runtime.Version(),
		Reference: "rivet-engine " + sidebyside.RefVersion + " (" + sidebyside.RefPackage + ")",
		Runner:    "@rivetkit/engine-runner 2.2.1 (tests/npm/bench-echo-runner.mjs)"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			m.MemTotalMiB = kb >> 10
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
