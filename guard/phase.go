package guard

import (
	"context"
	"time"

	"github.com/berthhq/berth/pkg/rerr"
)

// A phase of route resolution bounded on its own, as in Rivet (docs/gateway.md, "Timeouts"): when
// its bound ends it, the request fails with the phase's own error, carrying elapsed_ms and
// timeout_ms, rather than with whatever the interrupted call returned.
type phase struct {
	group, code string
	timeout     time.Duration
}

// The phases and their default bounds.
var (
	phaseResolveQuery = phase{"pegboard", "route_resolve_query_timeout", 15 * time.Second}
	phaseFetchActor   = phase{"pegboard", "route_fetch_actor_timeout", 5 * time.Second}
	phaseWakeSignal   = phase{"pegboard", "route_wake_signal_timeout", 5 * time.Second}
)

// errPhaseTimeout is the cause of a phase's context that its bound ended.
type errPhaseTimeout struct{ p *phase }

func (e errPhaseTimeout) Error() string { return e.p.group + "." + e.p.code }

// run calls f with ctx bounded by the phase's timeout (d, if positive, instead).
func (p phase) run(ctx context.Context, d time.Duration, f func(ctx context.Context) error) error {
	if d <= 0 {
		d = p.timeout
	}
	start := time.Now()
	cause := errPhaseTimeout{&p}
	pctx, cancel := context.WithTimeoutCause(ctx, d, cause)
	defer cancel()
	err := f(pctx)
	if err != nil && pctx.Err() != nil && context.Cause(pctx) == error(cause) {
		return rerr.New(p.group, p.code, "elapsed_ms", time.Since(start).Milliseconds(), "timeout_ms", d.Milliseconds())
	}
	return err
}
