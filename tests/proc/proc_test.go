package proc

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestEventsAndStop(t *testing.T) {
	cmd := exec.Command("sh", "-c", `echo '{"ev":"hello","runnerId":"r1"}'; echo 'not json'; read line; echo "{\"ev\":\"got\",\"message\":\"$line\"}"; sleep 30`)
	p, err := Start("sh", cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	ev, err := p.AwaitEv("hello", 5*time.Second)
	if err != nil || ev.RunnerID != "r1" {
		t.Fatalf("hello: %+v, %v", ev, err)
	}
	if err := p.Send("ping"); err != nil {
		t.Fatal(err)
	}
	if ev, err := p.AwaitEv("got", 5*time.Second); err != nil || ev.Message != "ping" {
		t.Fatalf("got: %+v, %v", ev, err)
	}
	if n := p.Count("unparsed"); n != 1 {
		t.Fatalf("unparsed lines: %d, want 1", n)
	}
	if _, err := p.AwaitEv("never", 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "no never within") {
		t.Fatalf("await of a missing event: %v", err)
	}
	p.Stop()
	if _, err := p.AwaitEv("never", time.Second); err == nil || !strings.Contains(err.Error(), "ended before") {
		t.Fatalf("await after exit: %v", err)
	}
}

func TestStat(t *testing.T) {
	if RSS(os.Getpid()) <= 0 {
		t.Fatal("RSS of this process is not positive")
	}
	if CPUTime(0) != 0 || RSS(-1) != 0 || Resident(-1) != (Memory{}) {
		t.Fatal("pid 0 or a missing process must read as 0")
	}
	// The kernel's VmRSS is the sum of the three parts; a test binary has both code pages
	// of its file and private heap.
	m := Resident(os.Getpid())
	if m.Anon <= 0 || m.File <= 0 {
		t.Fatalf("resident memory %+v: want both private and file pages", m)
	}
	if d := m.Total - (m.Anon + m.File + m.Shmem); d < -64<<10 || d > 64<<10 {
		t.Fatalf("resident memory %+v: VmRSS is not the sum of its parts", m)
	}
}

func TestTail(t *testing.T) {
	if got := Tail([]byte("a\nb\nc\n"), 2); got != "b\nc" {
		t.Fatalf("Tail = %q", got)
	}
}

func TestStdoutElsewhere(t *testing.T) {
	var out strings.Builder
	cmd := exec.Command("sh", "-c", `echo '{"ev":"hello"}'`)
	cmd.Stdout = &out
	p, err := Start("sh", cmd)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	if out.String() != "{\"ev\":\"hello\"}\n" || p.Count("hello") != 0 {
		t.Fatalf("stdout %q, events %d", out.String(), p.Count("hello"))
	}
}
