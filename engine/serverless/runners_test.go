package serverless

import (
	"testing"
	"time"

	"github.com/berthhq/berth/keys"
)

func TestDesiredRunners(t *testing.T) {
	for _, c := range []struct {
		slotsPer, min, max, margin uint32
		slots, want                uint64
	}{
		{1, 0, 1000, 0, 0, 0}, // no demand, no runner
		{1, 1, 1000, 0, 0, 1}, // min_runners keeps one
		{1, 0, 1000, 0, 3, 3}, // one runner per slot
		{2, 0, 1000, 1, 3, 3}, // margin 1 + ⌈3/2⌉ (observed on the reference)
		{1, 0, 2, 1, 5, 2},    // capped by max_runners (observed)
		{2, 0, 10, 1, 5, 4},   // margin 1 + ⌈5/2⌉ (observed)
		{1, 5, 2, 0, 0, 2},    // min above max: max wins
		{0, 0, 10, 0, 3, 3},   // slots_per_runner 0 (refused on write) counts as 1
		{4, 0, 1000, 0, 4, 1}, // a full runner
		{4, 0, 1000, 0, 5, 2}, // one slot more
		{1, 0, 0, 3, 10, 0},   // max_runners 0
		{1, 0, 1000, 0, 1 << 40, 1000},
	} {
		cfg := keys.ServerlessRunnerConfig{SlotsPerRunner: c.slotsPer, MinRunners: c.min, MaxRunners: c.max, RunnersMargin: c.margin}
		if got := DesiredRunners(cfg, c.slots); got != c.want {
			t.Errorf("DesiredRunners(%+v, %d) = %d, want %d", c, c.slots, got, c.want)
		}
	}
}

func TestRunnerRetryDelay(t *testing.T) {
	for failures, base := range map[int]time.Duration{1: 2 * time.Second, 2: 2 * time.Second, 3: 4 * time.Second,
		4: 8 * time.Second, 10: 512 * time.Second, 50: 512 * time.Second} {
		for range 20 {
			if d := RunnerRetryDelay(failures); d < base || d >= base+runnerRetryJitter {
				t.Fatalf("RunnerRetryDelay(%d) = %v, want %v plus under 0.5 s", failures, d, base)
			}
		}
	}
}

func TestDrainAfter(t *testing.T) {
	for _, c := range []struct{ lifespan, grace, want time.Duration }{
		{30 * time.Second, 10 * time.Second, 20 * time.Second},
		{3600 * time.Second, 10 * time.Second, 3590 * time.Second},
		{10 * time.Second, 10 * time.Second, 5 * time.Second},
		{4 * time.Second, 10 * time.Second, 2 * time.Second},
	} {
		if got := drainAfter(c.lifespan, c.grace); got != c.want {
			t.Errorf("drainAfter(%v, %v) = %v, want %v", c.lifespan, c.grace, got, c.want)
		}
	}
}
