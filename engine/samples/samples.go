package samples

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Defaults: a sample every 5 s for the last hour.
const (
	DefaultInterval = 5 * time.Second
	DefaultKeep     = 720
)

// Metric names the sampler reads.
const (
	actorsGauge     = "berth_actors"
	transitions     = "berth_actor_transitions_total"
	requestDuration = "berth_http_request_duration_seconds"
)

// Host is one runner's or envoy's slots at a sample: Used of Total for a runner; for an
// envoy, which has no slot bound, Used is its actors and Total 0.
type Host struct {
	Used  int64 `json:"used"`
	Total int64 `json:"total"`
}

// HostsFunc reads the slots of the hosts to follow, by host id (a runner id, or
// "<namespace id>/<envoy key>"), at most a bounded number of them.
type HostsFunc func(ctx context.Context) (map[string]Host, error)

// Options configures a Sampler.
type Options struct {
	Gatherer prometheus.Gatherer
	// Hosts, when set, is read at each sample for the hosts' slots.
	Hosts    HostsFunc
	Interval time.Duration // DefaultInterval when 0
	Keep     int           // DefaultKeep when 0: the ring's size
	Log      *slog.Logger
}

// Latency is a window's gateway latency percentiles, in milliseconds.
type Latency struct {
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Count uint64  `json:"count"`
}

// Sample is the node's metrics at Ts (Unix milliseconds); rates and latencies cover the
// time since the sample before (none for the first).
type Sample struct {
	Ts            int64              `json:"ts"`
	Actors        map[string]float64 `json:"actors"`
	CreatesPerSec float64            `json:"creates_per_sec"`
	WakesPerSec   float64            `json:"wakes_per_sec"`
	// GatewayLatency is nil when no gateway request finished in the window.
	GatewayLatency *Latency        `json:"gateway_latency_ms"`
	Hosts          map[string]Host `json:"hosts,omitempty"`
}

// counters is what a sample keeps of the cumulative metrics, to difference the next.
type counters struct {
	at              time.Time
	created, woken  float64
	latencyBuckets  []bucket
	latencyObserved uint64
}

type bucket struct {
	upper float64 // seconds
	count uint64  // cumulative
}

// Sampler keeps the ring of samples.
type Sampler struct {
	o Options

	mu   sync.Mutex
	ring []Sample // oldest first once full: ring[next:] then ring[:next]
	next int
	prev *counters
}

// New returns a sampler; Run takes the samples.
func New(o Options) *Sampler {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Keep <= 0 {
		o.Keep = DefaultKeep
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Sampler{o: o, ring: make([]Sample, 0, o.Keep)}
}

// Interval is the time between samples.
func (s *Sampler) Interval() time.Duration { return s.o.Interval }

// Run takes a sample every Interval until ctx ends.
func (s *Sampler) Run(ctx context.Context) {
	t := time.NewTicker(s.o.Interval)
	defer t.Stop()
	for {
		if err := s.Take(ctx, time.Now()); err != nil && ctx.Err() == nil {
			s.o.Log.Warn("samples: reading metrics failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Take reads the metrics now and adds a sample.
func (s *Sampler) Take(ctx context.Context, now time.Time) error {
	mfs, err := s.o.Gatherer.Gather()
	if err != nil {
		return err
	}
	smp := Sample{Ts: now.UnixMilli(), Actors: map[string]float64{}}
	cur := &counters{at: now}
	for _, mf := range mfs {
		switch mf.GetName() {
		case actorsGauge:
			for _, m := range mf.GetMetric() {
				smp.Actors[label(m, "state")] = m.GetGauge().GetValue()
			}
		case transitions:
			for _, m := range mf.GetMetric() {
				switch label(m, "kind") {
				case "created":
					cur.created = m.GetCounter().GetValue()
				case "woken":
					cur.woken = m.GetCounter().GetValue()
				}
			}
		case requestDuration:
			for _, m := range mf.GetMetric() {
				if label(m, "listener") == "api-public" && label(m, "route") == "gateway" {
					h := m.GetHistogram()
					cur.latencyObserved = h.GetSampleCount()
					for _, b := range h.GetBucket() {
						cur.latencyBuckets = append(cur.latencyBuckets, bucket{b.GetUpperBound(), b.GetCumulativeCount()})
					}
				}
			}
		}
	}
	if s.o.Hosts != nil {
		if smp.Hosts, err = s.o.Hosts(ctx); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.prev; p != nil {
		if secs := now.Sub(p.at).Seconds(); secs > 0 {
			smp.CreatesPerSec = max(0, cur.created-p.created) / secs
			smp.WakesPerSec = max(0, cur.woken-p.woken) / secs
		}
		smp.GatewayLatency = window(p, cur)
	}
	s.prev = cur
	if len(s.ring) < s.o.Keep {
		s.ring = append(s.ring, smp)
	} else {
		s.ring[s.next] = smp
		s.next = (s.next + 1) % s.o.Keep
	}
	return nil
}

// Samples returns the samples kept, oldest first.
func (s *Sampler) Samples() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(slices.Clone(s.ring[s.next:]), s.ring[:s.next]...)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// window is the latency percentiles of the requests observed between two samples, or nil
// when there were none (or the histogram was reset).
func window(prev, cur *counters) *Latency {
	n := cur.latencyObserved - prev.latencyObserved
	if cur.latencyObserved <= prev.latencyObserved || len(cur.latencyBuckets) == 0 {
		return nil
	}
	delta := make([]bucket, len(cur.latencyBuckets))
	for i, b := range cur.latencyBuckets {
		delta[i] = b
		if i < len(prev.latencyBuckets) && prev.latencyBuckets[i].upper == b.upper {
			delta[i].count -= min(b.count, prev.latencyBuckets[i].count)
		}
	}
	ms := func(q float64) float64 { return math.Round(quantile(q, delta, n)*1e6) / 1e3 }
	return &Latency{P50: ms(0.5), P90: ms(0.9), P99: ms(0.99), Count: n}
}

// quantile estimates the q-quantile of n observations from cumulative buckets, by linear
// interpolation inside the bucket it falls in (as Prometheus' histogram_quantile does);
// beyond the last finite bound it is that bound.
func quantile(q float64, buckets []bucket, n uint64) float64 {
	rank := q * float64(n)
	lower, below := 0.0, uint64(0)
	for _, b := range buckets {
		if float64(b.count) >= rank && b.count > below {
			if math.IsInf(b.upper, 1) {
				return lower
			}
			return lower + (b.upper-lower)*(rank-float64(below))/float64(b.count-below)
		}
		lower, below = b.upper, b.count
	}
	return lower
}
