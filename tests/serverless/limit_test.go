package serverless

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/berthhq/berth/tests/internal/harness"
)

// With max_concurrent_actors 3, five actors created at once make three /start requests;
// the other two sleep with "concurrent_actor_limit_reached" and a reschedule_ts 4 s later
// (docs/serverless.md § 4.7). The fake endpoint starts no envoy, so the three placed actors
// are lost at the start threshold (3 s here), which frees their slots: the two retries
// then make their own /start.
func TestEnvoyPoolConcurrentActorLimit(t *testing.T) {
	needApps(t)
	e := startLoopbackEngineWith(t, func(_, pb map[string]any) { pb["actor_start_threshold"] = 3000 })
	fake, proc := startApp(t, "fake", harness.NPMDir, "serverless-fake.mjs")
	body := map[string]any{"datacenters": map[string]any{"default": map[string]any{
		"serverless": map[string]any{"url": fake, "request_lifespan": 3600, "max_concurrent_actors": 3}}}}
	if status, b := call(t, e, http.MethodPut, "/runner-configs/lim?namespace=default", body); status != 200 {
		t.Fatalf("PUT: %d %s", status, b)
	}
	var mu sync.Mutex
	var aids []string
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() {
			aid := createCounter(t, e, "lim", "c"+itoa(i))
			mu.Lock()
			aids = append(aids, aid)
			mu.Unlock()
		})
	}
	wg.Wait()
	isStart := func(ev harness.Event) bool { return strings.Contains(ev.Line, `"path":"/api/rivet/start"`) }
	for range 3 {
		proc.Await("a /start", within, isStart)
	}

	out := limitActors(t, e, aids)
	var limited []string
	for _, a := range out.Actors {
		if string(a.Error) != `"concurrent_actor_limit_reached"` {
			continue
		}
		limited = append(limited, a.ActorID)
		if a.SleepTs == nil || a.RescheduleTs == nil || *a.RescheduleTs-*a.SleepTs != 4000 {
			t.Errorf("limited actor %s: sleep_ts %v reschedule_ts %v, want a retry 4 s after its sleep", a.ActorID, a.SleepTs, a.RescheduleTs)
		}
	}
	if len(out.Actors) != 5 || len(limited) != 2 {
		t.Fatalf("after 5 creates with a limit of 3: %d actors, %d limited, want 5 and 2", len(out.Actors), len(limited))
	}

	// The three placed actors are lost at 3 s, freeing their slots; the retries at 4 s start.
	for range 2 {
		proc.Await("a retried actor's /start", within, isStart)
	}
	for _, a := range limitActors(t, e, limited).Actors {
		if string(a.Error) == `"concurrent_actor_limit_reached"` {
			t.Errorf("actor %s still refused after the slots freed: %+v", a.ActorID, a)
		}
	}
}

type actorList struct {
	Actors []struct {
		ActorID      string          `json:"actor_id"`
		SleepTs      *int64          `json:"sleep_ts"`
		RescheduleTs *int64          `json:"reschedule_ts"`
		Error        json.RawMessage `json:"error"`
	} `json:"actors"`
}

// limitActors reads actors aids through GET /actors.
func limitActors(t *testing.T, e *harness.Engine, aids []string) actorList {
	t.Helper()
	var out actorList
	e.GetJSON(t, "/actors?namespace=default&actor_ids="+strings.Join(aids, ","), &out)
	return out
}
