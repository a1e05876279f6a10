package samples

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// registry is a registry with the metrics the sampler reads, as engine/metrics names them.
func registry() (*prometheus.Registry, *prometheus.GaugeVec, *prometheus.CounterVec, *prometheus.HistogramVec) {
	reg := prometheus.NewRegistry()
	actors := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: actorsGauge}, []string{"state"})
	trans := prometheus.NewCounterVec(prometheus.CounterOpts{Name: transitions}, []string{"kind"})
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: requestDuration, Buckets: []float64{0.001, 0.01, 0.1, 1}},
		[]string{"listener", "route"})
	reg.MustRegister(actors, trans, dur)
	return reg, actors, trans, dur
}

// Rates and percentiles cover the window since the previous sample; the first sample has
// neither; the ring keeps the newest Keep samples, oldest first; hosts come from the callback.
func TestSamples(t *testing.T) {
	ctx := context.Background()
	reg, actors, trans, dur := registry()
	hosts := map[string]Host{"r1": {Used: 1, Total: 4}}
	s := New(Options{Gatherer: reg, Keep: 3, Hosts: func(context.Context) (map[string]Host, error) { return hosts, nil }})
	t0 := time.UnixMilli(1_000_000)

	actors.WithLabelValues("running").Set(2)
	trans.WithLabelValues("created").Add(5)
	dur.WithLabelValues("api-public", "gateway").Observe(0.0005)
	if err := s.Take(ctx, t0); err != nil {
		t.Fatal(err)
	}
	first := s.Samples()
	if len(first) != 1 || first[0].Actors["running"] != 2 || first[0].CreatesPerSec != 0 || first[0].GatewayLatency != nil || first[0].Hosts["r1"].Used != 1 {
		t.Fatalf("first sample: %+v", first)
	}

	// 10 s later: 20 creates, 5 wakes, 100 gateway requests: 50 under 1 ms, 40 in 1–10 ms,
	// 10 in 10–100 ms; another route's requests do not count.
	trans.WithLabelValues("created").Add(20)
	trans.WithLabelValues("woken").Add(5)
	g := dur.WithLabelValues("api-public", "gateway")
	for i := range 100 {
		switch {
		case i < 50:
			g.Observe(0.0005)
		case i < 90:
			g.Observe(0.005)
		default:
			g.Observe(0.05)
		}
	}
	dur.WithLabelValues("api-public", "/actors").Observe(0.5)
	if err := s.Take(ctx, t0.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	got := s.Samples()[1]
	if got.CreatesPerSec != 2 || got.WakesPerSec != 0.5 {
		t.Errorf("rates: creates %v/s, wakes %v/s, want 2 and 0.5", got.CreatesPerSec, got.WakesPerSec)
	}
	l := got.GatewayLatency
	if l == nil || l.Count != 100 || l.P50 != 1 || l.P90 != 10 || l.P99 != 91 {
		t.Errorf("latency: %+v, want 100 requests, p50 1 ms, p90 10 ms, p99 91 ms", l)
	}

	// A window without gateway requests has no latency.
	if err := s.Take(ctx, t0.Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if l := s.Samples()[2].GatewayLatency; l != nil {
		t.Errorf("a quiet window has latency %+v", l)
	}

	// The ring keeps 3: the 4th and 5th replace the oldest.
	for i := 3; i < 5; i++ {
		if err := s.Take(ctx, t0.Add(time.Duration(i)*10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	all := s.Samples()
	if len(all) != 3 || all[0].Ts != t0.Add(20*time.Second).UnixMilli() || all[2].Ts != t0.Add(40*time.Second).UnixMilli() {
		t.Errorf("ring: %d samples from %d to %d", len(all), all[0].Ts, all[len(all)-1].Ts)
	}
}
