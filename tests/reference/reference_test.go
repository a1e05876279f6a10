package reference

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/berthhq/berth/tests/internal/harness"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The scenarios mostly wait on the engines (lost thresholds, timeouts): run more of them
	// at once than the machine has cores, unless -parallel was given.
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		_ = flag.Set("test.parallel", "8")
	}
	os.Exit(harness.Main(m))
}

// A scenario is what a client does against an engine; it records what it observes in its
// session, and the transcripts of every target must agree with the reference's but for the
// differences listed in differences_test.go.
type scenario struct {
	name string
	doc  string // what it does, for docs/compat.md
	// auth runs it on the engines that have an admin token.
	auth bool
	// alone runs it after the others, one at a time: it crashes engines they share.
	alone bool
	run   func(s *Session)
}

var scenarios []scenario

// register adds scenarios; each file of scenarios registers its own from init.
func register(sc ...scenario) { scenarios = append(scenarios, sc...) }

// TestReference runs every scenario against the Rivet engine 2.3.19 and against berth (one
// node, and two nodes behind a round-robin proxy when PostgreSQL is available), at the same
// time, and compares what each observed.
func TestReference(t *testing.T) {
	if testing.Short() {
		t.Skip("the differential tests start the reference engine")
	}
	harness.NeedNode(t)
	deployments := map[bool][]*Target{}
	for _, auth := range []bool{false, true} {
		token, suffix := "", ""
		if auth {
			token, suffix = adminToken, "-auth"
		}
		deployments[auth] = append(deployments[auth],
			startReference(t, "rivet"+suffix, token),
			startBerth(t, "berth"+suffix, token))
		if c := startCluster(t, "cluster"+suffix, token); c != nil {
			deployments[auth] = append(deployments[auth], c)
		}
	}
	used := &usage{seen: map[int]bool{}, compared: map[string]bool{}}
	// The group returns once every scenario, each run in parallel, has ended; then those
	// that must run alone, in turn.
	t.Run("scenarios", func(t *testing.T) {
		for _, sc := range scenarios {
			if sc.alone {
				continue
			}
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				runScenario(t, sc, deployments[sc.auth], used)
			})
		}
	})
	t.Run("alone", func(t *testing.T) {
		for _, sc := range scenarios {
			if sc.alone {
				t.Run(sc.name, func(t *testing.T) { runScenario(t, sc, deployments[sc.auth], used) })
			}
		}
	})
	used.mu.Lock()
	defer used.mu.Unlock()
	for i, d := range differences {
		if used.comparedAny(d.Scenario) && !used.seen[i] {
			t.Errorf("differences[%d] (%s, step %q) matched nothing: the behaviour changed; remove or mend the entry", i, d.Scenario, d.Step)
		}
	}
}

// runScenario runs sc against every target at once, then compares each transcript with the
// reference's (the first target).
func runScenario(t *testing.T, sc scenario, targets []*Target, used *usage) {
	trs := make([]*Transcript, len(targets))
	t.Run("run", func(t *testing.T) {
		for i, tg := range targets {
			t.Run(tg.Name, func(t *testing.T) {
				t.Parallel()
				s := newSession(t, tg, sc.name)
				trs[i] = s.tr
				sc.run(s)
			})
		}
	})
	if t.Failed() {
		return
	}
	for i, tg := range targets[1:] {
		checkAgainstReference(t, sc.name, tg.Name, trs[0], trs[i+1], used)
	}
	used.mu.Lock()
	used.compared[sc.name] = true
	used.mu.Unlock()
}

// usage notes which entries of differences matched a difference.
type usage struct {
	mu       sync.Mutex
	seen     map[int]bool
	compared map[string]bool // the scenarios whose transcripts were compared
}

// comparedAny reports whether a scenario matching pattern (see glob) was compared.
func (u *usage) comparedAny(pattern string) bool {
	for name := range u.compared {
		if glob(pattern, name) {
			return true
		}
	}
	return false
}

// checkAgainstReference fails t for each difference between the transcripts that the table
// of intended differences does not hold.
func checkAgainstReference(t *testing.T, scenario, target string, ref, got *Transcript, used *usage) {
	t.Helper()
	var unexpected []string
	for _, d := range compare(ref, got) {
		if is, ok := intended(scenario, d); ok {
			used.mu.Lock()
			for _, i := range is {
				used.seen[i] = true
			}
			used.mu.Unlock()
			continue
		}
		for _, p := range d.Places {
			unexpected = append(unexpected, p.String())
		}
		unexpected = append(unexpected, fmt.Sprintf("(the whole step, for differences: Step: %q, Path: \"$\", Reference: %#q, Berth: %#q)", d.Step, d.Reference, d.Got))
	}
	if len(unexpected) > 0 {
		t.Errorf("%s differs from the reference in %d places:\n  %s\nreference transcript:\n%s%s transcript:\n%s",
			target, len(unexpected), strings.Join(unexpected, "\n  "), ref.render(), target, got.render())
	}
}
