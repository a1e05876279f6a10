package proc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Event is one JSON line of a helper process; each program fills the fields it knows (the
// scripts in tests/npm and the Go programs in tests/ document theirs).
type Event struct {
	Ev string `json:"ev"`

	// Runners.
	RunnerKey                  string `json:"runnerKey"`
	RunnerID                   string `json:"runnerId"`
	RunnerLostThreshold        *int64 `json:"runnerLostThreshold"`
	ActorStopThreshold         *int64 `json:"actorStopThreshold"`
	ServerlessDrainGracePeriod *int64 `json:"serverlessDrainGracePeriod"`
	Ts                         int64  `json:"ts"`
	Code                       int    `json:"code"`
	Reason                     string `json:"reason"`
	Command                    string `json:"command"`
	Message                    string `json:"message"`
	Protocol                   string `json:"protocol"`
	Tag                        string `json:"tag"`
	What                       string `json:"what"`
	Status                     int    `json:"status"`
	Body                       string `json:"body"`

	// Actors.
	ActorID    string  `json:"actorId"`
	Generation int     `json:"generation"`
	Name       string  `json:"name"`
	Key        *string `json:"key"`
	Input      *string `json:"input"` // base64

	At   time.Time `json:"-"` // when the line was read
	Line string    `json:"-"`
}

// Proc is a helper process in its own process group whose stdout is read line by line as
// Events; commands go to its stdin.
type Proc struct {
	Name string

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *lockedBuffer
	exited chan struct{} // closed after the output is read and the process waited for

	mu     sync.Mutex
	events []Event
	done   bool          // the output ended
	wake   chan struct{} // closed and replaced at each new event
	cursor int           // events before it have been consumed by Await
}

// Start starts cmd in its own process group, which dies with the calling process (SIGKILL as
// parent-death signal). Its stdin is a pipe (Send, CloseStdin); stdout, when cmd leaves it
// unset, is read as events, else it goes where cmd says and no event comes; stderr, when
// unset, is kept for Stderr. The caller stops the process with Stop, Kill or Signal.
func Start(name string, cmd *exec.Cmd) (*Proc, error) {
	p := &Proc{Name: name, cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan struct{}), wake: make(chan struct{})}
	if p.cmd.Stderr == nil {
		p.cmd.Stderr = p.stderr
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var stdout io.Reader = eof{}
	if p.cmd.Stdout == nil {
		out, err := p.cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		stdout = out
	}
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go p.read(stdout)
	return p, nil
}

// eof is the output of a process whose stdout goes elsewhere.
type eof struct{}

func (eof) Read([]byte) (int, error) { return 0, io.EOF }

// read collects the process's events until its output ends, then waits for the process.
func (p *Proc) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		ev := Event{At: time.Now(), Line: sc.Text()}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			ev = Event{Ev: "unparsed", At: ev.At, Line: ev.Line}
		}
		p.mu.Lock()
		p.events = append(p.events, ev)
		close(p.wake)
		p.wake = make(chan struct{})
		p.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, stdout)
	_ = p.cmd.Wait()
	p.mu.Lock()
	p.done = true
	close(p.wake)
	p.mu.Unlock()
	close(p.exited)
}

// Exited is closed once the process has exited and its output is read.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// ExitCode waits until the process has exited and returns its exit status (-1 when a signal
// ended it).
func (p *Proc) ExitCode() int {
	<-p.exited
	return p.cmd.ProcessState.ExitCode()
}

// PID is the process's id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Send writes one command line to the process's stdin.
func (p *Proc) Send(line string) error {
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		return fmt.Errorf("%s: send %q: %w", p.Name, line, err)
	}
	return nil
}

// CloseStdin closes the process's stdin (the scripts in tests/npm exit when it ends).
func (p *Proc) CloseStdin() { p.stdin.Close() }

// Kill sends SIGKILL to the process group.
func (p *Proc) Kill() { p.Signal(syscall.SIGKILL) }

// Signal sends sig to the process group.
func (p *Proc) Signal(sig syscall.Signal) {
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
}

// Stop closes stdin, kills the process group and waits until the process is gone.
func (p *Proc) Stop() {
	p.stdin.Close()
	p.Kill()
	<-p.exited
}

// Await returns the first event after the last awaited one that ok accepts; it fails if none
// comes within the timeout or the process ends first. Events it passes over stay in the
// transcript.
func (p *Proc) Await(what string, within time.Duration, ok func(Event) bool) (Event, error) {
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		p.mu.Lock()
		for p.cursor < len(p.events) {
			ev := p.events[p.cursor]
			p.cursor++
			if ok(ev) {
				p.mu.Unlock()
				return ev, nil
			}
		}
		done, wake := p.done, p.wake
		p.mu.Unlock()
		if done {
			return Event{}, fmt.Errorf("%s ended before %s; its output:\n%s\nstderr:\n%s", p.Name, what, p.Transcript(), Tail(p.stderr.Bytes(), 30))
		}
		select {
		case <-wake:
		case <-timer.C:
			return Event{}, fmt.Errorf("%s: no %s within %v; its output:\n%s", p.Name, what, within, Tail([]byte(p.Transcript()), 60))
		}
	}
}

// AwaitEv awaits the next event named name.
func (p *Proc) AwaitEv(name string, within time.Duration) (Event, error) {
	return p.Await(name, within, func(ev Event) bool { return ev.Ev == name })
}

// Seen returns every event read so far, awaited or not.
func (p *Proc) Seen() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.events...)
}

// Count returns how many events named name were read so far.
func (p *Proc) Count(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, ev := range p.events {
		if ev.Ev == name {
			n++
		}
	}
	return n
}

// Transcript is every event read so far, one per line with the time it was read.
func (p *Proc) Transcript() string {
	var b strings.Builder
	for _, ev := range p.Seen() {
		fmt.Fprintf(&b, "  %s %s\n", ev.At.Format("15:04:05.000"), ev.Line)
	}
	return b.String()
}

// Stderr returns what the process wrote to stderr so far.
func (p *Proc) Stderr() []byte { return p.stderr.Bytes() }

// lockedBuffer is a bytes.Buffer safe for the writer goroutine exec starts and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.b.Bytes()...)
}

// Tail returns the last n lines of b.
func Tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
