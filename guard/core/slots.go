package core

import "sync"

// Slots bounds how many of something are in flight per key at once (the gateway's requests
// per actor). Its table holds only keys with something in flight. Safe for concurrent use;
// a nil *Slots admits everything.
type Slots[K comparable] struct {
	max int
	mu  sync.Mutex
	n   map[K]int
}

// NewSlots returns Slots of max per key; max ≤ 0 returns nil (no bound).
func NewSlots[K comparable](max int) *Slots[K] {
	if max <= 0 {
		return nil
	}
	return &Slots[K]{max: max, n: map[K]int{}}
}

// Acquire takes a slot of k: false when k has max in flight already. release, idempotent,
// gives it back.
func (s *Slots[K]) Acquire(k K) (release func(), ok bool) {
	if s == nil {
		return func() {}, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[k] >= s.max {
		return nil, false
	}
	s.n[k]++
	var once sync.Once
	return func() { once.Do(func() { s.put(k) }) }, true
}

func (s *Slots[K]) put(k K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[k] <= 1 {
		delete(s.n, k)
	} else {
		s.n[k]--
	}
}

// Len is the number of keys with something in flight.
func (s *Slots[K]) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.n)
}
