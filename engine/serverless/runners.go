package serverless

import (
	"math/rand/v2"
	"time"

	"github.com/berthhq/berth/engine/hostsock"
	"github.com/berthhq/berth/keys"
)

// Runner pools (rivetkit 2.2.1): the engine keeps GET {url}/start requests open, each
// starting one runner (docs/serverless.md § 5). This file holds the arithmetic.

// Runner-pool timings (docs/serverless.md §§ 5.3, 5.4).
const (
	// DefaultRunnerDrainGrace is how long before the end of its request a runner is
	// drained (pegboard.serverless_drain_grace_period_ms); its runner is told it at init.
	DefaultRunnerDrainGrace = hostsock.DefaultServerlessDrainGrace
	runnerRetryBase         = 2 * time.Second
	runnerRetryJitter       = 500 * time.Millisecond
	runnerRetryReset        = 10 * time.Minute
	// endedPause spaces the requests of an endpoint whose streams end at once: they are not
	// backed off (as on the reference), but not made in a busy loop either.
	endedPause = 100 * time.Millisecond
)

// DesiredRunners is how many /start requests pool cfg keeps open for slots desired slots:
// min(max(runners_margin + ⌈slots / slots_per_runner⌉, min_runners), max_runners).
func DesiredRunners(cfg keys.ServerlessRunnerConfig, slots uint64) uint64 {
	per := uint64(max(cfg.SlotsPerRunner, 1))
	n := uint64(cfg.RunnersMargin) + (slots+per-1)/per
	return min(max(n, uint64(cfg.MinRunners)), uint64(cfg.MaxRunners))
}

// MaxDesiredSlots is the most slots worth counting for cfg: more change nothing.
func MaxDesiredSlots(cfg keys.ServerlessRunnerConfig) uint64 {
	return uint64(cfg.MaxRunners) * uint64(max(cfg.SlotsPerRunner, 1))
}

// RunnerRetryDelay is the wait before the next request after failures consecutive failed
// ones (failures ≥ 1): 2 s for the first two, then doubling (2 s · 2^(failures−2), the
// exponent capped at 8), plus up to 0.5 s of jitter.
func RunnerRetryDelay(failures int) time.Duration {
	exp := min(max(failures-2, 0), maxBackoffExponent)
	return runnerRetryBase<<exp + rand.N(runnerRetryJitter)
}

// drainAfter is when, from its start, a runner's request drains it: grace before its
// lifespan ends, and at least half the lifespan in (a grace as long as the lifespan would
// drain every runner as it starts).
func drainAfter(lifespan, grace time.Duration) time.Duration {
	return max(lifespan-grace, lifespan/2)
}
