package runner

import "time"

// backoff returns the wait before reconnect attempt n (0 for the first after a drop): initial·2^n
// capped at max, then plus jitter·25 % of it, where jitter is uniform in [0, 1). This is the
// reference client's calculateBackoff (cap first, then jitter), so with the defaults the waits
// are 1, 2, 4, 8, 16, 30, 30, … s, each up to 25 % longer.
func backoff(n int, initial, max time.Duration, jitter float64) time.Duration {
	d := initial
	for i := 0; i < n && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	return d + time.Duration(float64(d)*0.25*jitter)
}
