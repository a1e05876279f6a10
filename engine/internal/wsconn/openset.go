package wsconn

import "sync"

// OpenSet holds what a host's socket has open (its tunnels) so that the socket's end closes
// them all at once. It replaces a watcher goroutine per tunnel: that goroutine's start and
// exit woke a second scheduler thread on every gateway request. The zero value is ready.
type OpenSet[T interface {
	comparable
	Close()
}] struct {
	mu     sync.Mutex
	open   map[T]struct{}
	closed bool
}

// Add puts t in the set; it reports false, adding nothing, once CloseAll has run.
func (s *OpenSet[T]) Add(t T) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.open == nil {
		s.open = map[T]struct{}{}
	}
	s.open[t] = struct{}{}
	return true
}

// Len is the number of members.
func (s *OpenSet[T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// Remove takes t out of the set (t closed on its own).
func (s *OpenSet[T]) Remove(t T) {
	s.mu.Lock()
	delete(s.open, t)
	s.mu.Unlock()
}

// CloseAll closes every member, outside the set's lock (a member's Close may call Remove),
// and refuses later Adds.
func (s *OpenSet[T]) CloseAll() {
	s.mu.Lock()
	s.closed = true
	members := make([]T, 0, len(s.open))
	for t := range s.open {
		members = append(members, t)
	}
	s.open = nil
	s.mu.Unlock()
	for _, t := range members {
		t.Close()
	}
}
