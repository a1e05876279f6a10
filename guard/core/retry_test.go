package core

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/rerr"
)

func TestBackoff(t *testing.T) {
	want := []time.Duration{0, 0, 150, 300, 600, 1200, 2400, 4800}
	for n, w := range want {
		if got := DefaultPolicy.Backoff(n); got != w*time.Millisecond {
			t.Errorf("Backoff(%d) = %v, want %v", n, got, w*time.Millisecond)
		}
	}
	if got := (Policy{Initial: time.Millisecond}).Backoff(1000); got <= 0 {
		t.Errorf("Backoff(1000) = %v overflowed", got)
	}
}

func TestDo(t *testing.T) {
	var slept []time.Duration
	p := DefaultPolicy
	p.Sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	stale := func(int) error { return ErrStaleRoute }

	slept = nil
	err := p.Do(context.Background(), RetryableHTTP, stale)
	var ex *Exhausted
	if !errors.As(err, &ex) || ex.Attempts != 7 || !errors.Is(err, ErrStaleRoute) {
		t.Fatalf("all stale: %v", err)
	}
	if len(slept) != 6 || slept[0] != 150*time.Millisecond || slept[5] != 4800*time.Millisecond {
		t.Fatalf("waits %v", slept)
	}
	e := AttemptsExceeded(ex, "actor")
	if !rerr.Is(e, rerr.CodeGuardRetryAttemptsExceeded) || e.Status != 502 || e.Metadata["attempts"] != 7 ||
		e.Metadata["last_error_code"] != "runner.actor_not_found" || e.Metadata["last_status"] != 503 ||
		e.Metadata["last_target_kind"] != "actor" {
		t.Fatalf("exceeded: %+v", e)
	}

	// Success on the third attempt; the attempt number is passed.
	var seen []int
	err = p.Do(context.Background(), RetryableHTTP, func(n int) error {
		seen = append(seen, n)
		if n < 3 {
			return rerr.GuardTunnelResponseClosed("pre_request")
		}
		return nil
	})
	if err != nil || len(seen) != 3 || seen[2] != 3 {
		t.Fatalf("third attempt: %v %v", err, seen)
	}

	// A non-retryable error ends at once.
	calls := 0
	nf := rerr.ActorNotFound("x")
	if err := p.Do(context.Background(), RetryableHTTP, func(int) error { calls++; return nf }); err != nf || calls != 1 {
		t.Fatalf("not retryable: %v after %d calls", err, calls)
	}

	// The context's end stops the waits.
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("client went away")
	p.Sleep = func(ctx context.Context, _ time.Duration) error { cancel(cause); return ctx.Err() }
	if err := p.Do(ctx, RetryableHTTP, stale); err != cause {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestClassifiers(t *testing.T) {
	for _, tc := range []struct {
		err      error
		http, ws bool
	}{
		{ErrStaleRoute, true, true},
		{rerr.GuardServiceUnavailable(), true, false},
		{rerr.GuardActorReadyTimeout("a1"), true, false},
		{rerr.GuardActorWakeRetriesExceeded(), true, false},
		{rerr.GuardActorStoppedWhileWaiting("x"), true, false},
		{rerr.GuardTunnelRequestAborted("x"), true, false},
		{rerr.GuardTunnelMessageTimeout("x"), true, false},
		{rerr.GuardTunnelResponseClosed("x"), true, false},
		{rerr.GuardGatewayResponseStartTimeout("x"), true, false},
		{rerr.GuardWebSocketServiceUnavailable(), false, true},
		{rerr.GuardRateLimit(), false, false},
		{rerr.ActorNotFound("a"), false, false},
		{errors.New("plain"), false, false},
	} {
		if got := RetryableHTTP(tc.err); got != tc.http {
			t.Errorf("RetryableHTTP(%v) = %v", tc.err, got)
		}
		if got := RetryableWebSocket(tc.err); got != tc.ws {
			t.Errorf("RetryableWebSocket(%v) = %v", tc.err, got)
		}
	}
	for _, tc := range []struct {
		status int
		header string
		want   bool
	}{
		{503, "guard.service_unavailable", true},
		{504, "guard.gateway_response_start_timeout", true},
		{503, "guard.rate_limit", false},
		{502, "guard.service_unavailable", false},
		{503, "runner.actor_not_found", false},
		{503, "", false},
		{503, "guard", false},
	} {
		if got := RetryableResponse(tc.status, tc.header); got != tc.want {
			t.Errorf("RetryableResponse(%d, %q) = %v", tc.status, tc.header, got)
		}
	}
}

// An Unreplayable error ends Do at once, returned without its mark, even when the classifier
// would retry it.
func TestDoUnreplayable(t *testing.T) {
	p := DefaultPolicy
	p.Sleep = func(context.Context, time.Duration) error { return nil }
	calls := 0
	err := p.Do(context.Background(), RetryableHTTP, func(n int) error {
		calls++
		if n == 1 {
			return ErrStaleRoute // retried
		}
		return Unreplayable(ErrStaleRoute)
	})
	if err != ErrStaleRoute || calls != 2 {
		t.Fatalf("err %v after %d calls", err, calls)
	}
	if Unreplayable(nil) != nil {
		t.Fatal("Unreplayable(nil) is not nil")
	}
}
