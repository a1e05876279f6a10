package embedded

import (
	"bytes"
	"sync"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/pkg/udb/internal/txn"
)

// watchSet holds armed watches by key.
type watchSet struct {
	mu    sync.Mutex
	max   int
	count int
	byKey map[string][]*txn.Watch
}

func newWatchSet(max int) *watchSet {
	if max <= 0 {
		max = udb.DefaultMaxWatches
	}
	return &watchSet{max: max, byKey: map[string][]*txn.Watch{}}
}

func (s *watchSet) remove(w *txn.Watch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeLocked(w)
}

func (s *watchSet) removeLocked(w *txn.Watch) {
	ws := s.byKey[string(w.Key)]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i], ws[i+1:]...)
			s.count--
			break
		}
	}
	if len(ws) == 0 {
		delete(s.byKey, string(w.Key))
	} else {
		s.byKey[string(w.Key)] = ws
	}
}

func (s *watchSet) failAll(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, ws := range s.byKey {
		for _, w := range ws {
			w.Fire(err)
		}
		delete(s.byKey, k)
	}
	s.count = 0
}

// currentValue reads key from the newest published state.
func (db *DB) currentValue(key []byte) ([]byte, bool) {
	db.open.RLock()
	defer db.open.RUnlock()
	db.mu.Lock()
	s := db.mu.snap
	ok := !db.open.closed && s != nil && s.acquire()
	db.mu.Unlock()
	if !ok {
		return nil, false
	}
	defer s.release()
	v, closer, err := s.ps.Get(key)
	if err != nil {
		return nil, false
	}
	defer closer.Close()
	return append([]byte{}, v...), true
}

// armWatches registers watches whose transaction committed, firing those
// whose value already changed. The caller is the committer (for read-write
// transactions) or a read-only commit; either way no commit can publish
// between the value check and registration, because registration and
// notification both hold s.mu.
func (db *DB) armWatches(ws []*txn.Watch) {
	s := db.watches
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range ws {
		if !w.MarkArmed() {
			continue
		}
		if v, p := db.currentValue(w.Key); w.Differs(v, p) {
			w.Fire(nil)
			continue
		}
		if s.count >= s.max {
			w.Fire(udb.Error{Code: udb.CodeTooManyWatches})
			continue
		}
		s.byKey[string(w.Key)] = append(s.byKey[string(w.Key)], w)
		s.count++
	}
}

// notifyWatches fires watches on keys the group changed, then arms the
// group's own watches.
func (db *DB) notifyWatches(group []*pendingCommit) {
	s := db.watches
	s.mu.Lock()
	if s.count > 0 {
		for _, p := range group {
			for _, m := range p.req.Mutations {
				b, e := mutatedKeyRange(m, p.stamp)
				s.fireRangeLocked(db, b, e)
			}
		}
	}
	s.mu.Unlock()
	for _, p := range group {
		if len(p.req.Watches) > 0 && p.failAfterApply == nil {
			db.armWatches(p.req.Watches)
		}
	}
}

func (s *watchSet) fireRangeLocked(db *DB, begin, end []byte) {
	check := func(key string) {
		ws := s.byKey[key]
		v, p := db.currentValue([]byte(key))
		for _, w := range ws {
			if w.Differs(v, p) {
				w.Fire(nil)
				s.removeLocked(w)
			}
		}
	}
	if bytes.Equal(udb.KeyAfter(begin), end) {
		if _, ok := s.byKey[string(begin)]; ok {
			check(string(begin))
		}
		return
	}
	for k := range s.byKey {
		if k >= string(begin) && k < string(end) {
			check(k)
		}
	}
}
