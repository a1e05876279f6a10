package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHandlerServesObservations(t *testing.T) {
	m := New()
	m.RunnerPingTxn.Observe(0.002)
	Since(m.RunnerPingTxn, time.Now())
	m.RunnerSockets.Set(3)
	m.RunnerTransitions.WithLabelValues("expired").Inc()
	srv := httptest.NewServer(m.Handler(false))
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	for _, want := range []string{
		"berth_runner_ping_txn_seconds_count 2",
		"berth_runner_sockets 3",
		`berth_runner_transitions_total{kind="expired"} 1`,
		"go_goroutines",
		"process_resident_memory_bytes",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if res, err := srv.Client().Post(srv.URL+"/metrics", "text/plain", nil); err != nil || res.StatusCode != 405 {
		t.Errorf("POST /metrics = %v, %v; want 405", res, err)
	}
	if res, err := srv.Client().Get(srv.URL + "/debug/pprof/heap"); err != nil || res.StatusCode != 404 {
		t.Errorf("GET /debug/pprof/heap without pprof = %v, %v; want 404", res, err)
	}
}

func TestHandlerServesProfilesWhenAsked(t *testing.T) {
	srv := httptest.NewServer(New().Handler(true))
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.Contains(string(b), "heap profile") {
		t.Errorf("GET /debug/pprof/heap = %d %.80q; want 200 with a heap profile", res.StatusCode, b)
	}
}
