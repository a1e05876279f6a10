// Package gcfloor keeps Go's garbage collector from running more often than a busy engine
// needs, and gives memory back once the engine is idle.
//
// With GOGC=100 a collection starts each time the heap has grown by as much as was live after
// the last one. The engine's live heap is a few MiB, so under gateway load that is a cycle
// every few MiB allocated, ~30 per second on 2 cores, each taking CPU from the requests
// (measured in alternating runs: engine CPU per gateway request 112–132 µs without a floor,
// 79–115 µs with a floor, and 16-connection throughput up by about a fifth).
// While the live heap is small, the collector's target is raised to a floor; once the live
// heap is large enough for GOGC's target to pass the floor, GOGC applies unchanged.
//
// The floor is garbage the process may hold, so it follows the allocation rate: what the
// engine allocates in floorHorizon, at most the configured floor (node.gc_heap_floor_mib). An
// idle engine has no floor, and when it becomes idle (less than idleRate allocated per
// second), or its floor falls by more than half, the heap's free memory goes back to the
// system at once rather than at the scavenger's pace.
// GOMEMLIMIT, when set, still caps the heap.
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"time"
)

// runtimeHeapMinimum is the Go runtime's smallest collection target at GOGC=100, scaled with
// GOGC: a tiny live heap must not raise it past the floor.
const runtimeHeapMinimum = 4 << 20

const (
	liveHeap   = "/gc/heap/live:bytes"
	heapAllocs = "/gc/heap/allocs:bytes" // allocated since the process started
)

const (
	// floorHorizon: the floor is what is allocated in this long, so that the floor alone
	// starts no more than four collections a second (a collection of the engine's small
	// live heap takes a millisecond or two of CPU).
	floorHorizon = 250 * time.Millisecond
	// sampleEvery is how often the allocation rate is read; a collection reads it too, so
	// that a burst raises the floor within a few collections.
	sampleEvery = time.Second
	// minSample is the shortest span a rate is taken over.
	minSample = 100 * time.Millisecond
	// idleRate: below this allocation rate the engine counts as idle.
	idleRate = 1 << 20 // bytes per second
	// dropRelease: a fall of the floor by more than this gives the free heap back.
	dropRelease = 16 << 20
)

// Start tunes the collector until stop is called, which restores the GOGC value in effect
// before. The floor is at most most bytes; it is not applied when most is 0, when environ
// sets GOGC (the operator chose the collector's pace) or when the collector is off. Each
// time the engine becomes idle (and once after start-up), the heap's free memory goes back
// to the system and idle is called (nil for nothing).
func Start(most uint64, environ []string, idle func()) (stop func()) {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	t := &tuner{most: most, base: base, last: base, idle: idle, busy: true, done: make(chan struct{}),
		sample: []metrics.Sample{{Name: liveHeap}, {Name: heapAllocs}}}
	t.floorOn = most > 0 && base >= 0
	for _, kv := range environ {
		if strings.HasPrefix(kv, "GOGC=") {
			t.floorOn = false
		}
	}
	t.at, t.allocs = time.Now(), t.read()
	if t.floorOn {
		t.arm()
	}
	t.wg.Add(1)
	go t.loop()
	return t.stop
}

// tuner re-computes GOGC after every collection (a cleanup attached to a fresh object runs
// once a cycle has found it unreachable, and attaches itself to the next one) and every
// sampleEvery.
type tuner struct {
	most    uint64 // the largest floor
	base    int    // GOGC before Start
	floorOn bool
	idle    func()

	done chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	stopped bool
	last    int    // the GOGC value set last
	floor   uint64 // the floor in effect
	at      time.Time
	allocs  uint64 // allocated bytes at time at
	busy    bool   // allocating since the last release
	sample  []metrics.Sample
}

// sentinel is the object whose collection marks a finished cycle; large enough to stay out
// of the tiny allocator, whose blocks are freed together and late.
type sentinel struct{ _ [32]byte }

func (t *tuner) arm() {
	runtime.AddCleanup(new(sentinel), func(t *tuner) { t.afterGC() }, t)
}

func (t *tuner) afterGC() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.update(time.Now(), false)
	t.arm()
}

// read reads the runtime's figures into t.sample and returns the bytes allocated so far.
func (t *tuner) read() uint64 {
	metrics.Read(t.sample)
	return t.sample[1].Value.Uint64()
}

// update takes the allocation rate since the last sample (if it spans minSample) and sets
// GOGC for the floor it asks and the live heap. A collection may only raise the floor; the
// periodic sample also lowers it. It returns the rate, or -1 when the span was too short.
func (t *tuner) update(now time.Time, periodic bool) float64 {
	allocs := t.read()
	rate := -1.0
	if span := now.Sub(t.at); span >= minSample {
		rate = float64(allocs-t.allocs) / span.Seconds()
		t.at, t.allocs = now, allocs
		if rate >= idleRate {
			t.busy = true
		}
		if f := Floor(rate, t.most); periodic || f > t.floor {
			t.floor = f
		}
	}
	if t.floorOn {
		if pct := Percent(t.sample[0].Value.Uint64(), t.floor, t.base); pct != t.last {
			debug.SetGCPercent(pct)
			t.last = pct
		}
	}
	return rate
}

// loop samples the allocation rate every sampleEvery and gives memory back when the engine
// becomes idle.
func (t *tuner) loop() {
	defer t.wg.Done()
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for {
		select {
		case <-t.done:
			return
		case now := <-tick.C:
			t.mu.Lock()
			was := t.floor
			rate := t.update(now, true)
			idle := rate >= 0 && rate < idleRate && t.busy
			if idle {
				t.busy = false
			}
			// A floor that fell by more than half (and by more than dropRelease) leaves the
			// heap grown for it: it goes back at once too, not at the scavenger's pace.
			release := idle || (t.floor < was/2 && was-t.floor > dropRelease)
			t.mu.Unlock()
			if release {
				debug.FreeOSMemory()
				if idle && t.idle != nil {
					t.idle()
				}
				t.mu.Lock()
				t.at, t.allocs = time.Now(), t.read() // the release's own allocations are not load
				t.mu.Unlock()
			}
		}
	}
}

func (t *tuner) stop() {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return
	}
	t.stopped = true
	if t.floorOn {
		debug.SetGCPercent(t.base)
	}
	t.mu.Unlock()
	close(t.done)
	t.wg.Wait()
}

// Floor is the floor for an allocation rate (bytes per second): what is allocated in
// floorHorizon, at most most.
func Floor(rate float64, most uint64) uint64 {
	f := rate * floorHorizon.Seconds()
	if f >= float64(most) {
		return most
	}
	return uint64(max(f, 0))
}

// Percent is the GOGC value that makes the next collection's target (live heap ×
// (1 + GOGC/100)) at least floor, and never less than base. It is at most the value whose
// scaled runtime minimum (4 MiB × GOGC/100) is the floor, which is the target then for a live
// heap under 4 MiB.
func Percent(live, floor uint64, base int) int {
	most := int(floor * 100 / runtimeHeapMinimum)
	if live > 0 && live*uint64(100+base)/100 >= floor {
		return base
	}
	pct := most
	if live > 0 && floor*100/live-100 < uint64(most) {
		pct = int(floor*100/live - 100)
	}
	return max(base, pct)
}
