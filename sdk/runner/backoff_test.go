package runner

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		n      int
		jitter float64
		want   time.Duration
	}{
		{0, 0, 1 * s}, {1, 0, 2 * s}, {2, 0, 4 * s}, {3, 0, 8 * s}, {4, 0, 16 * s},
		{5, 0, 30 * s}, {6, 0, 30 * s}, {1000, 0, 30 * s}, // capped, no overflow
		{0, 0.5, 1125 * time.Millisecond}, // +12.5 %
		{4, 1, 20 * s},                    // the jitter's bound: +25 %
		{9, 1, 37500 * time.Millisecond},  // cap first, then jitter, as the reference client
	} {
		if got := backoff(tc.n, DefaultBackoffInitial, DefaultBackoffMax, tc.jitter); got != tc.want {
			t.Errorf("backoff(%d, jitter %v) = %v, want %v", tc.n, tc.jitter, got, tc.want)
		}
	}
	// Test timings: the same shape at any scale.
	if got := backoff(3, 5*time.Millisecond, 30*time.Millisecond, 0); got != 30*time.Millisecond {
		t.Errorf("scaled backoff = %v", got)
	}
	// Jitter in [0, 1) keeps every wait within [d, 1.25 d).
	for n := range 8 {
		lo := backoff(n, s, 30*s, 0)
		for _, j := range []float64{0.1, 0.5, 0.999} {
			if got := backoff(n, s, 30*s, j); got < lo || got >= lo+lo/4 {
				t.Errorf("backoff(%d, %v) = %v outside [%v, %v)", n, j, got, lo, lo+lo/4)
			}
		}
	}
}

func TestParseCloseReason(t *testing.T) {
	for _, tc := range []struct {
		reason            string
		group, code, ray  string
		evicted, retrying bool
	}{
		{"ws.eviction#abc", "ws", "eviction", "abc", true, false},
		{"ws.going_away#r", "ws", "going_away", "r", false, true},
		{"pegboard.runner_shutdown", "pegboard", "runner_shutdown", "", false, true},
		{"", "", "", "", false, true},
		{"Actor not found", "", "", "", false, true},
		{"noDot#x", "", "", "", false, true},
	} {
		e := parseCloseReason(1011, tc.reason)
		if e.Group != tc.group || e.Code != tc.code || e.RayID != tc.ray || e.Evicted() != tc.evicted || e.Retryable() != tc.retrying {
			t.Errorf("parseCloseReason(%q) = %+v", tc.reason, e)
		}
		if (e.Unwrap() == nil) != (tc.group == "") {
			t.Errorf("Unwrap of %q = %v", tc.reason, e.Unwrap())
		}
	}
}
