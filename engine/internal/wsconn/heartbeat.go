package wsconn

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Heartbeats cost no goroutine per socket. A socket's pings run on the runtime's timer heap
// (time.AfterFunc): each ping is a short-lived goroutine that writes one frame and schedules
// the next.

// MaxJitter bounds the random delay added to every ping interval, so that sockets opened
// together do not ping together (Rivet: 0–127 ms, "to prevent stampeding herds").
const MaxJitter = 128 * time.Millisecond

// Jitter returns d plus 0–127 ms.
func Jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.IntN(int(MaxJitter/time.Millisecond)))*time.Millisecond
}

// Heartbeat is a socket's ping schedule: Start runs a ping after a delay, each ping that
// returns true is followed by the next one Interval (plus jitter) later, and Stop ends it.
// The zero value is ready; it is not reused after Stop.
type Heartbeat struct {
	mu      sync.Mutex
	timer   *time.Timer    // the next ping; nil before the first
	stopped bool           // no ping is scheduled after this
	running sync.WaitGroup // the scheduled or running ping, if any
	ping    func() bool    // set by Start
	every   time.Duration  // set by Start
}

// Start schedules the first ping after first (zero: at once), then one every interval plus
// 0–127 ms for as long as ping returns true. ping runs on a goroutine of its own.
func (h *Heartbeat) Start(first, interval time.Duration, ping func() bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ping, h.every = ping, interval
	h.scheduleLocked(first)
}

func (h *Heartbeat) scheduleLocked(d time.Duration) {
	if h.stopped {
		return
	}
	h.running.Add(1)
	if h.timer == nil {
		h.timer = time.AfterFunc(d, h.fire)
	} else {
		h.timer.Reset(d)
	}
}

func (h *Heartbeat) fire() {
	defer h.running.Done()
	if !h.ping() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.scheduleLocked(Jitter(h.every))
}

// Stop cancels the next ping and waits for one that is running; close the socket first, so
// that a running ping's write ends at once.
func (h *Heartbeat) Stop() {
	h.mu.Lock()
	h.stopped = true
	if h.timer != nil && h.timer.Stop() {
		h.running.Done() // it will not run
	}
	h.mu.Unlock()
	h.running.Wait()
}
