package bare

// KeySet finds the duplicate keys of a map<K><V> as it is read or written (BARE map keys are
// unique; bare-ts rejects duplicates). The zero value is empty. The first keys are kept in an
// array and compared linearly, so the small maps of a protocol (header maps) are checked
// without allocating; past that, a set sized for the rest takes over.
type KeySet[K comparable] struct {
	small [smallMap]K
	n     int
	big   map[K]struct{}
}

// smallMap is the largest map whose keys KeySet checks without allocating.
const smallMap = 16

// Add adds k and reports whether it was already in the set.
func (s *KeySet[K]) Add(k K) (dup bool) {
	if s.big == nil {
		for _, o := range s.small[:s.n] {
			if o == k {
				return true
			}
		}
		if s.n < len(s.small) {
			s.small[s.n] = k
			s.n++
			return false
		}
		s.big = make(map[K]struct{}, 4*len(s.small))
		for _, o := range s.small {
			s.big[o] = struct{}{}
		}
	}
	if _, ok := s.big[k]; ok {
		return true
	}
	s.big[k] = struct{}{}
	return false
}
