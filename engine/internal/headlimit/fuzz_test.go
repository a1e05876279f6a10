package headlimit

import (
	"testing"

	"github.com/berthhq/berth/pkg/rerr"
)

// scanAll scans b in pieces of at most size bytes (size ≤ 0: whole) and returns the error's
// key ("" for none) and whether the head was still being read at the end.
func scanAll(b []byte, size int) (string, bool) {
	c := &Conn{lim: Limits{MaxBytes: 64, MaxCount: 3}}
	c.Arm()
	if size <= 0 {
		size = len(b) + 1
	}
	for len(b) > 0 && c.armed.Load() {
		n := min(size, len(b))
		if e := c.scan(b[:n]); e != nil {
			return rerr.Key(e), c.armed.Load()
		}
		b = b[n:]
	}
	return "", c.armed.Load()
}

// However the bytes of a head arrive, the count reaches the same verdict: the same error,
// or none, and the head ended or not.
func FuzzScan(f *testing.F) {
	f.Add([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\nbody"), 3)
	f.Add([]byte("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n"), 1)
	f.Add([]byte("GET /"+string(make([]byte, 100))+" HTTP/1.1\r\n\r\n"), 7)
	f.Add([]byte("\n\n"), 1)
	f.Fuzz(func(t *testing.T, b []byte, size int) {
		wantKey, wantArmed := scanAll(b, 0)
		if gotKey, gotArmed := scanAll(b, size%17); gotKey != wantKey || gotArmed != wantArmed {
			t.Fatalf("in pieces of %d: %q %v; whole: %q %v", size%17, gotKey, gotArmed, wantKey, wantArmed)
		}
	})
}
