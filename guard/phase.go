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
	err     func(elapsedMS, timeoutMS int64) *rerr.Error // the phase's error constructor
	timeout time.Duration
}

// The phases and their default bounds.
var (
	phaseResolveQuery = phase{rerr.PegboardRouteResolveQueryTimeout, 15 * time.Second}
	phaseFetchActor   = phase{rerr.PegboardRouteFetchActorTimeout, 5 * time.Second}
	phaseWakeSignal   = phase{rerr.PegboardRouteWakeSignalTimeout, 5 * time.Second}
)

// errPhaseTimeout is the cause of a phase's context that its bound ended.
type errPhaseTimeout struct{ p *phase }

func (e errPhaseTimeout) Error() string { return e.p.err(0, 0).Key() }

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
		return p.err(time.Since(start).Milliseconds(), d.Milliseconds())
	}
	return err
}
