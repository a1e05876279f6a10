package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
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

func TestFloor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		rate       float64
		most, want uint64
	}{
		{0, 64 * mib, 0},
		{-5, 64 * mib, 0},
		{10 * mib, 64 * mib, 10 * mib / 4}, // a quarter of a second of allocation
		{120 * mib, 64 * mib, 30 * mib},
		{1000 * mib, 64 * mib, 64 * mib}, // at most the configured floor
	} {
		if got := Floor(c.rate, c.most); got != c.want {
			t.Errorf("Floor(%v, %d) = %d, want %d", c.rate, c.most, got, c.want)
		}
	}
}

var sink []byte

func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// heapHeld is the heap memory the process holds from the system: spans in use (live and
// not yet collected objects, and their unused tails) and free spans not yet given back.
func heapHeld() uint64 {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64() + s[2].Value.Uint64()
}

// TestFollowsRate checks that a steady allocation rate raises GOGC (the floor follows the
// rate), that the engine going idle gives the heap it grew back and lowers GOGC again, and
// that stop restores GOGC.
//
// What is given back is compared with the heap held at the allocations' end, not with zero:
// right after a release the runtime holds a few hundred KiB of free heap again, and up to
// 3.6 MiB on a busy machine (a CI run failed on a 1 MiB bound).
func TestFollowsRate(t *testing.T) {
	idle := make(chan uint64, 10)
	stop := Start(512<<20, nil, func() { idle <- heapHeld() })
	defer stop()
	<-idle // the release after start-up

	deadline := time.Now().Add(10 * time.Second)
	raised := 0
	for raised <= 100 && time.Now().Before(deadline) {
		for range 256 {
			sink = make([]byte, 4096)
		}
		raised = gogc()
	}
	if raised <= 100 {
		t.Fatalf("GOGC is %d after allocating for 10 s, want it raised above 100", raised)
	}
	// The floor lets the heap grow to several times what is live: keep allocating until it
	// has, so that what the release gives back is measurable.
	for heapHeld() < 32<<20 && time.Now().Before(deadline) {
		for range 256 {
			sink = make([]byte, 4096)
		}
	}
	grown := heapHeld()
	if grown < 32<<20 {
		t.Fatalf("heap held %d KiB after allocating for 10 s, want it grown to 32 MiB under the floor", grown>>10)
	}
	sink = nil
	select {
	case held := <-idle:
		t.Logf("GOGC %d while allocating; heap held %d KiB then, %d KiB when idle", raised, grown>>10, held>>10)
		if held > grown/4 {
			t.Errorf("heap held %d KiB when idle, %d KiB at the allocations' end: want it given back", held>>10, grown>>10)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no idle release within 30 s of the allocations' end")
	}
	if got := gogc(); got != 100 {
		t.Errorf("GOGC is %d when idle, want 100 (no floor)", got)
	}
	stop()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC after stop = %d, want 100 restored", got)
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
			stop := Start(c.floor, c.environ, nil)
			for range 64 << 10 {
				sink = make([]byte, 4096)
			}
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
	// A tuner without its sampling loop, whose floor stays at 512 MiB (its last sample is
	// in the future, so no rate is taken).
	tu := &tuner{most: 512 << 20, base: 100, last: 100, floorOn: true, floor: 512 << 20,
		at: time.Now().Add(time.Hour), done: make(chan struct{}),
		sample: []metrics.Sample{{Name: liveHeap}, {Name: heapAllocs}}}
	tu.arm()
	defer tu.stop()
	// settled collects until the tuner has set the GOGC the live heap calls for (its cleanup
	// runs on its own goroutine after each cycle) and returns it, or 0 after 200 cycles.
	settled := func(ok func(gogc int) bool) int {
		for range 200 {
			runtime.GC()
			runtime.Gosched()
			if gogc, live := read(); gogc == Percent(live, 512<<20, 100) && ok(gogc) {
				return gogc
			}
		}
		return 0
	}
	small := settled(func(int) bool { return true })
	if small == 0 {
		gogc, live := read()
		t.Fatalf("GOGC is %d with %d MiB live, want %d", gogc, live>>20, Percent(live, 512<<20, 100))
	}
	keep := make([]byte, 64<<20)
	defer runtime.KeepAlive(keep)
	if gogc := settled(func(gogc int) bool { return gogc < small }); gogc != 0 {
		t.Logf("GOGC %d with a small live heap, %d with 64 MiB more live", small, gogc)
		return
	}
	gogc, live := read()
	t.Fatalf("GOGC is %d with %d MiB live, want %d (it was %d before)", gogc, live>>20, Percent(live, 512<<20, 100), small)
}
