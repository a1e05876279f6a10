package pegboard

import (
	"sync"

	"github.com/berthhq/berth/pkg/id"
)

// Watchers is what waits, on this node, for actors to change: gateway requests and cached
// routes, destroys that wait. The lifecycle reports the changes it commits (Actors.Apply),
// and the cluster those other nodes announce (engine/cluster), so that waiters here follow
// changes made anywhere in the datacenter.
type Watchers struct {
	mu       sync.Mutex
	watchers map[id.ID]chan struct{}        // closed at the actor's next change
	onChange map[id.ID]map[*func()]struct{} // called at the actor's next change (OnChange)
}

// NewWatchers returns an empty set of watchers.
func NewWatchers() *Watchers {
	return &Watchers{watchers: map[id.ID]chan struct{}{}, onChange: map[id.ID]map[*func()]struct{}{}}
}

// Watch returns a channel closed at the actor's next change (it became ready, stopped, or
// was destroyed). Callers read the actor again after it closes.
func (w *Watchers) Watch(aid id.ID) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.watchers[aid]
	if !ok {
		ch = make(chan struct{})
		w.watchers[aid] = ch
	}
	return ch
}

// OnChange calls f once, on a goroutine of its own, at the actor's next change (as Watch);
// stop cancels the call if it has not been made. It is Watch without a goroutine waiting on
// the channel for every caller: a gateway request watches its actor.
func (w *Watchers) OnChange(aid id.ID, f func()) (stop func()) {
	key := &f
	w.mu.Lock()
	fs := w.onChange[aid]
	if fs == nil {
		fs = map[*func()]struct{}{}
		w.onChange[aid] = fs
	}
	fs[key] = struct{}{}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		if fs := w.onChange[aid]; fs != nil {
			delete(fs, key)
			if len(fs) == 0 {
				delete(w.onChange, aid)
			}
		}
		w.mu.Unlock()
	}
}

// Changed wakes what waits on the actors: they changed, here or on another node.
func (w *Watchers) Changed(actors []id.ID) {
	for _, aid := range actors {
		w.mu.Lock()
		ch, ok := w.watchers[aid]
		delete(w.watchers, aid)
		fs := w.onChange[aid]
		delete(w.onChange, aid)
		w.mu.Unlock()
		if ok {
			close(ch)
		}
		for f := range fs {
			go (*f)()
		}
	}
}
