package textpages

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Release unmaps this process's read-only mappings of its executable that hold no private
// copy of a page, and returns how many of their bytes were resident. They are marked first
// not to be mapped in huge pages (MADV_NOHUGEPAGE) nor read ahead (MADV_RANDOM), then
// reclaimed where no other process maps them (MADV_PAGEOUT: unmapped and dropped from the
// page cache in one call, so that the engine's other threads, running meanwhile, cannot map
// a whole cached folio back between the two), then unmapped (MADV_DONTNEED); last the
// executable's cached pages that no process maps are dropped (POSIX_FADV_DONTNEED), so
// that a fault reads back one page. Unmapping loses nothing: the pages are the file's.
func Release() (uint64, error) {
	f, err := openExecutable()
	if err != nil {
		return 0, err
	}
	defer f.Close()
	exe := f.Name()
	// The drop skips dirty pages: a binary the linker or an installer has just written is
	// written back first (best effort: on a read-only file system there is nothing to write).
	_ = unix.Fdatasync(int(f.Fd()))
	released, err := unmap(exe)
	if err != nil {
		return released, err
	}
	return released, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// Restore asks the kernel to read the executable back into the page cache
// (POSIX_FADV_WILLNEED: the reads are queued and go on after the call returns), so that
// the binary's next start, in any process, does not read from disk what Release dropped. A
// process that released its pages calls it as it stops, when its own memory no longer
// matters. The kernel reads at most a read-ahead window per call (8 MiB here, 128 KiB by
// default), so the file is asked for in windows of the smallest: about 470 calls for
// berth's 59 MiB, 5 ms.
func Restore() error {
	f, err := openExecutable()
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	for off := int64(0); off < info.Size(); off += restoreWindow {
		if err := unix.Fadvise(int(f.Fd()), off, restoreWindow, unix.FADV_WILLNEED); err != nil {
			return err
		}
	}
	return nil
}

// openExecutable opens this process's executable; its Name is the executable's path.
func openExecutable() (*os.File, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return os.Open(exe)
}

// restoreWindow is the span of one of Restore's requests: Linux's default read-ahead.
const restoreWindow = 128 << 10

// unmap advises and unmaps the executable's read-only mappings, and returns how many of
// their bytes were resident.
func unmap(exe string) (uint64, error) {
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	var resident uint64
	for _, m := range parseSmaps(smaps) {
		if m.path != exe || m.writable || m.anonymous > 0 || m.rss == 0 {
			continue
		}
		for _, advice := range []int{unix.MADV_NOHUGEPAGE, unix.MADV_RANDOM, unix.MADV_PAGEOUT, unix.MADV_DONTNEED} {
			_, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, uintptr(advice))
			if errno == unix.EINVAL && advice == unix.MADV_PAGEOUT {
				continue // before Linux 5.4: the unmapping and the drop below do most of it
			}
			if errno != 0 {
				return resident, fmt.Errorf("madvise %x-%x: %w", m.start, m.end, errno)
			}
		}
		resident += m.rss
	}
	return resident, nil
}

// mapping is one entry of /proc/self/smaps, with the fields Release reads.
type mapping struct {
	start, end     uintptr
	writable       bool
	path           string
	rss, anonymous uint64 // bytes
}

// parseSmaps reads the mappings of an smaps file: a header line per mapping ("start-end
// perms offset dev inode [path]") followed by "Name: value kB" lines.
func parseSmaps(data []byte) []mapping {
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		if m, ok := parseHeader(fields); ok {
			out = append(out, m)
			continue
		}
		if len(out) == 0 {
			continue
		}
		kb, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "Rss:":
			out[len(out)-1].rss = kb << 10
		case "Anonymous:":
			out[len(out)-1].anonymous = kb << 10
		}
	}
	return out
}

func parseHeader(fields []string) (mapping, bool) {
	lo, hi, ok := strings.Cut(fields[0], "-")
	if !ok || len(fields) < 5 {
		return mapping{}, false
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil {
		return mapping{}, false
	}
	m := mapping{start: uintptr(start), end: uintptr(end), writable: strings.Contains(fields[1], "w")}
	if len(fields) > 5 {
		m.path = strings.Join(fields[5:], " ")
	}
	return m, true
}
