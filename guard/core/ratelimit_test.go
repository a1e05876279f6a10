package core

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func isRateLimit(err error) bool {
	return err != nil && err.Error() != "" && http.StatusTooManyRequests == statusOf(err)
}

func TestLimiterWindow(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := NewLimiter(RateLimit{Requests: 3, Window: time.Minute, InFlight: -1}, clk.now)
	for i := range 3 {
		release, err := l.Acquire("1.2.3.4")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		release()
	}
	if _, err := l.Acquire("1.2.3.4"); !isRateLimit(err) {
		t.Fatalf("4th request in the window: %v", err)
	}
	if release, err := l.Acquire("5.6.7.8"); err != nil {
		t.Fatalf("another address: %v", err)
	} else {
		release()
	}
	clk.advance(time.Minute)
	if _, err := l.Acquire("1.2.3.4"); err != nil {
		t.Fatalf("next window: %v", err)
	}
}

func TestLimiterInFlight(t *testing.T) {
	l := NewLimiter(RateLimit{Requests: -1, InFlight: 2}, nil)
	r1, err1 := l.Acquire("ip")
	r2, err2 := l.Acquire("ip")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if _, err := l.Acquire("ip"); !isRateLimit(err) {
		t.Fatalf("third in flight: %v", err)
	}
	r1()
	r1() // a second release is ignored
	r3, err := l.Acquire("ip")
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	if _, err := l.Acquire("ip"); !isRateLimit(err) {
		t.Fatalf("double release freed two slots: %v", err)
	}
	r2()
	r3()
}

func TestLimiterDefaultsAndTable(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := NewLimiter(RateLimit{MaxIPs: 3}, clk.now)
	if l.cfg.Requests != 10_000 || l.cfg.Window != time.Minute || l.cfg.InFlight != 2_000 || l.cfg.TTL != time.Hour {
		t.Fatalf("defaults %+v", l.cfg)
	}
	held, _ := l.Acquire("held")
	for i := range 10 {
		release, err := l.Acquire("ip" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		release()
		if l.Len() > 3 {
			t.Fatalf("table holds %d addresses, max 3", l.Len())
		}
	}
	// The address with a request in flight was kept.
	l.mu.Lock()
	kept := l.mu.ips.Contains("held")
	l.mu.Unlock()
	if !kept {
		t.Fatal("an address with a request in flight was forgotten")
	}
	held()
	// Entries expire TTL after they were first seen: the window count starts again.
	l2 := NewLimiter(RateLimit{Requests: 1, Window: 2 * time.Hour, TTL: time.Hour}, clk.now)
	r, _ := l2.Acquire("x")
	r()
	if _, err := l2.Acquire("x"); !isRateLimit(err) {
		t.Fatalf("second request: %v", err)
	}
	clk.advance(time.Hour)
	if _, err := l2.Acquire("x"); err != nil {
		t.Fatalf("after the TTL: %v", err)
	}
}

// With every address of a full table busy, room is still made, after passing over
// busyTries of them: the table never grows past MaxIPs, and a request is never refused for
// want of room.
func TestLimiterFullOfBusyAddresses(t *testing.T) {
	l := NewLimiter(RateLimit{MaxIPs: 4}, nil)
	for i := range 20 {
		if _, err := l.Acquire("busy" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		if l.Len() > 4 {
			t.Fatalf("table holds %d addresses, max 4", l.Len())
		}
	}
}

// BenchmarkLimiterNewAddresses: every request from an address not seen before, on a full
// table of 100,000 (a client rotating its address): making room is O(1).
func BenchmarkLimiterNewAddresses(b *testing.B) {
	l := NewLimiter(RateLimit{MaxIPs: 100_000}, nil)
	for i := range 100_000 {
		r, _ := l.Acquire("warm" + strconv.Itoa(i))
		r()
	}
	b.ResetTimer()
	for i := range b.N {
		r, err := l.Acquire("new" + strconv.Itoa(i))
		if err != nil {
			b.Fatal(err)
		}
		r()
	}
}
