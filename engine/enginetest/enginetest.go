// Package enginetest starts a whole engine in process for tests outside package engine: on
// loopback ports the system chooses, with an in-memory store, shut down when the test ends.
package enginetest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/berthhq/berth/engine"
	"github.com/berthhq/berth/engine/config"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded" // mem://
)

// shutdownWithin bounds the engine's shutdown at the end of a test: generous, so that a
// loaded machine never fails one.
const shutdownWithin = 30 * time.Second

// Start starts an engine with the default configuration on 127.0.0.1 (guard, api-peer and
// metrics on free ports) and the store mem://, changed by each of set in order, logging to
// log. The test's cleanup shuts it down and fails the test if that fails.
func Start(tb testing.TB, log *slog.Logger, set ...func(*config.Config)) *engine.Engine {
	tb.Helper()
	cfg := config.Default()
	cfg.Database.URL = "mem://"
	cfg.Guard.Host, cfg.Guard.Port = "127.0.0.1", 0
	cfg.APIPeer.Host, cfg.APIPeer.Port = "127.0.0.1", 0
	cfg.Metrics.Host, cfg.Metrics.Port = "127.0.0.1", 0
	for _, f := range set {
		f(cfg)
	}
	e, err := engine.Start(context.Background(), engine.Options{Config: cfg, Log: log})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownWithin)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			tb.Errorf("engine Shutdown: %v", err)
		}
	})
	return e
}

// AdminToken sets the engine's admin token ("" for none).
func AdminToken(token string) func(*config.Config) {
	return func(c *config.Config) { c.Auth.AdminToken = token }
}

// URL is the engine's public URL (http://127.0.0.1:PORT).
func URL(e *engine.Engine) string { return "http://" + e.PublicAddr().String() }
