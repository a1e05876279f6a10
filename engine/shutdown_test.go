package engine

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

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
