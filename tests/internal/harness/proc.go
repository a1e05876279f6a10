package harness

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/berthhq/berth/tests/proc"
)

// Event is one JSON line of a helper process (see package tests/proc).
type Event = proc.Event

// Proc is a helper process in its own process group whose stdout is read line by line as
// Events; commands go to its stdin. It is a proc.Proc whose waits fail the test.
type Proc struct {
	*proc.Proc
	t testing.TB
}

// StartNode runs `node script args...` in tests/npm with extra environment env.
func StartNode(t testing.TB, name, script string, env []string, args ...string) *Proc {
	t.Helper()
	cmd := exec.Command("node", append([]string{script}, args...)...)
	cmd.Dir = NPMDir
	cmd.Env = append(os.Environ(), env...)
	return StartProc(t, name, cmd)
}

// StartProc starts cmd (stdin, stdout and stderr unset) in its own process group; the test's
// cleanup closes its stdin, kills it and prints its output if the test failed.
func StartProc(t testing.TB, name string, cmd *exec.Cmd) *Proc {
	t.Helper()
	p, err := proc.Start(name, cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("%s output:\n%s\n%s stderr:\n%s", name, p.Transcript(), name, Tail(p.Stderr(), 30))
		}
	})
	return &Proc{Proc: p, t: t}
}

// Send writes one command line to the process's stdin. A process that has already ended
// cannot take it; the next Await reports that if it matters.
func (p *Proc) Send(line string) {
	p.t.Helper()
	if err := p.Proc.Send(line); err != nil {
		p.t.Log(err)
	}
}

// Await returns the first event after the last awaited one that ok accepts; it fails the
// test if none comes within the timeout or the process ends first. Events it passes over
// stay in the transcript.
func (p *Proc) Await(what string, within time.Duration, ok func(Event) bool) Event {
	p.t.Helper()
	ev, err := p.Proc.Await(what, within, ok)
	if err != nil {
		p.t.Fatal(err)
	}
	return ev
}

// AwaitEv awaits the next event named name.
func (p *Proc) AwaitEv(name string, within time.Duration) Event {
	p.t.Helper()
	return p.Await(name, within, func(ev Event) bool { return ev.Ev == name })
}

// Tail returns the last n lines of b.
func Tail(b []byte, n int) string { return proc.Tail(b, n) }
