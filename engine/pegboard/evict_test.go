package pegboard

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
)

// The pause between evictions is min(1/rate, period/n), none without a period (Rivet's
// defaults send every eviction at once).
func TestEvictionInterval(t *testing.T) {
	for _, tc := range []struct {
		n      int
		period uint32
		rate   float32
		want   time.Duration
	}{
		{n: 10, period: 0, rate: 1, want: 0},
		{n: 0, period: 10, rate: 1, want: 0},
		{n: 4, period: 2, rate: 1, want: 500 * time.Millisecond}, // period/n
		{n: 2, period: 10, rate: 1, want: time.Second},           // 1/rate
		{n: 2, period: 10, rate: 0, want: 5 * time.Second},       // no rate: period/n
		{n: 3, period: 30, rate: 0.5, want: 2 * time.Second},     // 1/rate below period/n
		{n: 100, period: 1, rate: 1000, want: time.Millisecond},  // 1/rate
		{n: 1000, period: 1, rate: 10, want: time.Millisecond},   // period/n
	} {
		c := keys.RunnerConfigCommon{ActorEvictionPeriod: tc.period, ActorEvictionRate: tc.rate}
		if got := evictionInterval(tc.n, c); got != tc.want {
			t.Errorf("n=%d period=%d rate=%v: %v, want %v", tc.n, tc.period, tc.rate, got, tc.want)
		}
	}
}

// One eviction per envoy at a time: asked for twice (a second ToRivetStopping), it runs
// once; asked for before Run, it runs when Run starts; after it ends it may run again.
func TestEvictionsOncePerEnvoy(t *testing.T) {
	var e evictions
	h := actor.EnvoyHost(id.New(1), "envoy-a")
	var runs atomic.Int32
	release := make(chan struct{})
	f := func(context.Context) { runs.Add(1); <-release }
	e.start(h, f)
	e.start(h, f)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.run(ctx) }()
	e.start(h, f)
	close(release)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		e.mu.Lock()
		idle := !e.active[h]
		e.mu.Unlock()
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("eviction did not end")
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("%d runs, want 1", n)
	}
	e.start(h, f)
	cancel()
	<-done
	if n := runs.Load(); n > 2 {
		t.Fatalf("%d runs, want at most 2", n)
	}
}
