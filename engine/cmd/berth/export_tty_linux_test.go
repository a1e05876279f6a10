package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// openPTY opens a pseudo-terminal and returns its terminal side (what a shell gives a
// command as stdout) and its controlling side.
func openPTY(t *testing.T) (tty, ctl *os.File) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ctl.Close() })
	var unlock int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, ctl.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); errno != 0 {
		t.Fatalf("unlock the pseudo-terminal: %v", errno)
	}
	var n uint32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, ctl.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); errno != 0 {
		t.Fatalf("pseudo-terminal number: %v", errno)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty, ctl
}

// berth export with stdout a terminal and no --out refuses, before it opens the store;
// with --out it writes the file.
func TestExportRefusesATerminal(t *testing.T) {
	tty, _ := openPTY(t)
	dir := t.TempDir()
	db := "file://" + dir + "/store"
	var errOut bytes.Buffer
	code := run(context.Background(), []string{"export", "--db", db}, stdio{in: strings.NewReader(""), out: tty, err: &errOut})
	if want := "stdout is a terminal, and an export is binary: give --out FILE"; code != 2 || !strings.Contains(errOut.String(), want) {
		t.Errorf("export to a terminal: exit %d, stderr %q; want 2 and %q", code, errOut.String(), want)
	}
	if _, err := os.Stat(dir + "/store"); !os.IsNotExist(err) {
		t.Errorf("the refused export opened the store: %v", err)
	}
	errOut.Reset()
	out := dir + "/export.bin"
	code = run(context.Background(), []string{"export", "--db", db, "--out", out}, stdio{in: strings.NewReader(""), out: tty, err: &errOut})
	if fi, err := os.Stat(out); code != 0 || err != nil || fi.Size() == 0 {
		t.Errorf("export --out with a terminal stdout: exit %d, %v, stderr %q", code, err, errOut.String())
	}
}
