package runnerload

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// protocolVersion is the runner protocol the simulated runners speak.
const protocolVersion = 7

// fleetOptions configures a fleet of simulated runners.
type fleetOptions struct {
	URL       string // the engine's ws://host:port
	Namespace string
	Name      string // runner (pool) name in ToServerInit
	N         int    // runners
	Rate      int    // new connections per second while ramping up
	// InitTimeout bounds a runner's dial plus ToServerInit → ToClientInit.
	InitTimeout time.Duration
}

// fleet is N simulated runners, each one WebSocket that registers with ToServerInit,
// reads ToClientInit, then answers every ToClientPing with ToServerPong{ts}. A runner whose
// socket ends before the fleet closes counts as dropped and is not reconnected.
type fleet struct {
	o      fleetOptions
	ctx    context.Context // cancelled by close; ends every socket
	cancel context.CancelFunc
	client *http.Client
	wg     sync.WaitGroup // one per runner goroutine, plus the ramp

	closing    atomic.Bool
	registered atomic.Int64 // got ToClientInit
	failed     atomic.Int64 // never registered
	dropped    atomic.Int64 // registered, then the socket ended before close
	pings      atomic.Int64 // ToClientPing received (and answered)
	pongErrs   atomic.Int64 // pong writes that failed
	delay      msHistogram  // receive time − the ping's ts (engine clock, same host)
	gap        msHistogram  // time between two pings on one socket

	mu       sync.Mutex
	reasons  map[string]int // why runners failed or dropped, by short reason
	runners  []string       // runner id by index, once registered
	firstPng []int64        // ts of the first ping each runner answered, 0 until then
}

// startFleet starts ramping the runners up at o.Rate per second; registration goes on in
// the background (waitRegistered waits for it). close ends every socket.
func startFleet(o fleetOptions) *fleet {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Name == "" {
		o.Name = "runnerload"
	}
	if o.Rate <= 0 {
		o.Rate = 250
	}
	if o.InitTimeout <= 0 {
		o.InitTimeout = 30 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &fleet{
		o: o, ctx: ctx, cancel: cancel,
		// Upgraded connections leave the transport's pool: nothing to tune but the dial.
		client:   &http.Client{Transport: &http.Transport{DisableCompression: true}},
		reasons:  map[string]int{},
		runners:  make([]string, o.N),
		firstPng: make([]int64, o.N),
	}
	f.wg.Add(1)
	go f.ramp()
	return f
}

// ramp starts one runner every 1/Rate seconds, with at most 64 handshakes in flight.
func (f *fleet) ramp() {
	defer f.wg.Done()
	tick := time.NewTicker(time.Second / time.Duration(f.o.Rate))
	defer tick.Stop()
	inFlight := make(chan struct{}, 64)
	for i := range f.o.N {
		select {
		case <-f.ctx.Done():
			f.failed.Add(int64(f.o.N - i))
			return
		case <-tick.C:
		}
		select {
		case <-f.ctx.Done():
			f.failed.Add(int64(f.o.N - i))
			return
		case inFlight <- struct{}{}:
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.run(i, func() { <-inFlight })
		}()
	}
}

func (f *fleet) note(reason string) {
	f.mu.Lock()
	f.reasons[reason]++
	f.mu.Unlock()
}

// closeReason shortens a socket error for the reasons table.
func closeReason(err error) string {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		reason, _, _ := strings.Cut(ce.Reason, "#") // drop the ray id
		return fmt.Sprintf("close %d %s", ce.Code, reason)
	}
	s := err.Error()
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

// run is runner i: handshake (calling handshook when it ends, either way), then the
// ping/pong loop until the socket ends.
func (f *fleet) run(i int, handshook func()) {
	c, err := f.handshake(i)
	handshook()
	if err != nil {
		f.failed.Add(1)
		f.note("register: " + closeReason(err))
		return
	}
	defer c.CloseNow()
	f.registered.Add(1)
	var last time.Time
	for {
		_, b, err := c.Read(f.ctx)
		if err != nil {
			if !f.closing.Load() {
				f.dropped.Add(1)
				f.note("dropped: " + closeReason(err))
			}
			return
		}
		now := time.Now()
		m, err := proto.DecodeToClient(b, protocolVersion)
		if err != nil {
			f.dropped.Add(1)
			f.note("undecodable frame from the engine")
			return
		}
		ping, ok := m.(proto.ToClientPing)
		if !ok {
			continue // no actors here: commands and the rest are not expected, and ignored
		}
		f.pings.Add(1)
		f.delay.observe(now.Sub(time.UnixMilli(ping.Ts)))
		if !last.IsZero() {
			f.gap.observe(now.Sub(last))
		}
		last = now
		pong, err := proto.EncodeToServer(proto.ToServerPong{Ts: ping.Ts}, protocolVersion)
		if err != nil {
			f.dropped.Add(1)
			f.note("encode pong: " + err.Error())
			return
		}
		wctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
		err = c.Write(wctx, websocket.MessageBinary, pong)
		cancel()
		if err != nil {
			if !f.closing.Load() {
				f.pongErrs.Add(1)
			}
			continue // the read sees the socket end
		}
		f.mu.Lock()
		if f.firstPng[i] == 0 {
			f.firstPng[i] = ping.Ts
		}
		f.mu.Unlock()
	}
}

// handshake dials runner i and registers it: ToServerInit out, ToClientInit back.
func (f *fleet) handshake(i int) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(f.ctx, f.o.InitTimeout)
	defer cancel()
	u := fmt.Sprintf("%s/runners/connect?protocol_version=%d&namespace=%s&runner_key=rl-%d",
		f.o.URL, protocolVersion, f.o.Namespace, i)
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{
		HTTPClient:   f.client,
		Subprotocols: []string{"rivet"},
	})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(1 << 20)
	init, err := proto.EncodeToServer(proto.ToServerInit{Name: f.o.Name, Version: 1, TotalSlots: 1}, protocolVersion)
	if err != nil {
		c.CloseNow()
		return nil, err
	}
	if err := c.Write(ctx, websocket.MessageBinary, init); err != nil {
		c.CloseNow()
		return nil, err
	}
	_, b, err := c.Read(ctx)
	if err != nil {
		c.CloseNow()
		return nil, err
	}
	m, err := proto.DecodeToClient(b, protocolVersion)
	if err != nil {
		c.CloseNow()
		return nil, err
	}
	ci, ok := m.(proto.ToClientInit)
	if !ok {
		c.CloseNow()
		return nil, fmt.Errorf("first frame is %T, want ToClientInit", m)
	}
	f.mu.Lock()
	f.runners[i] = ci.RunnerID
	f.mu.Unlock()
	return c, nil
}

// waitRegistered waits until every runner registered or failed, or the timeout passes, and
// returns how many registered.
func (f *fleet) waitRegistered(timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		reg, failed := f.registered.Load(), f.failed.Load()
		if reg+failed >= int64(f.o.N) {
			if failed > 0 {
				return int(reg), fmt.Errorf("%d of %d runners did not register: %s", failed, f.o.N, f.reasonSummary())
			}
			return int(reg), nil
		}
		if time.Now().After(deadline) {
			return int(reg), fmt.Errorf("%d of %d runners registered after %v (%d failed: %s)", reg, f.o.N, timeout, failed, f.reasonSummary())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// reasonSummary lists the failure and drop reasons, most frequent first.
func (f *fleet) reasonSummary() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reasons) == 0 {
		return "none"
	}
	type rc struct {
		r string
		n int
	}
	var l []rc
	for r, n := range f.reasons {
		l = append(l, rc{r, n})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].n > l[j].n || (l[i].n == l[j].n && l[i].r < l[j].r) })
	var parts []string
	for _, x := range l {
		parts = append(parts, fmt.Sprintf("%d× %s", x.n, x.r))
	}
	return strings.Join(parts, "; ")
}

// close ends every socket (without a close handshake) and waits for the runner goroutines.
func (f *fleet) close() {
	f.closing.Store(true)
	f.cancel()
	f.wg.Wait()
}
