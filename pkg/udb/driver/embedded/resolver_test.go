package embedded

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/berthhq/berth/pkg/udb/internal/txn"
)

func kr(b, e string) txn.KeyRange { return txn.KeyRange{Begin: []byte(b), End: []byte(e)} }

func TestResolverRules(t *testing.T) {
	r := newResolver()
	r.write(10, []txn.KeyRange{kr("b", "d")})
	r.write(20, []txn.KeyRange{kr("c", "c\x00")})
	cases := []struct {
		rv   int64
		read txn.KeyRange
		want bool
	}{
		{9, kr("a", "b"), false},
		{9, kr("a", "b\x00"), true},
		{10, kr("b", "c"), false},
		{10, kr("b", "z"), true}, // c written at 20
		{20, kr("a", "z"), false},
		{15, kr("c\x00", "d"), false},
		{9, kr("c\x00", "d"), true},
		{9, kr("d", "z"), false},
	}
	for _, c := range cases {
		if got := r.conflicts(c.rv, []txn.KeyRange{c.read}); got != c.want {
			t.Errorf("read %q..%q at %d: conflict %v, want %v", c.read.Begin, c.read.End, c.rv, got, c.want)
		}
	}
}

// TestResolverMatchesNaive checks the step function against a list of every
// write, over random ranges, including after forgetting old history.
func TestResolverMatchesNaive(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 0))
	key := func() string { return fmt.Sprintf("%02d", rng.IntN(40)) }
	rangeOf := func() txn.KeyRange {
		a, b := key(), key()
		if a > b {
			a, b = b, a
		}
		if rng.IntN(3) == 0 {
			b = a + "\x00"
		}
		return kr(a, b)
	}
	type w struct {
		v int64
		r txn.KeyRange
	}
	var log []w
	r := newResolver()
	for v := int64(1); v <= 2000; v++ {
		rg := rangeOf()
		r.write(v, []txn.KeyRange{rg})
		log = append(log, w{v, rg})
		if v%300 == 0 {
			r.forget(v - 100)
		}
		read, rv := rangeOf(), max(0, v-int64(rng.IntN(90)))
		want := false
		for _, x := range log {
			if x.v > rv && string(x.r.Begin) < string(x.r.End) && string(read.Begin) < string(read.End) && string(x.r.Begin) < string(read.End) && string(read.Begin) < string(x.r.End) {
				want = true
			}
		}
		if got := r.conflicts(rv, []txn.KeyRange{read}); got != want {
			t.Fatalf("seed %d: v=%d read %q..%q at %d: got %v want %v", seed, v, read.Begin, read.End, rv, got, want)
		}
	}
	if r.size() > 200 {
		t.Errorf("forget kept %d boundaries for a 40-key space", r.size())
	}
}

// TestResolverForgetMerges checks that forgetting visits every boundary that
// left the window: once all history is older than the horizon, the step
// function is one boundary again, and until then it holds no more than the
// boundaries the window's writes set.
func TestResolverForgetMerges(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 0))
	const window = 50
	r := newResolver()
	for v := int64(1); v <= 5000; v++ {
		var ranges []txn.KeyRange
		for range 1 + rng.IntN(3) {
			a := fmt.Sprintf("%04d", rng.IntN(2000))
			b := a + "\x00"
			if rng.IntN(4) == 0 {
				b = fmt.Sprintf("%04d", rng.IntN(2000))
			}
			ranges = append(ranges, kr(a, b))
		}
		r.write(v, ranges)
		r.forget(v - window)
		// Each write sets at most two boundaries per range (three ranges), and one
		// forgotten boundary may sit before each live one, plus the first.
		if n := r.size(); n > 2*(2*3*window)+1 {
			t.Fatalf("seed %d: v=%d: %d boundaries for a window of %d writes", seed, v, n, window)
		}
	}
	r.forget(5000)
	if n := r.size(); n != 1 {
		t.Fatalf("seed %d: %d boundaries after forgetting everything, want 1", seed, n)
	}
	if r.versionAt([]byte("1000")) != 0 {
		t.Fatalf("seed %d: a forgotten version still reads", seed)
	}
}

// BenchmarkResolverWindow is the committer's resolver work per commit group
// with a full MVCC window behind it: each op writes three single keys of a
// 50,000-key space at a new version and forgets what left a window of
// 20,000 versions (as at about 4,000 commits a second), checking conflicts
// of three reads first.
func BenchmarkResolverWindow(b *testing.B) {
	const window = 20_000
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, 50_000)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("runner/%06d/ping", i))
	}
	pick := func() txn.KeyRange {
		k := keys[rng.IntN(len(keys))]
		return txn.KeyRange{Begin: k, End: append(k[:len(k):len(k)], 0)}
	}
	r := newResolver()
	v := int64(0)
	step := func() {
		v++
		reads := []txn.KeyRange{pick(), pick(), pick()}
		_ = r.conflicts(v-1, reads)
		r.write(v, reads)
		r.forget(v - window)
	}
	for range 2 * window {
		step()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		step()
	}
	b.ReportMetric(float64(r.size()), "boundaries")
}
