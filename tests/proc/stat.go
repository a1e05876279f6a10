package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUTime is the user plus system CPU time of process pid so far (0 for pid 0 or a process
// that is gone).
func CPUTime(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command (which may hold spaces) start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return 0
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks
}

// RSS is the resident memory of process pid in bytes (VmRSS in /proc/PID/status; 0 if it
// cannot be read).
func RSS(pid int) int64 { return Resident(pid).Total }

// Memory is a process's resident memory in bytes, split as /proc/PID/status splits it.
type Memory struct {
	Total int64 // VmRSS: the sum of the three below
	Anon  int64 // RssAnon: private memory (heap, stacks, written copies of the binary's pages)
	File  int64 // RssFile: pages of mapped files (the binary's code and read-only data) in the page cache
	Shmem int64 // RssShmem: shared memory
}

// Resident reads process pid's resident memory (zeros if it cannot be read).
func Resident(pid int) Memory {
	var m Memory
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m
	}
	fields := map[string]*int64{"VmRSS:": &m.Total, "RssAnon:": &m.Anon, "RssFile:": &m.File, "RssShmem:": &m.Shmem}
	for line := range strings.SplitSeq(string(b), "\n") {
		name, v, ok := strings.Cut(line, "\t")
		dst := fields[name]
		if !ok || dst == nil {
			continue
		}
		f := strings.Fields(v) // "123456 kB"
		if len(f) == 2 && f[1] == "kB" {
			kb, _ := strconv.ParseInt(f[0], 10, 64)
			*dst = kb << 10
		}
	}
	return m
}
