package pegboard

import (
	"context"
	"time"
)

// scanLoop is the skeleton the runner and envoy lifecycle loops share: scan the store for
// due work every interval (or at once when kicked), scan again at once while a scan comes
// back with more, and count deadlines from the node's start for one lost threshold, so that
// hosts get that long to reconnect after an engine restart.
type scanLoop struct {
	lost     time.Duration // the lost threshold
	interval time.Duration
	started  time.Time
	kick     chan struct{}
}

// newScanLoop returns a loop for lost threshold lost; an interval of zero means lost/15,
// within [50 ms, 1 s].
func newScanLoop(lost, interval time.Duration) scanLoop {
	if interval <= 0 {
		interval = min(max(lost/15, 50*time.Millisecond), time.Second)
	}
	return scanLoop{lost: lost, interval: interval, started: time.Now(), kick: make(chan struct{}, 1)}
}

// run calls scan until ctx ends: every interval, at a kick, and again at once while it
// reports more.
func (l *scanLoop) run(ctx context.Context, scan func(context.Context) (more bool)) {
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		for scan(ctx) && ctx.Err() == nil {
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-l.kick:
		}
	}
}

// kickNow makes the loop scan now.
func (l *scanLoop) kickNow() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// cutoff is the time before which a ping or a drain start is too old. For one lost
// threshold after this node started, it counts from the start instead.
func (l *scanLoop) cutoff(now time.Time) int64 {
	if grace := l.started.Add(l.lost); now.Before(grace) {
		now = l.started
	}
	return now.Add(-l.lost).UnixMilli()
}
