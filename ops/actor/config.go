package actor

import "math/rand/v2"

// Config holds the lifecycle timings (milliseconds, Rivet's names and defaults).
type Config struct {
	// RunnerEligibleThreshold: a runner not pinged for this long gets no new actor.
	RunnerEligibleThreshold int64
	// EnvoyEligibleThreshold: an envoy not pinged for this long gets no new actor.
	EnvoyEligibleThreshold int64
	// EnvoyLostThreshold: an actor whose envoy has not pinged for this long is lost (it
	// sleeps); a running actor on an envoy checks this every EnvoyLostThreshold.
	EnvoyLostThreshold int64
	// EnvoyPlacement is how envoys are chosen: ops/envoy.PlaceHashRing (the default) or
	// PlaceLoadBalancer.
	EnvoyPlacement string
	// ActorStartThreshold: an actor placed but not reported running after this long is lost.
	ActorStartThreshold int64
	// ActorStopThreshold: an actor told to stop but not reported stopped after this long is lost.
	ActorStopThreshold int64
	// BaseRetryTimeout, RetryResetDuration and RescheduleBackoffMaxExponent shape the crash
	// backoff: base·2^min(n, max) plus up to BackoffJitter.
	BaseRetryTimeout             int64
	RetryResetDuration           int64
	RescheduleBackoffMaxExponent int
	BackoffJitter                int64
	// WakePendingTimeout: a woken sleep-policy actor waits this long for capacity, then
	// sleeps again.
	WakePendingTimeout int64
	// HibernatingRequestEligibleThreshold: a hibernating WebSocket not kept alive for this
	// long is not restored at the actor's next start.
	HibernatingRequestEligibleThreshold int64
	// Jitter returns a random duration in [0, n); nil means math/rand.
	Jitter func(n int64) int64
}

// DefaultConfig returns Rivet's defaults.
func DefaultConfig() Config {
	return Config{
		RunnerEligibleThreshold:             10_000,
		EnvoyEligibleThreshold:              10_000,
		EnvoyLostThreshold:                  15_000,
		EnvoyPlacement:                      "hash_ring",
		ActorStartThreshold:                 30_000,
		ActorStopThreshold:                  1_800_000,
		BaseRetryTimeout:                    2_000,
		RetryResetDuration:                  600_000,
		RescheduleBackoffMaxExponent:        8,
		BackoffJitter:                       500,
		WakePendingTimeout:                  60_000,
		HibernatingRequestEligibleThreshold: 90_000,
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

// backoff is the wait before the n-th retry (n ≥ 1).
func (c Config) backoff(n uint32) int64 {
	exp := min(int(n)-1, c.RescheduleBackoffMaxExponent)
	return c.BaseRetryTimeout<<max(exp, 0) + c.jitter(c.BackoffJitter)
}
