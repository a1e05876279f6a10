//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package embedded

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockConflict reports whether err is fcntl's answer to a lock another process holds. Only
// then is the lock file opened to ask who: closing any descriptor of a file drops the
// locks this process holds on it.
func lockConflict(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES)
}

// lockHolder reports whether another process holds the write lock of the file lock (as
// pebble takes it: fcntl F_SETLK on the whole file), and its process id (0 when unknown).
func lockHolder(lock string) (pid int, held bool) {
	f, err := os.Open(lock)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil || lk.Type == syscall.F_UNLCK {
		return 0, false
	}
	return int(lk.Pid), true
}

// commandLine is the command line of the process pid, where /proc shows it ("" otherwise).
func commandLine(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}
