package wsconn

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/berthhq/berth/pkg/auth"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A heartbeat pings until its ping says stop, and Stop waits for a running ping and
// cancels the next one.
func TestHeartbeat(t *testing.T) {
	var n atomic.Int32
	var h Heartbeat
	done := make(chan struct{})
	h.Start(0, time.Millisecond, func() bool {
		if n.Add(1) == 3 {
			close(done)
			return false
		}
		return true
	})
	<-done
	h.Stop()
	if got := n.Load(); got != 3 {
		t.Fatalf("%d pings, want 3", got)
	}

	var running atomic.Bool
	var h2 Heartbeat
	started := make(chan struct{})
	h2.Start(0, time.Hour, func() bool {
		running.Store(true)
		close(started)
		time.Sleep(50 * time.Millisecond)
		running.Store(false)
		return true // schedules the next, an hour away, which Stop cancels
	})
	<-started
	h2.Stop()
	if running.Load() {
		t.Fatal("Stop returned while a ping ran")
	}

	var h3 Heartbeat
	h3.Start(time.Hour, time.Hour, func() bool { t.Error("pinged"); return false })
	h3.Stop()
}

func TestJitter(t *testing.T) {
	for range 1000 {
		if d := Jitter(time.Second); d < time.Second || d >= time.Second+MaxJitter {
			t.Fatalf("Jitter(1s) = %v", d)
		}
	}
}

// Every job pushed is run once, in batches of at most Batch, by at most Workers workers,
// and the workers end when the queue is empty.
func TestBatcher(t *testing.T) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[int]int{}
	var inRun, maxInRun atomic.Int32
	q := Batcher[int]{WG: &wg, Workers: 2, Batch: 5, Queue: 10, Run: func(b []int) {
		if len(b) > 5 {
			t.Errorf("batch of %d", len(b))
		}
		n := inRun.Add(1)
		for {
			m := maxInRun.Load()
			if n <= m || maxInRun.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		mu.Lock()
		for _, j := range b {
			seen[j]++
		}
		mu.Unlock()
		inRun.Add(-1)
	}}
	wg.Add(1) // the pushers' owner, as a socket handler holds its server's WaitGroup
	var pushers sync.WaitGroup
	for p := range 4 {
		pushers.Go(func() {
			for i := range 100 {
				q.Push(p*100 + i)
			}
		})
	}
	pushers.Wait()
	wg.Done()
	wg.Wait()
	if len(seen) != 400 {
		t.Fatalf("%d jobs run, want 400", len(seen))
	}
	for j, n := range seen {
		if n != 1 {
			t.Fatalf("job %d run %d times", j, n)
		}
	}
	if m := maxInRun.Load(); m > 2 {
		t.Fatalf("%d batches ran at once, want at most 2", m)
	}
}

func TestCheckUpgrade(t *testing.T) {
	for _, tc := range []struct {
		method, token, protocol, header string
		want                            int // 0: passes
	}{
		{"POST", "", "", "", http.StatusMethodNotAllowed},
		{"POST", "s", "", "", http.StatusUnauthorized}, // the token first
		{"GET", "", "", "", 0},
		{"GET", "s", "", "", http.StatusUnauthorized},
		{"GET", "s", "rivet, rivet_token.x", "", http.StatusForbidden},
		{"GET", "s", "rivet, rivet_token.s", "", 0},
		{"GET", "s", "", "s", 0},
		{"GET", "s", "", "x", http.StatusForbidden},
	} {
		r := httptest.NewRequest(tc.method, "/envoys/connect", nil)
		if tc.protocol != "" {
			r.Header.Set("Sec-WebSocket-Protocol", tc.protocol)
		}
		if tc.header != "" {
			r.Header.Set("X-Rivet-Token", tc.header)
		}
		w := httptest.NewRecorder()
		ok := CheckUpgrade(w, r, auth.Admin(tc.token), auth.Grant.AllowGlobal, 1)
		if ok != (tc.want == 0) || !ok && w.Code != tc.want {
			t.Errorf("%+v: ok %v, status %d", tc, ok, w.Code)
		}
		if !ok && (w.Header().Get("Content-Type") != "application/json" || w.Header().Get("X-Rivet-Ray-Id") == "" && tc.want != http.StatusMethodNotAllowed) {
			t.Errorf("%+v: answered %v %s, want a JSON error with a ray id", tc, w.Header(), w.Body)
		}
	}
}

func TestIsTarget(t *testing.T) {
	req := func(path, protocols, header string) *http.Request {
		r := httptest.NewRequest("GET", path, nil)
		if protocols != "" {
			r.Header.Set("Sec-WebSocket-Protocol", protocols)
		}
		if header != "" {
			r.Header.Set("X-Rivet-Target", header)
		}
		return r
	}
	for _, tc := range []struct {
		r    *http.Request
		want bool
	}{
		{req("/x", "rivet, rivet_target.envoy", ""), true},
		{req("/x", "rivet_target.runner, rivet_target.envoy", ""), false}, // the first target counts
		{req("/x", "", "envoy"), true},
		{req("/x", "", "runner"), false},
		{req("/gateway/a/b", "rivet_target.envoy", ""), false},
		{req("/x", "rivet", ""), false},
	} {
		if got := IsTarget(tc.r, "envoy"); got != tc.want {
			t.Errorf("%s %v: %v, want %v", tc.r.URL.Path, tc.r.Header, got, tc.want)
		}
	}
}

// With Linger, jobs that come while a worker waits after a short batch join the next one.
func TestBatcherLinger(t *testing.T) {
	var wg sync.WaitGroup
	entered, release := make(chan struct{}), make(chan struct{})
	sizes := make(chan int, 8)
	q := &Batcher[int]{WG: &wg, Workers: 1, Linger: 300 * time.Millisecond, Run: func(b []int) {
		if b[0] == 0 {
			close(entered)
			<-release // hold the first batch while more jobs queue
		}
		sizes <- len(b)
	}}
	wg.Add(1) // the pusher is counted, as Push requires
	q.Push(0)
	<-entered
	for i := 1; i <= 5; i++ {
		q.Push(i)
	}
	close(release)
	if n := <-sizes; n != 1 {
		t.Fatalf("first batch %d jobs, want 1", n)
	}
	// The worker now lingers: these join the 5 already waiting.
	for i := 6; i <= 8; i++ {
		q.Push(i)
	}
	if n := <-sizes; n != 8 {
		t.Fatalf("second batch %d jobs, want 8 (5 queued + 3 during the linger)", n)
	}
	wg.Done()
	wg.Wait()
}

// Closing Done ends a linger at once: a worker that lingers an hour lets its owner close.
func TestBatcherLingerEndsWithDone(t *testing.T) {
	var wg sync.WaitGroup
	done := make(chan struct{})
	ran := make(chan int, 1)
	q := &Batcher[int]{WG: &wg, Workers: 1, Linger: time.Hour, Done: done, Run: func(b []int) { ran <- len(b) }}
	wg.Add(1)
	q.Push(1)
	if n := <-ran; n != 1 {
		t.Fatalf("batch of %d jobs, want 1", n)
	}
	wg.Done()
	close(done)
	closed := make(chan struct{})
	go func() { wg.Wait(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker still lingers after Done closed")
	}
}
