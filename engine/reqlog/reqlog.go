// Package reqlog fans the gateway requests out to the inspector's live request log of an
// actor. Nothing is kept: a request is handed to the actor's current watchers, if any, and
// forgotten; with Share, those of every node of the datacenter. With nobody watching, the
// gateway's check costs two atomic loads.
package reqlog

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/berthhq/berth/pkg/id"
)

// MaxWatchers bounds the watchers of one node; Watch refuses more.
const MaxWatchers = 64

// buffer is how many entries a slow watcher may fall behind before entries are dropped.
const buffer = 256

// Entry is one HTTP request the gateway served to an actor.
type Entry struct {
	Ts        int64   `json:"ts"` // unix ms, when it finished
	Method    string  `json:"method"`
	Path      string  `json:"path"`
	Status    int     `json:"status"`
	LatencyMs float64 `json:"latency_ms"`
}

// Log is one node's watchers, by actor. The zero value is ready.
type Log struct {
	count    atomic.Int32 // watchers, of every actor
	mu       sync.RWMutex
	watchers map[id.ID]map[*watcher]struct{}
	remote   atomic.Pointer[remote] // the other nodes, once shared
}

type watcher struct {
	c       chan Entry
	dropped atomic.Int64
}

// Watching reports whether anyone watches actor aid.
func (l *Log) Watching(aid id.ID) bool {
	if l == nil {
		return false
	}
	return l.watchingHere(aid) || l.watchedElsewhere(aid)
}

func (l *Log) watchingHere(aid id.ID) bool {
	if l.count.Load() == 0 {
		return false
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.watchers[aid]) > 0
}

func (l *Log) watchedElsewhere(aid id.ID) bool {
	r := l.remote.Load()
	return r != nil && r.watched(aid)
}

// Served records an HTTP request the gateway served to actor aid (guard.RequestObserver):
// for the watchers here, and for the other nodes when one of them watches it.
func (l *Log) Served(aid id.ID, method, path string, status int, d time.Duration) {
	e := Entry{Ts: time.Now().UnixMilli(), Method: method, Path: path, Status: status,
		LatencyMs: float64(d.Microseconds()) / 1000}
	l.Record(aid, e)
	if l.watchedElsewhere(aid) {
		l.remote.Load().publish(aid, e)
	}
}

// Record hands e to actor aid's watchers; a watcher whose buffer is full misses it.
func (l *Log) Record(aid id.ID, e Entry) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for w := range l.watchers[aid] {
		select {
		case w.c <- e:
		default:
			w.dropped.Add(1)
		}
	}
}

// Watch starts watching actor aid: entries arrive on the channel until stop is called.
// ok is false when the node has MaxWatchers already. dropped counts the entries missed.
func (l *Log) Watch(aid id.ID) (entries <-chan Entry, dropped func() int64, stop func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count.Load() >= MaxWatchers {
		return nil, nil, nil, false
	}
	if l.watchers == nil {
		l.watchers = map[id.ID]map[*watcher]struct{}{}
	}
	w := &watcher{c: make(chan Entry, buffer)}
	if l.watchers[aid] == nil {
		l.watchers[aid] = map[*watcher]struct{}{}
	}
	l.watchers[aid][w] = struct{}{}
	l.count.Add(1)
	if r := l.remote.Load(); r != nil {
		select {
		case r.announce <- struct{}{}:
		default:
		}
	}
	var once sync.Once
	return w.c, w.dropped.Load, func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			delete(l.watchers[aid], w)
			if len(l.watchers[aid]) == 0 {
				delete(l.watchers, aid)
			}
			l.count.Add(-1)
		})
	}, true
}
