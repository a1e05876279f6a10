package runnerload

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestFleet checks the load generator against a real engine with 20 runners: every runner
// registers and is listed by GET /runners under the id ToClientInit gave it, answers its
// pings, and the engine records each pong (last_ping_ts reaches the answered ping's ts);
// the pong transactions show in the engine's histogram; no socket drops.
func TestFleet(t *testing.T) {
	const n = 20
	raiseFDLimit(t, 256)
	e := startEngine(t, buildBerth(t, t.TempDir()), "")
	f := startFleet(fleetOptions{URL: e.wsURL(), N: n, Rate: 200, InitTimeout: 10 * time.Second})
	t.Cleanup(f.close)
	if _, err := f.waitRegistered(20 * time.Second); err != nil {
		t.Fatal(err)
	}

	// Every runner answers a ping (the engine pings every 3 s plus jitter).
	deadline := time.Now().Add(15 * time.Second)
	for !f.allPinged() {
		if time.Now().After(deadline) {
			t.Fatalf("not every runner was pinged after 15 s: %d pings, drops: %s", f.pings.Load(), f.reasonSummary())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The engine recorded those pongs.
	client := &http.Client{Timeout: 5 * time.Second}
	deadline = time.Now().Add(10 * time.Second)
	for {
		missing := f.unrecorded(t, client, e.publicURL())
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s the engine still lacks %s", missing)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The engine timed those pong transactions in its histogram.
	m, err := scrape(client, e.metricsURL())
	if err != nil {
		t.Fatal(err)
	}
	bs, ok := promBuckets(m, pingTxnMetric)
	if !ok {
		t.Fatalf("/metrics has no %s", pingTxnMetric)
	}
	if got := bs[len(bs)-1].Count; got < n {
		t.Errorf("%s_count = %g, want ≥ %d", pingTxnMetric, got, n)
	}
	if q := quantile(bs, 0.5); !(q > 0) {
		t.Errorf("ping txn p50 = %g s, want > 0", q)
	}

	if d, pe := f.dropped.Load(), f.pongErrs.Load(); d != 0 || pe != 0 {
		t.Errorf("%d sockets dropped, %d pong writes failed: %s", d, pe, f.reasonSummary())
	}
}

// allPinged reports whether every runner has answered at least one ping.
func (f *fleet) allPinged() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ts := range f.firstPng {
		if ts == 0 {
			return false
		}
	}
	return true
}

// unrecorded lists GET /runners and describes the first runner that is missing or whose
// last_ping_ts is older than the first ping it answered; "" when every runner is there.
func (f *fleet) unrecorded(t *testing.T, client *http.Client, publicURL string) string {
	t.Helper()
	resp, err := client.Get(publicURL + "/runners?namespace=default&limit=100")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Runners []struct {
			RunnerID   string `json:"runner_id"`
			Key        string `json:"key"`
			LastPingTs int64  `json:"last_ping_ts"`
		} `json:"runners"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /runners: %d (%v)", resp.StatusCode, err)
	}
	ping := map[string]int64{}
	for _, r := range page.Runners {
		ping[r.RunnerID] = r.LastPingTs
	}
	if len(page.Runners) != f.o.N {
		return fmt.Sprintf("all runners: GET /runners lists %d of %d", len(page.Runners), f.o.N)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, id := range f.runners {
		last, ok := ping[id]
		switch {
		case !ok:
			return fmt.Sprintf("runner %s (rl-%d) in GET /runners", id, i)
		case last < f.firstPng[i]:
			return fmt.Sprintf("the pong of runner %s: last_ping_ts %d < ping ts %d", id, last, f.firstPng[i])
		}
	}
	return ""
}
