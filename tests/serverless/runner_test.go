package serverless

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/tests/internal/harness"
)

// Runner pools (rivetkit 2.2.1): berth keeps GET {url}/start requests open as the pool's
// demand asks (docs/serverless.md § 5). Each test's pools live 8 s per request and drain
// their runner 2 s before (pegboard.serverless_drain_grace_period_ms).

const (
	runnerLifespan = 8
	runnerGraceMs  = 2000
)

// startRunnerEngine starts berth allowing loopback endpoints, with a short runner drain grace.
func startRunnerEngine(t testing.TB, more func(cfg map[string]any)) *harness.Engine {
	return harness.StartEngine(t, harness.Settings{Configure: func(cfg map[string]any) {
		pb, _ := cfg["pegboard"].(map[string]any)
		if pb == nil {
			pb = map[string]any{}
			cfg["pegboard"] = pb
		}
		pb["serverless"] = map[string]any{"allowed_cidrs": []string{"127.0.0.0/8", "::1/128"}}
		pb["serverless_drain_grace_period_ms"] = runnerGraceMs
		if more != nil {
			more(cfg)
		}
	}})
}

// putRunnerPool writes pool as a serverless pool of url with a short request lifespan and
// the fields of extra.
func putRunnerPool(t testing.TB, e *harness.Engine, pool, url string, extra map[string]any) {
	t.Helper()
	sl := map[string]any{"url": url, "request_lifespan": runnerLifespan, "drain_grace_period": 2, "headers": map[string]string{"x-secret": "s3cret"}}
	for k, v := range extra {
		sl[k] = v
	}
	body := map[string]any{"datacenters": map[string]any{"default": map[string]any{"serverless": sl}}}
	if status, b := call(t, e, http.MethodPut, "/runner-configs/"+pool+"?namespace=default", body); status != 200 {
		t.Fatalf("PUT %s: %d %s", pool, status, b)
	}
}

// starts follows the GET /start requests an app or the fake saw, from its events.
type starts struct {
	open  map[string]bool
	total int
}

func newStarts() *starts { return &starts{open: map[string]bool{}} }

// see counts ev; it reports whether ev was a /start request.
func (s *starts) see(ev harness.Event) bool {
	var l struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
		Path   string `json:"path"`
	}
	if json.Unmarshal([]byte(ev.Line), &l) != nil || l.ID == nil {
		return false
	}
	key := fmt.Sprint(l.ID)
	switch ev.Ev {
	case "request":
		if strings.HasSuffix(l.Path, "/start") {
			if l.Method != http.MethodGet {
				panic("a runner pool's /start with method " + l.Method)
			}
			s.open[key] = true
			s.total++
			return true
		}
	case "closed":
		delete(s.open, key)
	}
	return false
}

// awaitStart awaits p's next /start request and returns its event.
func (s *starts) awaitStart(p *harness.Proc, within time.Duration) harness.Event {
	return p.Await("a GET /start", within, s.see)
}

// awaitNoneOpen awaits the moment p has no /start request open.
func (s *starts) awaitNoneOpen(p *harness.Proc, within time.Duration) {
	if len(s.open) == 0 {
		return
	}
	p.Await("every /start closed", within, func(ev harness.Event) bool {
		s.see(ev)
		return len(s.open) == 0
	})
}

// An actor of a rivetkit 2.2.1 runner pool starts on demand: with no runner running and no
// /start made before, its create makes the engine open GET {url}/start; the runner the app
// starts connects and runs it; its state survives a sleep and wake; once it sleeps, the
// requests end at their lifespan and none replaces them (the pool scales back to zero).
func TestRunnerPoolStartsOnDemand(t *testing.T) {
	needApps(t)
	e := startRunnerEngine(t, nil)
	url, app := startApp(t, "rivetkit 2.2.1", harness.NPMDir, "serverless-app.mjs", "RIVET_ENDPOINT="+e.URL)
	putRunnerPool(t, e, "sl22", url, nil)
	st := newStarts()
	for _, ev := range app.Seen() {
		st.see(ev)
	}
	if st.total != 0 {
		t.Fatalf("%d /start before any actor", st.total)
	}

	aid := createCounter(t, e, "sl22", "k1")
	st.awaitStart(app, within)
	if got := increment(t, e, aid, 5); got != 5 {
		t.Fatalf("first increment: %d, want 5", got)
	}
	if got := increment(t, e, aid, 2); got != 7 {
		t.Fatalf("second increment: %d, want 7", got)
	}
	sleepActor(t, e, aid)
	if got := increment(t, e, aid, 1); got != 8 {
		t.Fatalf("increment after the wake: %d, want 8", got)
	}
	sleepActor(t, e, aid)
	st.awaitNoneOpen(app, 3*within)
	t.Logf("%d /start requests in all", st.total)
}

// sleepActor asks actor aid to sleep and waits until the API shows it asleep.
func sleepActor(t *testing.T, e *harness.Engine, aid string) {
	t.Helper()
	if status, b := call(t, e, http.MethodPost, "/actors/"+aid+"/sleep?namespace=default", map[string]any{}); status != http.StatusOK {
		t.Fatalf("sleep: %d %s", status, b)
	}
	deadline := time.Now().Add(within)
	for !asleep(t, e, aid) {
		if time.Now().After(deadline) {
			t.Fatal("the actor did not sleep")
		}
		time.Sleep(20 * time.Millisecond) // polling interval: the API has no change feed
	}
}
