package actor

import (
	"math/rand/v2"
	"time"

	"github.com/berthhq/berth/pkg/id"
)

// Config holds the lifecycle timings (Rivet's names and defaults). The lifecycle works on
// millisecond timestamps, so each is used at millisecond precision.
type Config struct {
	// RunnerEligibleThreshold: a runner not pinged for this long gets no new actor.
	RunnerEligibleThreshold time.Duration
	// EnvoyEligibleThreshold: an envoy not pinged for this long gets no new actor.
	EnvoyEligibleThreshold time.Duration
	// EnvoyLostThreshold: an actor whose envoy has not pinged for this long is lost (it
	// sleeps); a running actor on an envoy checks this every EnvoyLostThreshold.
	EnvoyLostThreshold time.Duration
	// EnvoyPlacement is how envoys are chosen: ops/envoy.PlaceHashRing (the default) or
	// PlaceLoadBalancer.
	EnvoyPlacement string
	// ActorStartThreshold: an actor placed but not reported running after this long is lost.
	ActorStartThreshold time.Duration
	// ActorStopThreshold: an actor told to stop but not reported stopped after this long is lost.
	ActorStopThreshold time.Duration
	// BaseRetryTimeout, RetryResetDuration and RescheduleBackoffMaxExponent shape the crash
	// backoff: base·2^min(n, max) plus up to BackoffJitter.
	BaseRetryTimeout             time.Duration
	RetryResetDuration           time.Duration
	RescheduleBackoffMaxExponent int
	BackoffJitter                time.Duration
	// ActorRetryDurationThreshold: an actor refused by its serverless pool's
	// max_concurrent_actors is retried until this long after the first refusal, then sleeps.
	ActorRetryDurationThreshold time.Duration
	// WakePendingTimeout: a woken sleep-policy actor waits this long for capacity, then
	// sleeps again.
	WakePendingTimeout time.Duration
	// HibernatingRequestEligibleThreshold: a hibernating WebSocket not kept alive for this
	// long is not restored at the actor's next start.
	HibernatingRequestEligibleThreshold time.Duration
	// Here reports whether host h's socket is on this node; nil means none is. Placement
	// prefers runners held here (placementOrder).
	Here func(h Host) bool
	// Jitter returns a random number of milliseconds in [0, n); nil means math/rand.
	Jitter func(n int64) int64
}

// DefaultConfig returns Rivet's defaults.
func DefaultConfig() Config {
	return Config{
		RunnerEligibleThreshold:             10 * time.Second,
		EnvoyEligibleThreshold:              10 * time.Second,
		EnvoyLostThreshold:                  15 * time.Second,
		EnvoyPlacement:                      "hash_ring",
		ActorStartThreshold:                 30 * time.Second,
		ActorStopThreshold:                  30 * time.Minute,
		BaseRetryTimeout:                    2 * time.Second,
		RetryResetDuration:                  10 * time.Minute,
		RescheduleBackoffMaxExponent:        8,
		BackoffJitter:                       500 * time.Millisecond,
		ActorRetryDurationThreshold:         5 * time.Minute,
		WakePendingTimeout:                  time.Minute,
		HibernatingRequestEligibleThreshold: 90 * time.Second,
	}
}

func (c Config) jitter(n int64) int64 {
	if n <= 0 {
		return 0
	}
	if c.Jitter != nil {
		return c.Jitter(n)
	}
	return rand.Int64N(n)
}

// runnerHere reports whether runner rid's socket is on this node.
func (c Config) runnerHere(rid id.ID) bool { return c.Here != nil && c.Here(RunnerHost(rid)) }

// backoff is the wait before the n-th retry (n ≥ 1), in milliseconds.
func (c Config) backoff(n uint32) int64 {
	exp := min(int(n)-1, c.RescheduleBackoffMaxExponent)
	return c.BaseRetryTimeout.Milliseconds()<<max(exp, 0) + c.jitter(c.BackoffJitter.Milliseconds())
}
