package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress reports how far a long operation has come, on stderr. On a terminal it redraws
// one bar in place (at most every 100 ms); elsewhere (a file, a pipe, CI logs) it writes a
// plain line every `every` and a last one at the end. It is safe for concurrent use.
type progress struct {
	w     io.Writer
	tty   bool
	label string
	unit  string
	every time.Duration

	mu      sync.Mutex
	total   int64 // 0: unknown
	n       int64
	last    time.Time // when the last report was written
	started time.Time
	written bool // something was drawn on the terminal line
}

func (c *cli) newProgress(label, unit string, total int64) *progress {
	p := &progress{w: c.err, tty: isTerminal(c.err), label: label, unit: unit, every: c.progressEvery, total: total, started: time.Now()}
	if p.every <= 0 {
		p.every = 2 * time.Second
	}
	return p
}

// Set records that n units are done (of total, when total > 0; a negative total keeps it).
func (p *progress) Set(n, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n = n
	if total >= 0 {
		p.total = total
	}
	p.maybeReport()
}

// Add records d more units done.
func (p *progress) Add(d int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n += d
	p.maybeReport()
}

func (p *progress) maybeReport() {
	now := time.Now()
	interval := p.every
	if p.tty {
		interval = 100 * time.Millisecond
	}
	if !p.last.IsZero() && now.Sub(p.last) < interval {
		return
	}
	p.last = now
	p.report(false)
}

// Done writes the final state; on a terminal it ends the bar's line.
func (p *progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.report(true)
	if p.tty {
		fmt.Fprintln(p.w)
	}
}

func (p *progress) report(final bool) {
	count := fmt.Sprintf("%d", p.n)
	if p.total > 0 {
		count = fmt.Sprintf("%d/%d", p.n, p.total)
	}
	if p.unit != "" {
		count += " " + p.unit
	}
	elapsed := time.Since(p.started).Truncate(100 * time.Millisecond)
	if !p.tty {
		state := ""
		if final {
			state = " done"
		}
		fmt.Fprintf(p.w, "%s: %s (%s)%s\n", p.label, count, elapsed, state)
		return
	}
	const width = 30
	bar := ""
	if p.total > 0 {
		filled := int(min(p.n, p.total) * width / p.total)
		bar = "[" + strings.Repeat("=", filled) + strings.Repeat(" ", width-filled) + "] "
	}
	fmt.Fprintf(p.w, "\r\033[K%s %s%s (%s)", p.label, bar, count, elapsed)
	p.written = true
}
