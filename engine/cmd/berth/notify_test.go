package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/tlstest"
)

// berth start tells systemd's notification socket that it serves (with its addresses), reads
// its TLS certificate again on SIGHUP, framed by RELOADING=1 and READY=1, and says STOPPING=1
// when it drains.
func TestStartNotifiesAndReloadsOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "test")
	certFile, keyFile := ca.Issue(t, dir, "guard", "127.0.0.1")

	sock := filepath.Join(dir, "notify")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	next := func(want string) string {
		t.Helper()
		_ = ln.SetReadDeadline(time.Now().Add(30 * time.Second))
		buf := make([]byte, 4096)
		n, err := ln.Read(buf)
		if err != nil {
			t.Fatalf("waiting for %q on the notification socket: %v", want, err)
		}
		if got := string(buf[:n]); !strings.HasPrefix(got, want) {
			t.Fatalf("notification %q, want %q first", got, want)
		}
		return string(buf[:n])
	}

	env := []string{"NOTIFY_SOCKET=" + sock, "BERTH__database__url=mem://",
		"BERTH__guard__host=127.0.0.1", "BERTH__guard__port=0", "BERTH__api_peer__host=127.0.0.1",
		"BERTH__api_peer__port=0", "BERTH__metrics__host=127.0.0.1", "BERTH__metrics__port=0",
		"BERTH__guard__tls__cert_file=" + certFile, "BERTH__guard__tls__key_file=" + keyFile,
		"BERTH__log__level=warn"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- start(ctx, nil, env) }()

	ready := next("READY=1\n")
	m := regexp.MustCompile(`public (127\.0\.0\.1:\d+)`).FindStringSubmatch(ready)
	if m == nil {
		t.Fatalf("READY without the public address: %q", ready)
	}
	serial := func() *big.Int {
		t.Helper()
		c, err := tls.Dial("tcp", m[1], &tls.Config{RootCAs: ca.Pool()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber
	}
	first := serial()

	// A renewal that keeps the files' modification times: only SIGHUP makes berth see it.
	var stamps [2]time.Time
	for i, f := range []string{certFile, keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		stamps[i] = st.ModTime()
	}
	ca.Issue(t, dir, "guard", "127.0.0.1")
	for i, f := range []string{certFile, keyFile} {
		if err := os.Chtimes(f, stamps[i], stamps[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	next("RELOADING=1")
	next("READY=1")
	if second := serial(); second.Cmp(first) == 0 {
		t.Fatal("after SIGHUP the guard port still serves the certificate read at start")
	}

	cancel() // what SIGTERM does in main
	next("STOPPING=1")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("start: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("berth start did not return after its context ended")
	}
}

// The notifier sends to abstract sockets too, and is nil without NOTIFY_SOCKET.
func TestSDNotifierAddresses(t *testing.T) {
	if sdNotifier("") != nil || sdNotifier("relative/path") != nil {
		t.Fatal("a notifier without a usable NOTIFY_SOCKET")
	}
	name := "berth-test-" + strings.ReplaceAll(t.Name(), "/", "-") + time.Now().Format("150405.000000000")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: "\x00" + name, Net: "unixgram"})
	if err != nil {
		t.Skipf("abstract unix sockets are not available here: %v", err)
	}
	defer ln.Close()
	sdNotifier("@" + name)("READY=1")
	_ = ln.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, err := ln.Read(buf)
	if err != nil || string(buf[:n]) != "READY=1" {
		t.Fatalf("abstract socket got %q, %v", buf[:n], err)
	}
}

// onFirstReady passes every state on, and runs its function once, after the first READY=1.
func TestOnFirstReady(t *testing.T) {
	var got []string
	notify := onFirstReady(func(state string) { got = append(got, state) }, func() { got = append(got, "f") })
	for _, state := range []string{"READY=1\nSTATUS=serving", "RELOADING=1", "READY=1", "STOPPING=1"} {
		notify(state)
	}
	want := []string{"READY=1\nSTATUS=serving", "f", "RELOADING=1", "READY=1", "STOPPING=1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("calls %q, want %q", got, want)
	}
	ran := 0
	onFirstReady(nil, func() { ran++ })("READY=1")
	if ran != 1 {
		t.Fatalf("without a notifier the function ran %d times, want 1", ran)
	}
}

// berth start gives back its binary's pages once it serves (docs/benchmarks.md) and reads
// them back into the page cache as it stops, and neither with node.keep_binary_pages.
func TestStartGivesBackTheBinarysPages(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprint("keep_binary_pages=", keep), func(t *testing.T) {
			logs := &logWatch{}
			started := logs.await("berth started")
			gaveBack := logs.await("gave back the binary's pages")
			readBack := logs.await("reading the binary back into the page cache")
			env := []string{"BERTH__database__url=mem://", "BERTH__guard__host=127.0.0.1", "BERTH__guard__port=0",
				"BERTH__api_peer__host=127.0.0.1", "BERTH__api_peer__port=0", "BERTH__metrics__host=127.0.0.1",
				"BERTH__metrics__port=0", "BERTH__log__level=debug", fmt.Sprint("BERTH__node__keep_binary_pages=", keep)}
			c := &cli{stdio: stdio{out: io.Discard, err: logs, environ: env}}
			root := c.rootCommand()
			root.SetArgs([]string{"start"})
			root.SetOut(io.Discard)
			root.SetErr(io.Discard)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- root.ExecuteContext(ctx) }()
			wait := func(ch <-chan struct{}, what string) {
				t.Helper()
				select {
				case <-ch:
				case err := <-done:
					t.Fatalf("berth start returned (%v) before logging %q", err, what)
				case <-time.After(30 * time.Second):
					t.Fatalf("no %q in the log within 30 s", what)
				}
			}
			wait(started, "berth started")
			if !keep {
				wait(gaveBack, "gave back the binary's pages")
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("start: %v", err)
			}
			for what, ch := range map[string]<-chan struct{}{"given back": gaveBack, "read back": readBack} {
				select {
				case <-ch:
					if keep {
						t.Fatalf("the binary's pages were %s with node.keep_binary_pages=true", what)
					}
				default:
					if !keep {
						t.Fatalf("the binary's pages were not %s", what)
					}
				}
			}
		})
	}
}

// An engine that stops before its binary's pages are due to be given back gives none back,
// even if the release's timer fires as it stops, and reads nothing back.
func TestStopBeforeTheReleaseGivesNothingBack(t *testing.T) {
	var out strings.Builder
	b := &binaryPages{log: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	b.releaseLater()
	b.restore()
	if b.timer.Stop() {
		t.Fatal("the release was still due after the engine stopped")
	}
	b.release() // a timer that fired as the engine stopped
	if b.released || out.Len() > 0 {
		t.Fatalf("released %v after a stop; log:\n%s", b.released, out.String())
	}
}

// logWatch is a log destination that closes a channel when a line containing a string is
// written.
type logWatch struct {
	mu    sync.Mutex
	wants map[string]chan struct{}
}

func (w *logWatch) await(s string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wants == nil {
		w.wants = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	w.wants[s] = ch
	return ch
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for s, ch := range w.wants {
		if strings.Contains(string(p), s) {
			close(ch)
			delete(w.wants, s)
		}
	}
	return len(p), nil
}
