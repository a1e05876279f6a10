package sidebyside

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/tests/proc"
)

// Target is one system under test: an echo actor (every HTTP request answered 200 "ok", every
// WebSocket message sent back) behind an engine's gateway, or the plain node server.
type Target struct {
	Name string
	HTTP string // http://host:port/gateway/{actor_id} or the plain server's http://host:port
	WS   string // the same as ws://
	PID  int    // the engine's process, for its CPU time; 0 for the plain server
	Node int    // the node process behind it (the echo runner, or the plain server)
	Idx  int    // this target's part of the X-Forwarded-For addresses (1..255)
}

// NewTarget returns the target named name at httpURL, with its WebSocket URL.
func NewTarget(name, httpURL string, pid, node, idx int) *Target {
	return &Target{Name: name, HTTP: httpURL, WS: "ws" + strings.TrimPrefix(httpURL, "http"), PID: pid, Node: node, Idx: idx}
}

// Both engines limit each client IP to 10,000 requests per 60 s (guard.rate_limit; the
// reference takes the first X-Forwarded-For entry as the client, berth the rightmost entry
// that is not a trusted proxy, and the benchmark's berth trusts its loopback client): each
// connection moves to a new address every perAddress requests so that the limit never
// answers instead of the actor.
const perAddress = 4000

// XFF is the client address of request n on connection conn of t.
func (t *Target) XFF(conn, n int) string {
	return fmt.Sprintf("10.%d.%d.%d", t.Idx, conn%250, n/perAddress%250)
}

// Get sends one GET to url on client from the client address from, and checks the answer is
// 200 "ok".
func Get(ctx context.Context, client *http.Client, url, from string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Forwarded-For", from)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		return fmt.Errorf("GET %s: %d %q", url, resp.StatusCode, body)
	}
	return nil
}

// OneConn is a client that keeps one connection alive; done closes it.
func OneConn() (client *http.Client, done func()) {
	tr := &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, DisableCompression: true}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}, tr.CloseIdleConnections
}

// Warmup is how many unrecorded requests (or WebSocket echoes) come before each latency
// loop. Latency is measured in the steady state, and the node runner's code paths take a few
// thousand requests to be compiled by V8: consecutive runs of 1,000 requests through a fresh
// engine and runner had p50s of 1.00, 0.77, 0.69, 0.66, 0.51 and 0.56 ms.
const Warmup = 3000

// HTTPLatency sends warmup and then n sequential GETs of /bench on one keep-alive connection
// of kind c and returns the n recorded durations.
func HTTPLatency(ctx context.Context, t *Target, c Client, warmup, n int) ([]time.Duration, error) {
	conn := c.Dial(t)
	defer conn.Close()
	d := make([]time.Duration, 0, n)
	for i := range warmup + n {
		start := time.Now()
		// A client address range per kind of client, so that each stays under the rate limit.
		if err := conn.Get(ctx, "/bench", t.XFF(100+int(c), i)); err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
		if i >= warmup {
			d = append(d, time.Since(start))
		}
	}
	return d, nil
}

// Load is the outcome of a throughput loop.
type Load struct {
	RPS           float64         // answered requests per second
	Failed        int64           // requests that failed
	FirstErr      error           // the first failure
	CPUPerReq     time.Duration   // the engine's CPU per answered request
	NodeCPUPerReq time.Duration   // the node process's CPU per answered request
	Latency       []time.Duration // every answered request's round trip
	Answered      int64           // answered requests
}

// HTTPLoad runs conns closed loops of GET /bench, one keep-alive connection of kind cl
// each, for d.
func HTTPLoad(ctx context.Context, t *Target, cl Client, conns int, d time.Duration) Load {
	return HTTPLoadSpread(ctx, []*Target{t}, cl, conns, d, func(int, int) string { return "/bench" })
}

// HTTPLoadSpread runs conns closed loops of GETs for d, one keep-alive connection of kind cl
// each: connection c goes to ts[c%len(ts)] and its n-th request asks for path(c, n). The CPU
// figures are those of ts[0]'s processes.
func HTTPLoadSpread(ctx context.Context, ts []*Target, cl Client, conns int, d time.Duration, path func(c, n int) string) Load {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	lat := make([][]time.Duration, conns)
	t := ts[0]
	cpu0, node0 := proc.CPUTime(t.PID), proc.CPUTime(t.Node)
	start := time.Now()
	for c := range conns {
		wg.Go(func() {
			tc := ts[c%len(ts)]
			conn := cl.Dial(tc)
			defer conn.Close()
			for n := 0; ctx.Err() == nil; n++ {
				sent := time.Now()
				if err := conn.Get(ctx, path(c, n), tc.XFF(c, n)); err != nil {
					if ctx.Err() != nil {
						return // cut off by the end of the loop
					}
					if failed.Add(1) == 1 {
						firstErr.Store(err)
					}
					continue
				}
				lat[c] = append(lat[c], time.Since(sent))
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, node1 := proc.CPUTime(t.PID), proc.CPUTime(t.Node)
	l := Load{RPS: float64(ok.Load()) / elapsed.Seconds(), Failed: failed.Load(), Answered: ok.Load()}
	l.FirstErr, _ = firstErr.Load().(error)
	if n := time.Duration(ok.Load()); n > 0 {
		l.CPUPerReq, l.NodeCPUPerReq = (cpu1-cpu0)/n, (node1-node0)/n
	}
	for _, d := range lat {
		l.Latency = append(l.Latency, d...)
	}
	return l
}

// WSLatency opens one WebSocket to t's /ws and returns n echo round trips, recorded after
// warmup unrecorded ones.
func WSLatency(ctx context.Context, t *Target, warmup, n int) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	c, _, err := websocket.Dial(ctx, t.WS+"/ws", &websocket.DialOptions{
		Subprotocols: []string{"rivet"},
		HTTPHeader:   http.Header{"X-Forwarded-For": {t.XFF(200, 0)}},
	})
	if err != nil {
		return nil, fmt.Errorf("%s: WebSocket: %w", t.Name, err)
	}
	defer c.CloseNow()
	d := make([]time.Duration, 0, n)
	for i := range warmup + n {
		msg := []byte("echo " + strconv.Itoa(i))
		start := time.Now()
		if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
			return nil, fmt.Errorf("%s: WebSocket write: %w", t.Name, err)
		}
		_, got, err := c.Read(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: WebSocket read: %w", t.Name, err)
		}
		if !bytes.Equal(got, msg) {
			return nil, fmt.Errorf("%s: WebSocket echo %q, want %q", t.Name, got, msg)
		}
		if i >= warmup {
			d = append(d, time.Since(start))
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
	return d, nil
}

// Percentile returns the p-th percentile (0 < p < 100) of d, which it sorts; 0 for none.
func Percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p/100))]
}
