// Package hops splits WebSocket echo round trips through an engine into their hops, from a
// packet capture on loopback: the engine's turn on the way in (the client's frame reaching
// the engine until the engine's tunnel frame to the runner), the runner's turn (that frame
// until the runner's answer), the engine's turn on the way out (the runner's answer until the
// engine's frame to the client), and the client's turn (that frame until the client's next
// one). docs/benchmarks.md ("Where a WebSocket echo's time goes") says how it is used.
//
// The input is tcpdump's text output with absolute timestamps (`tcpdump -nn -tt -r FILE`) of
// the engine's port while one client echoes one message at a time through one runner; packets
// without payload (acknowledgements) are skipped.
package hops

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/berthhq/berth/bench/sidebyside"
)

// Packet is one captured TCP segment with payload.
type Packet struct {
	At       time.Duration // capture time since the epoch
	Src, Dst int           // ports (everything is on 127.0.0.1)
	Len      int
}

// line matches tcpdump's IPv4 lines: "1796245753.624981 IP 127.0.0.1.35118 > 127.0.0.1.17218:
// Flags [P.], ..., length 310".
var line = regexp.MustCompile(`^(\d+)\.(\d{6}) IP [\d.]+?\.(\d+) > [\d.]+?\.(\d+): .*length (\d+)`)

// Parse reads tcpdump's text output and returns the segments that carry payload.
func Parse(r io.Reader) ([]Packet, error) {
	var out []Packet
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		usec, _ := strconv.ParseInt(m[2], 10, 64)
		src, _ := strconv.Atoi(m[3])
		dst, _ := strconv.Atoi(m[4])
		n, _ := strconv.Atoi(m[5])
		if n == 0 {
			continue
		}
		out = append(out, Packet{At: time.Duration(sec)*time.Second + time.Duration(usec)*time.Microsecond, Src: src, Dst: dst, Len: n})
	}
	return out, sc.Err()
}

// Trip is one echo's hops.
type Trip struct {
	EngineIn, Runner, EngineOut time.Duration
	Client                      time.Duration // until the client's next frame on the same connection; 0 if none
}

// Trips follows the echoes through the engine listening on port, whose runner is the peer
// at runnerPort (0: the peer with the most segments, which in an echo loop is the runner's
// socket, carrying both directions of every echo). Segments that do not fit the cycle
// client → engine → runner → engine → client (a ping on the runner's socket, another
// client's request) are skipped.
func Trips(pkts []Packet, port, runnerPort int) ([]Trip, error) {
	if runnerPort == 0 {
		runnerPort = busiestPeer(pkts, port)
	}
	if runnerPort == 0 {
		return nil, fmt.Errorf("no segment to or from port %d", port)
	}
	const (
		waitClient = iota // for the client's frame
		waitToRunner
		waitFromRunner
		waitToClient
	)
	var (
		trips      []Trip
		state      = waitClient
		t1, t2, t3 time.Duration
		client     int // the client's port in the trip under way
	)
	for _, p := range pkts {
		inbound := p.Dst == port
		if !inbound && p.Src != port {
			continue
		}
		peer := p.Src
		if !inbound {
			peer = p.Dst
		}
		fromRunner := peer == runnerPort
		switch {
		case state == waitClient && inbound && !fromRunner:
			if n := len(trips); n > 0 && peer == client {
				trips[n-1].Client = p.At - (t1 + trips[n-1].total())
			}
			t1, client, state = p.At, peer, waitToRunner
		case state == waitToRunner && !inbound && fromRunner:
			t2, state = p.At, waitFromRunner
		case state == waitFromRunner && inbound && fromRunner:
			t3, state = p.At, waitToClient
		case state == waitToClient && !inbound && peer == client:
			trips = append(trips, Trip{EngineIn: t2 - t1, Runner: t3 - t2, EngineOut: p.At - t3})
			state = waitClient
		}
	}
	return trips, nil
}

// total is the trip from the client's frame to the engine's answer.
func (t Trip) total() time.Duration { return t.EngineIn + t.Runner + t.EngineOut }

// busiestPeer is the peer port of port with the most segments.
func busiestPeer(pkts []Packet, port int) int {
	count := map[int]int{}
	for _, p := range pkts {
		switch port {
		case p.Dst:
			count[p.Src]++
		case p.Src:
			count[p.Dst]++
		}
	}
	best, n := 0, 0
	for peer, c := range count {
		if c > n || c == n && peer < best {
			best, n = peer, c
		}
	}
	return best
}

// Summary is the percentiles of each hop over a set of trips.
type Summary struct {
	Trips                       int
	EngineIn, Runner, EngineOut [3]time.Duration // p50, p90, p99
	Engine                      [3]time.Duration // EngineIn+EngineOut per trip
	Client                      [3]time.Duration // trips with a next one only
}

// Summarize returns the percentiles of trips' hops.
func Summarize(trips []Trip) Summary {
	pick := func(f func(Trip) time.Duration) [3]time.Duration {
		var d []time.Duration
		for _, t := range trips {
			if v := f(t); v > 0 {
				d = append(d, v)
			}
		}
		return [3]time.Duration{sidebyside.Percentile(d, 50), sidebyside.Percentile(d, 90), sidebyside.Percentile(d, 99)}
	}
	return Summary{
		Trips:     len(trips),
		EngineIn:  pick(func(t Trip) time.Duration { return t.EngineIn }),
		Runner:    pick(func(t Trip) time.Duration { return t.Runner }),
		EngineOut: pick(func(t Trip) time.Duration { return t.EngineOut }),
		Engine:    pick(func(t Trip) time.Duration { return t.EngineIn + t.EngineOut }),
		Client:    pick(func(t Trip) time.Duration { return t.Client }),
	}
}
