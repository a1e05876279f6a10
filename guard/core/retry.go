package core

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/berthhq/berth/pkg/rerr"
)

// Policy is a retry schedule: at most MaxAttempts attempts, waiting Initial·2^(n−2) before
// attempt n (n ≥ 2), as Rivet's guard-core does (150, 300, 600 … ms).
type Policy struct {
	MaxAttempts int
	Initial     time.Duration
	// Sleep waits d or until ctx ends; nil means a timer. Tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// DefaultPolicy is Rivet's: 7 attempts, 150 ms initial backoff.
var DefaultPolicy = Policy{MaxAttempts: 7, Initial: 150 * time.Millisecond}

// Backoff is the wait before attempt n; zero for the first.
func (p Policy) Backoff(n int) time.Duration {
	if n < 2 {
		return 0
	}
	shift := min(n-2, 30) // bounded: a misconfigured MaxAttempts cannot overflow
	return p.Initial << shift
}

// Exhausted is returned by Do when every attempt failed with a retryable error.
type Exhausted struct {
	Attempts int
	Last     error
}

func (e *Exhausted) Error() string {
	return fmt.Sprintf("guard: %d attempts failed, last: %v", e.Attempts, e.Last)
}

func (e *Exhausted) Unwrap() error { return e.Last }

// Do calls attempt with n = 1, 2, … until it succeeds, fails with an error retryable does
// not accept, or MaxAttempts calls failed (then *Exhausted). Between attempts it waits
// Backoff(n); if ctx ends meanwhile it returns ctx's cause. The attempt learns its number, so
// that the first one can use a cached route and the others re-resolve.
func (p Policy) Do(ctx context.Context, retryable func(error) bool, attempt func(n int) error) error {
	var last error
	for n := 1; n <= max(p.MaxAttempts, 1); n++ {
		if n > 1 {
			if err := p.sleep(ctx, p.Backoff(n)); err != nil {
				return context.Cause(ctx)
			}
		}
		last = attempt(n)
		var u unreplayable
		if errors.As(last, &u) {
			return u.err
		}
		if last == nil || !retryable(last) {
			return last
		}
	}
	return &Exhausted{Attempts: max(p.MaxAttempts, 1), Last: last}
}

func (p Policy) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Unreplayable marks an attempt's error after which the request cannot be sent again, so Do
// returns err (without the mark) at once, whatever the classifier says: a request whose
// streamed body was partly read from the client and sent to the target has nothing left to
// send a second time (etcd's at-most-once rule for requests that may have left).
func Unreplayable(err error) error {
	if err == nil {
		return nil
	}
	return unreplayable{err}
}

type unreplayable struct{ err error }

func (u unreplayable) Error() string { return u.err.Error() }
func (u unreplayable) Unwrap() error { return u.err }

// ErrRequestBodyCancelled is what a tunnel returns for a request-body chunk once the target
// said it wants no more of the body (envoy v8 ToRivetRequestBodyCancel); the response may
// still come.
var ErrRequestBodyCancelled = errors.New("guard: the target cancelled the request body")

// ErrStaleRoute means the route's target answered that it does not serve the request (a
// runner's 503 runner.actor_not_found, or a refused WebSocket open): the route went stale,
// and a retry that resolves it again may succeed.
var ErrStaleRoute = errors.New("guard: the route's target does not serve it (stale route)")

// retryableGuardCodes are the guard codes whose 503/504 a retry may cure: the target was not
// reached or dropped the request before answering (guard-core's is_retryable_guard_http_error).
var retryableGuardCodes = map[rerr.Code]bool{
	rerr.CodeGuardServiceUnavailable:          true,
	rerr.CodeGuardActorReadyTimeout:           true,
	rerr.CodeGuardActorWakeRetriesExceeded:    true,
	rerr.CodeGuardActorStoppedWhileWaiting:    true,
	rerr.CodeGuardTunnelRequestAborted:        true,
	rerr.CodeGuardTunnelMessageTimeout:        true,
	rerr.CodeGuardTunnelResponseClosed:        true,
	rerr.CodeGuardGatewayResponseStartTimeout: true,
}

// RetryableResponse reports whether an upstream answer with this status and x-rivet-error
// header may be retried: 503 or 504 with guard.<retryable code>.
func RetryableResponse(status int, xRivetError string) bool {
	if status != http.StatusServiceUnavailable && status != http.StatusGatewayTimeout {
		return false
	}
	return retryableGuardCodes[rerr.ParseCode(xRivetError)]
}

// RetryableHTTP is the classifier of HTTP attempts: a stale route, or a guard error with a
// retryable code.
func RetryableHTTP(err error) bool {
	if errors.Is(err, ErrStaleRoute) {
		return true
	}
	return retryableGuardCodes[rerr.CodeOf(err)]
}

// RetryableWebSocket is the classifier of WebSocket opens: only a stale route or
// guard.websocket_service_unavailable (Rivet retries nothing else once the client is upgraded).
func RetryableWebSocket(err error) bool {
	if errors.Is(err, ErrStaleRoute) {
		return true
	}
	return rerr.Is(err, rerr.CodeGuardWebSocketServiceUnavailable)
}

// AttemptsExceeded is the error for an Exhausted HTTP request: 502
// guard.retry_attempts_exceeded with Rivet's metadata.
func AttemptsExceeded(ex *Exhausted, targetKind string) *rerr.Error {
	code, status := "", 0
	if e, ok := rerr.As(ex.Last); ok {
		code, status = e.Key(), e.Status
	} else if errors.Is(ex.Last, ErrStaleRoute) {
		code, status = rerr.CodeRunnerActorNotFound.Key(), http.StatusServiceUnavailable
	}
	return rerr.GuardRetryAttemptsExceeded(ex.Attempts, code, status, targetKind).WithCause(ex.Last)
}
