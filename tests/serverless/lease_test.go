package serverless

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/tests/internal/harness"
)

// Two engine nodes on one PostgreSQL store and one NATS bus: only the node holding a runner
// pool's lease makes its /start requests, so min_runners: 2 makes two requests, not four;
// when that node dies, the other takes the pool over once the lease expires.
func TestRunnerPoolLeaseOneNode(t *testing.T) {
	needApps(t)
	base := os.Getenv("BERTH_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("BERTH_TEST_POSTGRES_URL is not set: no PostgreSQL server (`source .ci/postgres.sh` starts one)")
	}
	db, bus := harness.SharedStore(t, base), harness.StartNATS(t)
	node := func(id string) *harness.Engine {
		return startRunnerEngine(t, func(cfg map[string]any) {
			cfg["database"] = map[string]any{"url": db}
			cfg["pubsub"] = map[string]any{"url": bus}
			cfg["node"] = map[string]any{"id": id}
		})
	}
	nodes := map[string]*harness.Engine{"n1": node("n1"), "n2": node("n2")}
	fake, proc := startApp(t, "fake", harness.NPMDir, "serverless-fake.mjs", "FAKE_ENVOY_PROTOCOL=none", "FAKE_START=init")
	putRunnerPool(t, nodes["n1"], "pair", fake, map[string]any{"min_runners": 2})

	st := newStarts()
	// caller is the node whose public URL a /start names as its x-rivet-endpoint.
	caller := func(ev harness.Event) string {
		var req struct {
			Headers map[string]string `json:"headers"`
		}
		_ = json.Unmarshal([]byte(ev.Line), &req)
		for id, e := range nodes {
			if req.Headers["x-rivet-endpoint"] == e.URL+"/" {
				return id
			}
		}
		t.Fatalf("a /start from no node: %s", ev.Line)
		return ""
	}
	first := []harness.Event{st.awaitStart(proc, within), st.awaitStart(proc, within)}
	holder := caller(first[0])
	if c := caller(first[1]); c != holder {
		t.Fatalf("the first two /start came from %s and %s", holder, c)
	}
	// The next ones are the replacements at the drain point, from the same node: not a
	// second node's pair.
	next := st.awaitStart(proc, 2*runnerLifespan*time.Second)
	if d := next.At.Sub(first[0].At); d < (runnerLifespan*time.Second-runnerGraceMs*time.Millisecond)/2 || caller(next) != holder {
		t.Fatalf("a third /start %v after the first, from %s (holder %s), want the holder's replacement", d, caller(next), holder)
	}
	st.awaitStart(proc, within)

	// The holder dies: the other node takes over within the lease's 10 s and keeps two open.
	other := "n1"
	if holder == "n1" {
		other = "n2"
	}
	nodes[holder].Kill()
	for {
		ev := st.awaitStart(proc, 3*within)
		if caller(ev) == other {
			break
		}
	}
	if !strings.Contains(string(nodes[other].Log()), `msg="serverless scaler: pool lease" pool=pair held=true`) {
		t.Errorf("%s's log does not show it took the lease", other)
	}
}
