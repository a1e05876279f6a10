// Package runnertest is test support for package runner, as net/http/httptest is for
// net/http: a Recorder of a runner's hooks, a Probe actor that reports its calls, configs with
// test timings, and helpers that start a runner and shut it down when the test ends.
//
// It serves the tests of package runner and the engine's tests of the SDK against a real
// engine (in the engine's module, which must not be a dependency of this one), and any
// program's tests of its own runner. Nothing here is meant for production code.
package runnertest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/berthhq/berth/sdk/runner"
)

// Wait bounds every wait of these helpers: generous, so a loaded machine never fails a test,
// while a real hang still does.
const Wait = 20 * time.Second

// Logger discards logs unless RUNNER_TEST_LOG is set, then logs at debug level to stderr.
func Logger() *slog.Logger {
	if os.Getenv("RUNNER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Next receives from ch, failing the test after Wait.
func Next[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(Wait):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// None checks that nothing has been received on ch.
func None[T any](t testing.TB, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("unexpected %s: %v", what, v)
	default:
	}
}

// Config is a valid config with test timings (reconnects within milliseconds) for the runner
// "pool", version 3, 8 slots, in the namespace "default". With rec, its hooks are rec's.
func Config(endpoint string, rec *Recorder) runner.Config {
	cfg := runner.Config{
		Endpoint:       endpoint,
		Namespace:      "default",
		Name:           "pool",
		Version:        3,
		TotalSlots:     8,
		Logger:         Logger(),
		BackoffInitial: 5 * time.Millisecond,
		BackoffMax:     50 * time.Millisecond,
	}
	if rec != nil {
		cfg.Hooks = rec.Hooks()
	}
	return cfg
}

// NewRunner makes a runner that the test's cleanup shuts down (immediately) and waits for.
func NewRunner(t testing.TB, cfg runner.Config) *runner.Runner {
	t.Helper()
	r, err := runner.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Wait)
		defer cancel()
		if err := r.Shutdown(ctx, true); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		select {
		case <-r.Done():
		case <-time.After(Wait):
			t.Errorf("runner not done %s after Shutdown", Wait)
		}
	})
	return r
}

// Start starts r, failing the test if it has not connected within Wait.
func Start(t testing.TB, r *runner.Runner) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
}
