package engine

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestShutdownSettingsFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env      []string
		releases int
		drain    time.Duration
		err      string
	}{
		{env: nil, releases: 128, drain: 25 * time.Second},
		{env: []string{"PATH=/bin", "BERTH_RELEASES=4", "BERTH_SHUTDOWN_DRAIN_MS=1500"}, releases: 4, drain: 1500 * time.Millisecond},
		{env: []string{"BERTH_RELEASES=0"}, err: "BERTH_RELEASES must be greater than zero, not 0"},
		{env: []string{"BERTH_RELEASES="}, err: `BERTH_RELEASES has invalid value ""`},
		{env: []string{"BERTH_SHUTDOWN_DRAIN_MS=-5"}, err: `BERTH_SHUTDOWN_DRAIN_MS has invalid value "-5"`},
		{env: []string{"BERTH_SHUTDOWN_DRAIN_MS=25s"}, err: `BERTH_SHUTDOWN_DRAIN_MS has invalid value "25s"`},
		{env: []string{"BERTH_RELEASES= 8"}, err: `BERTH_RELEASES has invalid value " 8"`},
		{env: []string{"BERTH_RELEASES=99999999999"}, err: `BERTH_RELEASES has invalid value "99999999999"`},
	} {
		s, err := ShutdownSettingsFromEnv(tc.env)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.env, err, tc.err)
			}
			continue
		}
		if err != nil || s.Releases != tc.releases || s.DrainTimeout != tc.drain {
			t.Errorf("%q: %+v %v, want %d releases, %v", tc.env, s, err, tc.releases, tc.drain)
		}
	}
}

// TestDrainRefusesAndReports: POST /shutdown wants the admin token and POST, answers
// {"ok":true} and hands the mode to Run; a drain turns health 503 at once and answers every
// other request 503 with Retry-After: 1 and Connection: close; an idle node drains at once,
// holding nothing.
func TestDrainRefusesAndReports(t *testing.T) {
	e := startEngine(t, testConfig("tok"))
	client := &http.Client{Timeout: 10 * time.Second}
	if r := callMethod(t, client, http.MethodPost, e.PeerAddr(), "/shutdown", ""); r.status != http.StatusUnauthorized {
		t.Fatalf("POST /shutdown without token: %d %s", r.status, r.body)
	}
	if r := callMethod(t, client, http.MethodGet, e.PeerAddr(), "/shutdown", "tok"); r.status != http.StatusMethodNotAllowed {
		t.Fatalf("GET /shutdown: %d %s", r.status, r.body)
	}
	if r := call(t, client, e.PublicAddr(), "/health/ready", ""); r.status != http.StatusOK {
		t.Fatalf("/health/ready before the drain: %d %s", r.status, r.body)
	}
	r := callMethod(t, client, http.MethodPost, e.PeerAddr(), "/shutdown?x=1&handoff=preserve", "tok")
	if r.status != http.StatusOK || !strings.Contains(r.body, `"ok":true`) {
		t.Fatalf("POST /shutdown: %d %s", r.status, r.body)
	}
	select {
	case m := <-e.shutdownReq:
		if m != Preserve {
			t.Fatalf("mode %v, want preserve", m)
		}
	default:
		t.Fatal("POST /shutdown did not ask for a drain")
	}
	st := e.Drain(Handoff)
	if st.TimedOut || st.Held != 0 || st.Sockets != 0 || st.Releasing != 0 {
		t.Fatalf("idle drain: %+v", st)
	}
	for _, p := range []string{"/health", "/health/ready"} {
		if r := call(t, client, e.PublicAddr(), p, ""); r.status != http.StatusServiceUnavailable {
			t.Errorf("%s while draining: %d %s", p, r.status, r.body)
		}
	}
	resp, err := client.Get("http://" + e.PublicAddr().String() + "/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// net/http moves "Connection: close" into resp.Close.
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !resp.Close {
		t.Errorf("request while draining: %d %v close=%v", resp.StatusCode, resp.Header, resp.Close)
	}
}
