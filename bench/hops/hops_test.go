package hops

import (
	"strings"
	"testing"
	"time"
)

// Two echoes of client 5000 through the engine on 6420 and its runner at 7000, with what
// a real capture holds around them: acknowledgements without payload, a ping on the
// runner's socket between the echoes, and a line that is not IPv4.
const capture = `1000.000100 IP 127.0.0.1.5000 > 127.0.0.1.6420: Flags [P.], seq 1:13, ack 1, win 64, length 12
1000.000110 IP 127.0.0.1.6420 > 127.0.0.1.5000: Flags [.], ack 13, win 64, length 0
1000.000130 IP 127.0.0.1.6420 > 127.0.0.1.7000: Flags [P.], seq 1:40, ack 1, win 64, length 39
1000.000170 IP 127.0.0.1.7000 > 127.0.0.1.6420: Flags [P.], seq 1:44, ack 40, win 129, length 43
1000.000215 IP 127.0.0.1.6420 > 127.0.0.1.5000: Flags [P.], seq 1:9, ack 13, win 64, length 8
1000.000230 IP 127.0.0.1.6420 > 127.0.0.1.7000: Flags [P.], seq 40:50, ack 44, win 64, length 10
1000.000240 IP 127.0.0.1.7000 > 127.0.0.1.6420: Flags [P.], seq 44:54, ack 50, win 129, length 10
1000.000265 IP 127.0.0.1.5000 > 127.0.0.1.6420: Flags [P.], seq 13:25, ack 9, win 64, length 12
1000.000300 IP 127.0.0.1.6420 > 127.0.0.1.7000: Flags [P.], seq 50:89, ack 54, win 64, length 39
1000.000350 IP6 ::1.8000 > ::1.6420: Flags [P.], length 5
1000.000360 IP 127.0.0.1.7000 > 127.0.0.1.6420: Flags [P.], seq 54:97, ack 89, win 129, length 43
1000.000380 IP 127.0.0.1.6420 > 127.0.0.1.5000: Flags [P.], seq 9:17, ack 25, win 64, length 8
`

func TestTrips(t *testing.T) {
	pkts, err := Parse(strings.NewReader(capture))
	if err != nil {
		t.Fatal(err)
	}
	if len(pkts) != 10 {
		t.Fatalf("parsed %d segments with payload, want 10: %+v", len(pkts), pkts)
	}
	if p := pkts[0]; p.At != 1000*time.Second+100*time.Microsecond || p.Src != 5000 || p.Dst != 6420 || p.Len != 12 {
		t.Errorf("first segment %+v", p)
	}
	trips, err := Trips(pkts, 6420, 0)
	if err != nil {
		t.Fatal(err)
	}
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	want := []Trip{
		{EngineIn: us(30), Runner: us(40), EngineOut: us(45), Client: us(50)},
		{EngineIn: us(35), Runner: us(60), EngineOut: us(20)},
	}
	if len(trips) != len(want) {
		t.Fatalf("trips %+v, want %+v", trips, want)
	}
	for i := range want {
		if trips[i] != want[i] {
			t.Errorf("trip %d: %+v, want %+v", i, trips[i], want[i])
		}
	}
	s := Summarize(trips)
	if s.Trips != 2 || s.Engine[0] != us(75) || s.Runner[2] != us(60) || s.Client[0] != us(50) {
		t.Errorf("summary %+v", s)
	}
	if _, err := Trips(pkts, 9999, 0); err == nil {
		t.Error("a port without segments gave no error")
	}
}
