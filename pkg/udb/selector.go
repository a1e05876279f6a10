package udb

// KeySelector names a key relative to a reference key: take the last key less
// than Key (less than or equal when OrEqual), then move Offset keys forward
// (Offset > 0) or backward. A selector that resolves before the first key gives
// "" and one past the last key gives "\xff" ("\xff\xff" with system keys).
type KeySelector struct {
	Key     []byte
	OrEqual bool
	Offset  int
}

// FirstGreaterOrEqual selects the first key >= k.
func FirstGreaterOrEqual(k []byte) KeySelector { return KeySelector{Key: k, Offset: 1} }

// FirstGreaterThan selects the first key > k.
func FirstGreaterThan(k []byte) KeySelector { return KeySelector{Key: k, OrEqual: true, Offset: 1} }

// LastLessThan selects the last key < k.
func LastLessThan(k []byte) KeySelector { return KeySelector{Key: k} }

// LastLessOrEqual selects the last key <= k.
func LastLessOrEqual(k []byte) KeySelector { return KeySelector{Key: k, OrEqual: true} }

// Add returns the selector moved by n keys.
func (s KeySelector) Add(n int) KeySelector { s.Offset += n; return s }

// KeyAfter returns the first key sorting after k: k followed by a zero byte.
func KeyAfter(k []byte) []byte {
	out := make([]byte, len(k)+1)
	copy(out, k)
	return out
}

// PrefixRange returns [prefix, strinc(prefix)): every key that starts with
// prefix. The empty prefix gives the normal key space ["", "\xff"); a prefix
// of only 0xFF bytes has no successor and gives the empty range [prefix, prefix).
func PrefixRange(prefix []byte) (begin, end []byte) {
	if len(prefix) == 0 {
		return prefix, []byte{0xff}
	}
	end = make([]byte, len(prefix))
	copy(end, prefix)
	for len(end) > 0 && end[len(end)-1] == 0xff {
		end = end[:len(end)-1]
	}
	if len(end) == 0 {
		return prefix, prefix
	}
	end[len(end)-1]++
	return prefix, end
}
