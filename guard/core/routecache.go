package core

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// RouteCache remembers resolved routes for TTL, for the first attempt of a request only: a
// failure of a cached route is itself the signal that it went stale, and every retry resolves
// again (and refreshes the entry). An entry may also carry a channel that closes when its
// route changes; a closed one is a miss. At most Max entries are kept, the least recently
// used going first (an LRU: O(1) whatever the load). Safe for concurrent use.
type RouteCache[K comparable, V any] struct {
	ttl time.Duration
	now func() time.Time

	mu struct {
		sync.Mutex
		m *simplelru.LRU[K, cacheEntry[V]]
	}
}

type cacheEntry[V any] struct {
	v       V
	expires time.Time
	changed <-chan struct{}
}

// NewRouteCache returns a cache keeping entries for ttl (at most max of them; max ≤ 0 means
// 100,000). A zero ttl makes a cache that never hits. now nil means time.Now.
func NewRouteCache[K comparable, V any](ttl time.Duration, max int, now func() time.Time) *RouteCache[K, V] {
	if max <= 0 {
		max = 100_000
	}
	if now == nil {
		now = time.Now
	}
	c := &RouteCache[K, V]{ttl: ttl, now: now}
	c.mu.m, _ = simplelru.NewLRU[K, cacheEntry[V]](max, nil) // a positive size cannot fail
	return c
}

// Get returns k's route if it is cached, unexpired and unchanged.
func (c *RouteCache[K, V]) Get(k K) (V, bool) {
	var zero V
	if c == nil || c.ttl <= 0 {
		return zero, false
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.mu.m.Get(k)
	if !ok {
		return zero, false
	}
	if !now.Before(e.expires) || closed(e.changed) {
		c.mu.m.Remove(k)
		return zero, false
	}
	return e.v, true
}

// Put caches k's route v; changed (may be nil) closes when v stops being k's route.
func (c *RouteCache[K, V]) Put(k K, v V, changed <-chan struct{}) {
	if c == nil || c.ttl <= 0 {
		return
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.m.Add(k, cacheEntry[V]{v: v, expires: now.Add(c.ttl), changed: changed})
}

// Delete forgets k.
func (c *RouteCache[K, V]) Delete(k K) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.mu.m.Remove(k)
	c.mu.Unlock()
}

// Len is the number of entries held (expired ones included until they are looked at).
func (c *RouteCache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.m.Len()
}

func closed(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
