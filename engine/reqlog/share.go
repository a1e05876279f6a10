package reqlog

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/pubsub"
)

// Sharing across a datacenter's nodes (Log.Share): a node with watchers announces their
// actors on interestSubject every interestEvery (and at once when a watch starts); a node
// serving a request to an actor announced within interestTTL publishes it on entrySubject,
// and every node hands what it receives there to its own watchers of that actor.
const (
	interestSubject = "reqlog.interest"
	entrySubject    = "reqlog.entry"
	interestEvery   = 5 * time.Second
	interestTTL     = 3 * interestEvery
	// maxRemote bounds the actors other nodes may have this node publish for.
	maxRemote = 16 * MaxWatchers
)

// remote is what the other nodes watch, and where this node publishes for them.
type remote struct {
	bus  pubsub.PubSub
	node string
	// ctx ends with Share's; announce asks the announcer to announce now.
	ctx      context.Context
	announce chan struct{}

	mu    sync.Mutex
	until map[id.ID]time.Time // actor → when the last announcement expires
	size  atomic.Int32        // len(until): with none, watched costs one atomic load
}

type interest struct {
	Node   string  `json:"node"`
	Actors []id.ID `json:"actors"`
}

type sharedEntry struct {
	Node  string `json:"node"`
	Actor id.ID  `json:"actor"`
	Entry Entry  `json:"entry"`
}

// Share connects l to the other nodes on bus, node naming this one, until ctx ends. It
// subscribes before it returns, so that it misses nothing published after.
func (l *Log) Share(ctx context.Context, bus pubsub.PubSub, node string) error {
	interests, err := bus.Subscribe(ctx, interestSubject)
	if err != nil {
		return err
	}
	entries, err := bus.Subscribe(ctx, entrySubject)
	if err != nil {
		_ = interests.Unsubscribe()
		return err
	}
	r := &remote{bus: bus, node: node, ctx: ctx, announce: make(chan struct{}, 1), until: map[id.ID]time.Time{}}
	l.remote.Store(r)
	go l.announceLoop(r)
	go func() {
		defer interests.Unsubscribe()
		for {
			m, err := interests.Next(ctx)
			if err != nil {
				return
			}
			var in interest
			if json.Unmarshal(m.Data, &in) == nil && in.Node != node {
				r.note(in.Actors)
			}
		}
	}()
	go func() {
		defer entries.Unsubscribe()
		for {
			m, err := entries.Next(ctx)
			if err != nil {
				return
			}
			var se sharedEntry
			if json.Unmarshal(m.Data, &se) == nil && se.Node != node {
				l.Record(se.Actor, se.Entry)
			}
		}
	}()
	return nil
}

// note records that another node watches actors.
func (r *remote) note(actors []id.ID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for aid, t := range r.until {
		if now.After(t) {
			delete(r.until, aid)
		}
	}
	for _, aid := range actors {
		if _, ok := r.until[aid]; ok || len(r.until) < maxRemote {
			r.until[aid] = now.Add(interestTTL)
		}
	}
	r.size.Store(int32(len(r.until)))
}

// watched reports whether another node watched aid lately.
func (r *remote) watched(aid id.ID) bool {
	if r.size.Load() == 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.until[aid]
	if ok && time.Now().After(t) {
		delete(r.until, aid)
		r.size.Store(int32(len(r.until)))
		return false
	}
	return ok
}

// publish sends e, served here to actor aid, to the other nodes.
func (r *remote) publish(aid id.ID, e Entry) {
	b, err := json.Marshal(sharedEntry{Node: r.node, Actor: aid, Entry: e})
	if err == nil {
		_ = r.bus.Publish(r.ctx, entrySubject, b)
	}
}

// announceLoop announces the actors watched here, at once when asked and every
// interestEvery while there are any.
func (l *Log) announceLoop(r *remote) {
	t := time.NewTicker(interestEvery)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		case <-r.announce:
		}
		l.mu.RLock()
		actors := make([]id.ID, 0, len(l.watchers))
		for aid := range l.watchers {
			actors = append(actors, aid)
		}
		l.mu.RUnlock()
		if len(actors) == 0 {
			continue
		}
		if b, err := json.Marshal(interest{Node: r.node, Actors: actors}); err == nil {
			_ = r.bus.Publish(r.ctx, interestSubject, b)
		}
	}
}
