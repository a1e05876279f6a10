package hostsock

import (
	"testing"
	"time"

	"github.com/berthhq/berth/ops/actor"
)

// The pong worker lingers a tenth of the ping interval, less when the thresholds leave
// less room, and never under half a millisecond.
func TestPongLinger(t *testing.T) {
	cfg := actor.DefaultConfig() // eligible 10 s
	for _, tc := range []struct {
		name          string
		runner, envoy Timing
		want          time.Duration
	}{
		{"defaults", Timing{}, Timing{}, 300 * time.Millisecond},
		{"the shorter interval", Timing{PingInterval: time.Second}, Timing{}, 100 * time.Millisecond},
		// lost 1.6 s - interval 1.3 s - jitter 128 ms leaves 172 ms: half is 86 ms, under 130.
		{"tight lost threshold", Timing{}, Timing{PingInterval: 1300 * time.Millisecond, LostThreshold: 1600 * time.Millisecond}, 86 * time.Millisecond},
		{"no room", Timing{PingInterval: 9900 * time.Millisecond}, Timing{}, 500 * time.Microsecond},
	} {
		if got := pongLinger(tc.runner.withDefaults(), tc.envoy.withDefaults(), cfg); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
