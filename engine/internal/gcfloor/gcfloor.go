// Package gcfloor keeps Go's garbage collector from running more often than a heap of at
// least a floor needs.
//
// With GOGC=100 a collection starts each time the heap has grown by as much as was live after
// the last one. The engine's live heap is a few MiB, so under gateway load that is a cycle
// every few MiB allocated, ~30 per second on 2 cores, each taking CPU from the requests
// (measured in alternating runs: engine CPU per gateway request 112–132 µs without a floor,
// 79–115 µs with a 64 MiB floor, and 16-connection throughput up by about a fifth).
// While the live heap is small, the collector's target is raised to the floor; once the live
// heap is large enough for GOGC's target to pass the floor, GOGC applies unchanged. The floor
// is garbage the process may hold, so it is bounded by configuration (node.gc_heap_floor_mib);
// GOMEMLIMIT, when set, still caps the heap.
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
)

// runtimeHeapMinimum is the Go runtime's smallest collection target at GOGC=100, scaled with
// GOGC: a tiny live heap must not raise it past the floor.
const runtimeHeapMinimum = 4 << 20

const liveHeap = "/gc/heap/live:bytes"

// Start holds the collector's target to at least floor bytes until stop is called, which
// restores the GOGC value in effect before. It does nothing (and stop does nothing) when
// floor is 0, when environ sets GOGC (the operator chose the collector's pace) or when the
// collector is off.
func Start(floor uint64, environ []string) (stop func()) {
	for _, kv := range environ {
		if strings.HasPrefix(kv, "GOGC=") {
			return func() {}
		}
	}
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if floor == 0 || base < 0 {
		return func() {}
	}
	t := &tuner{floor: floor, base: base, last: base, sample: []metrics.Sample{{Name: liveHeap}}}
	t.tune()
	t.arm()
	return t.stop
}

// tuner re-computes GOGC after every collection: a cleanup attached to a fresh object runs
// once a cycle has found it unreachable, and attaches itself to the next one.
type tuner struct {
	floor uint64
	base  int

	mu      sync.Mutex
	stopped bool
	last    int // the GOGC value set last
	sample  []metrics.Sample
}

// sentinel is the object whose collection marks a finished cycle; large enough to stay out
// of the tiny allocator, whose blocks are freed together and late.
type sentinel struct{ _ [32]byte }

func (t *tuner) arm() {
	runtime.AddCleanup(new(sentinel), func(t *tuner) { t.afterGC() }, t)
}

func (t *tuner) afterGC() {
	if t.tune() {
		t.arm()
	}
}

// tune sets GOGC for the live heap the last cycle measured; false once stopped.
func (t *tuner) tune() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample)
	pct := Percent(t.sample[0].Value.Uint64(), t.floor, t.base)
	if pct != t.last {
		debug.SetGCPercent(pct)
		t.last = pct
	}
	return true
}

func (t *tuner) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		debug.SetGCPercent(t.base)
	}
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
