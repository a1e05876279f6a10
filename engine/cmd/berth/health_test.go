package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// berth health passes on 200 from /health/ready and fails on anything else, or no answer
// (an engine that drains answers 503, which a real one does only for a moment).
func TestHealthReady(t *testing.T) {
	var status atomic.Int32
	status.Store(200)
	var paths atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metadata" {
			_, _ = w.Write([]byte(`{"runtime":"engine","version":"test"}`))
			return
		}
		paths.Store(r.URL.Path)
		code := int(status.Load())
		w.WriteHeader(code)
		if code == 200 {
			_, _ = w.Write([]byte(`{"status":"ok"}`))
		} else {
			_, _ = w.Write([]byte(`{"status":"draining"}`))
		}
	}))
	defer srv.Close()

	r := berth(t, nil, "health", "--endpoint", srv.URL)
	if r.code != exitOK || !strings.HasPrefix(r.out, "ok: engine test ") {
		t.Fatalf("ready engine: exit %d, out %q, err %q", r.code, r.out, r.err)
	}
	if p, _ := paths.Load().(string); p != "/health/ready" {
		t.Fatalf("asked %q, want /health/ready", p)
	}
	// The environment names the engine when the flag does not.
	if r := berth(t, []string{envEndpoint + "=" + srv.URL}, "health"); r.code != exitOK {
		t.Fatalf("endpoint from %s: exit %d, err %q", envEndpoint, r.code, r.err)
	}

	status.Store(503)
	r = berth(t, nil, "health", "--endpoint", srv.URL)
	if r.code != exitError || !strings.Contains(r.err, "503") || !strings.Contains(r.err, "draining") {
		t.Fatalf("draining engine: exit %d, err %q; want 1 naming 503 and the body", r.code, r.err)
	}

	srv.Close()
	if r := berth(t, nil, "health", "--endpoint", srv.URL, "--timeout", "2s"); r.code != exitError {
		t.Fatalf("no engine: exit %d, want %d", r.code, exitError)
	}
	if r := berth(t, nil, "health", "extra"); r.code != exitUsage {
		t.Fatalf("extra argument: exit %d, want %d", r.code, exitUsage)
	}
}
