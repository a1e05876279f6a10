package runnerload

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// bucket is one cumulative bucket of a Prometheus histogram: Count observations ≤ LE.
type bucket struct {
	LE    float64 // +Inf for the last
	Count float64
}

// promBuckets returns the cumulative buckets of histogram name from a scrape, sorted by
// upper bound; false when the scrape has none.
func promBuckets(samples map[string]float64, name string) ([]bucket, bool) {
	prefix := name + `_bucket{le="`
	var out []bucket
	for k, v := range samples {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		le, err := strconv.ParseFloat(strings.TrimSuffix(rest, `"}`), 64) // ParseFloat takes "+Inf"
		if err != nil {
			continue
		}
		out = append(out, bucket{LE: le, Count: v})
	}
	slices.SortFunc(out, func(a, b bucket) int { return cmpFloat(a.LE, b.LE) })
	return out, len(out) > 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// deltaBuckets returns end − start bucket by bucket: the observations made between two
// scrapes. Both come from the same histogram, so their bounds match.
func deltaBuckets(start, end []bucket) ([]bucket, error) {
	if len(start) != len(end) {
		return nil, fmt.Errorf("histogram changed shape: %d buckets, then %d", len(start), len(end))
	}
	out := make([]bucket, len(end))
	for i := range end {
		if start[i].LE != end[i].LE {
			return nil, fmt.Errorf("histogram bucket %d: le %g, then %g", i, start[i].LE, end[i].LE)
		}
		out[i] = bucket{LE: end[i].LE, Count: end[i].Count - start[i].Count}
	}
	return out, nil
}

// quantile estimates the q-quantile of cumulative buckets as Prometheus's
// histogram_quantile does: find the bucket holding rank q·total and interpolate linearly
// inside it (the first bucket starts at 0). A rank in the +Inf bucket gives the highest
// finite bound. NaN when there are no observations.
func quantile(bs []bucket, q float64) float64 {
	if len(bs) == 0 {
		return math.NaN()
	}
	total := bs[len(bs)-1].Count
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for i, b := range bs {
		if b.Count >= rank && b.Count > below {
			if math.IsInf(b.LE, 1) {
				if i == 0 {
					return math.NaN()
				}
				return bs[i-1].LE
			}
			return lower + (b.LE-lower)*(rank-below)/(b.Count-below)
		}
		lower, below = b.LE, b.Count
	}
	return bs[len(bs)-1].LE
}

// msHistogram counts durations in 1 ms buckets up to maxMs (and one overflow bucket), for
// the load generator's own view; safe for concurrent use.
type msHistogram struct {
	counts [maxMs + 2]atomic.Int64 // [i] counts durations in [i ms, i+1 ms); the last overflows
}

const maxMs = 10_000

func (h *msHistogram) observe(d time.Duration) {
	i := min(max(d.Milliseconds(), 0), maxMs+1)
	h.counts[i].Add(1)
}

// snapshot returns the counts as cumulative buckets (upper bound in seconds).
func (h *msHistogram) snapshot() []bucket {
	out := make([]bucket, len(h.counts))
	cum := 0.0
	for i := range h.counts {
		cum += float64(h.counts[i].Load())
		le := float64(i+1) / 1000
		if i == len(h.counts)-1 {
			le = math.Inf(1)
		}
		out[i] = bucket{LE: le, Count: cum}
	}
	return out
}

func TestQuantile(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name string
		bs   []bucket
		q    float64
		want float64
	}{
		{"empty", []bucket{{0.1, 0}, {inf, 0}}, 0.5, math.NaN()},
		{"first bucket from zero", []bucket{{0.1, 10}, {inf, 10}}, 0.5, 0.05},
		{"interpolated in the second", []bucket{{0.1, 10}, {0.2, 30}, {inf, 30}}, 0.5, 0.125},
		{"empty buckets skipped", []bucket{{0.1, 0}, {0.2, 0}, {0.4, 4}, {inf, 4}}, 0.5, 0.3},
		{"rank in +Inf", []bucket{{0.1, 1}, {inf, 100}}, 0.99, 0.1},
		{"p99 at the top of the last finite", []bucket{{0.1, 99}, {0.2, 100}, {inf, 100}}, 0.99, 0.1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := quantile(tt.bs, tt.q)
			if math.IsNaN(tt.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tt.want) > 1e-9) {
				t.Errorf("quantile(%v, %g) = %g, want %g", tt.bs, tt.q, got, tt.want)
			}
		})
	}
}

func TestPromBucketsDelta(t *testing.T) {
	text := func(n1, n2, n3 int) string {
		return fmt.Sprintf("# HELP h x\n# TYPE h histogram\n"+
			"h_bucket{le=\"0.001\"} %d\nh_bucket{le=\"0.002\"} %d\nh_bucket{le=\"+Inf\"} %d\nh_sum 1\nh_count %d\n", n1, n2, n3, n3)
	}
	parse := func(s string) []bucket {
		m, err := parseExposition(strings.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		bs, ok := promBuckets(m, "h")
		if !ok {
			t.Fatal("no buckets")
		}
		return bs
	}
	d, err := deltaBuckets(parse(text(5, 5, 6)), parse(text(5, 15, 16)))
	if err != nil {
		t.Fatal(err)
	}
	want := []bucket{{0.001, 0}, {0.002, 10}, {math.Inf(1), 10}}
	if !slices.Equal(d, want) {
		t.Fatalf("delta %v, want %v", d, want)
	}
	if got := quantile(d, 0.5); math.Abs(got-0.0015) > 1e-12 {
		t.Errorf("p50 %g, want 0.0015", got)
	}
}

func TestMsHistogram(t *testing.T) {
	var h msHistogram
	for _, ms := range []int{0, 1, 1, 2, 20_000} {
		h.observe(time.Duration(ms) * time.Millisecond)
	}
	bs := h.snapshot()
	if bs[0].Count != 1 || bs[1].Count != 3 || bs[2].Count != 4 || bs[len(bs)-1].Count != 5 {
		t.Fatalf("counts %v %v %v … %v", bs[0], bs[1], bs[2], bs[len(bs)-1])
	}
	if got := quantile(bs, 0.5); got < 0.001 || got > 0.002 {
		t.Errorf("p50 %g s, want within [1 ms, 2 ms]", got)
	}
}
