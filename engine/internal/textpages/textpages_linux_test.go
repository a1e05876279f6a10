package textpages

import (
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const sample = `00400000-00402000 r--p 00000000 fe:00 10340161                           /opt/berth/bin/berth
Size:                  8 kB
Rss:                   8 kB
Anonymous:             0 kB
00402000-01728000 r-xp 00002000 fe:00 10340161                           /opt/berth/bin/berth
Size:              19608 kB
Rss:               18936 kB
Anonymous:             0 kB
02b80000-02b81000 r--p 02780000 fe:00 10340161                           /opt/berth/bin/berth
Rss:                   4 kB
Anonymous:             4 kB
02b81000-02c58000 rw-p 02781000 fe:00 10340161                           /opt/berth/bin/my data
Rss:                 860 kB
Anonymous:           120 kB
317142400000-317142c00000 rw-p 00000000 00:00 0 
Rss:                2756 kB
Anonymous:          2756 kB
`

func TestParseSmaps(t *testing.T) {
	got := parseSmaps([]byte(sample))
	want := []mapping{
		{start: 0x400000, end: 0x402000, path: "/opt/berth/bin/berth", rss: 8 << 10},
		{start: 0x402000, end: 0x1728000, path: "/opt/berth/bin/berth", rss: 18936 << 10},
		{start: 0x2b80000, end: 0x2b81000, path: "/opt/berth/bin/berth", rss: 4 << 10, anonymous: 4 << 10},
		{start: 0x2b81000, end: 0x2c58000, writable: true, path: "/opt/berth/bin/my data", rss: 860 << 10, anonymous: 120 << 10},
		{start: 0x317142400000, end: 0x317142c00000, writable: true, rss: 2756 << 10, anonymous: 2756 << 10},
	}
	if len(got) != len(want) {
		t.Fatalf("%d mappings, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// written is in the executable's writable data: Release must leave it alone.
var written = []int{1, 2, 3}

// Release unmaps the test binary's own read-only pages: what is resident of them drops, and
// the process runs on, its data intact.
func TestReleaseUnmapsTheExecutable(t *testing.T) {
	written[1] = 20
	before := residentText(t)
	n, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	after := residentText(t)
	t.Logf("resident read-only pages of the executable: %d kB, released %d kB, then %d kB", before>>10, n>>10, after>>10)
	if n == 0 || after >= before {
		t.Fatalf("released %d bytes; resident %d bytes before, %d after", n, before, after)
	}
	if written[0] != 1 || written[1] != 20 || written[2] != 3 {
		t.Fatalf("writable data changed: %v", written)
	}
}

// residentText is what is resident of the executable's read-only mappings.
func residentText(t *testing.T) uint64 {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var rss uint64
	for _, m := range parseSmaps(data) {
		if m.path == exe && !m.writable {
			rss += m.rss
		}
	}
	return rss
}

// Restore reads the executable back into the page cache after Release dropped it: the
// reads it queues go on after it returns, so the test waits for them, up to 10 s.
func TestRestoreReadsTheExecutableBack(t *testing.T) {
	if _, err := Release(); err != nil {
		t.Fatal(err)
	}
	if err := Restore(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		cached, size := cachedPages(t)
		if cached == size {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the executable's %d pages in the page cache 10 s after Restore", cached, size)
		}
		time.Sleep(10 * time.Millisecond) // the kernel's reads end with no event to wait on
	}
}

// cachedPages is how many of the executable's pages are in the page cache, and of how many.
func cachedPages(t *testing.T) (cached, size int) {
	t.Helper()
	f, err := openExecutable()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(info.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	for _, v := range vec {
		cached += int(v & 1)
	}
	return cached, len(vec)
}
