package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		base, want  int
	}{
		{8 * mib, 64 * mib, 100, 700},  // target 8 × 8 = 64 MiB
		{32 * mib, 64 * mib, 100, 100}, // GOGC's own target reaches the floor
		{40 * mib, 64 * mib, 100, 100},
		{16 * mib, 64 * mib, 50, 300},
		{20 * mib, 64 * mib, 300, 300}, // a larger GOGC is kept
		{2 * mib, 64 * mib, 100, 1600}, // the runtime's minimum, 4 MiB × 16, is the floor
		{0, 64 * mib, 100, 1600},
		{8 * mib, 4 * mib, 100, 100}, // a floor below the runtime's minimum changes nothing
		{0, 4 * mib, 100, 100},
	} {
		if got := Percent(c.live, c.floor, c.base); got != c.want {
			t.Errorf("Percent(%d, %d, %d) = %d, want %d", c.live, c.floor, c.base, got, c.want)
		}
	}
}

var sink []byte

// churn allocates n bytes of garbage in 4 KiB pieces and returns how many collections ran
// meanwhile.
func churn(n int) uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	before := s[0].Value.Uint64()
	for range n / 4096 {
		sink = make([]byte, 4096)
	}
	metrics.Read(s)
	return s[0].Value.Uint64() - before
}

// TestFloor checks that with a floor far above the live heap, 64 MiB of garbage takes a
// couple of collections instead of the dozens GOGC=100 runs, and that stop restores GOGC.
func TestFloor(t *testing.T) {
	runtime.GC()
	without := churn(64 << 20)
	stop := Start(512<<20, nil)
	runtime.GC() // the first cycle under the tuner sets its target
	with := churn(64 << 20)
	stop()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC after stop = %d, want 100 restored", got)
	}
	t.Logf("collections for 64 MiB of garbage: %d without the floor, %d with a 512 MiB floor", without, with)
	if without < 4 {
		t.Fatalf("only %d collections without the floor: the test's heap is too large to show the difference", without)
	}
	if with > 1 {
		t.Errorf("%d collections with a 512 MiB floor, want at most 1", with)
	}
}

// TestOperatorGOGC checks that GOGC in the environment, a zero floor or a collector turned
// off leave GOGC alone.
func TestOperatorGOGC(t *testing.T) {
	for name, c := range map[string]struct {
		floor   uint64
		environ []string
		gogc    int
	}{
		"GOGC set":  {512 << 20, []string{"GOGC=50"}, 100},
		"no floor":  {0, nil, 100},
		"GC is off": {512 << 20, nil, -1},
	} {
		t.Run(name, func(t *testing.T) {
			debug.SetGCPercent(c.gogc)
			defer debug.SetGCPercent(100)
			stop := Start(c.floor, c.environ)
			runtime.GC()
			if got := debug.SetGCPercent(c.gogc); got != c.gogc {
				t.Errorf("GOGC = %d after Start, want %d untouched", got, c.gogc)
			}
			stop()
		})
	}
}

// TestFollowsLiveHeap checks that the tuner sets GOGC again after later collections: with
// 64 MiB more kept live, the GOGC it sets comes down to what the new live heap needs.
func TestFollowsLiveHeap(t *testing.T) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: liveHeap}}
	read := func() (gogc int, live uint64) {
		metrics.Read(s)
		return int(s[0].Value.Uint64()), s[1].Value.Uint64()
	}
	stop := Start(512<<20, nil)
	defer stop()
	runtime.GC()
	small, _ := read()
	keep := make([]byte, 64<<20)
	defer runtime.KeepAlive(keep)
	for range 200 {
		runtime.GC() // each cycle runs the tuner's cleanup, on its own goroutine
		runtime.Gosched()
		gogc, live := read()
		if want := Percent(live, 512<<20, 100); gogc == want && want < small {
			t.Logf("GOGC %d with a small live heap, %d with %d MiB live", small, gogc, live>>20)
			return
		}
	}
	gogc, live := read()
	t.Fatalf("GOGC is %d with %d MiB live, want %d (it was %d before)", gogc, live>>20, Percent(live, 512<<20, 100), small)
}
