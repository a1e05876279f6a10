package subspace

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/berthhq/berth/pkg/tuple"
)

// Subspace is a key prefix. Keys in it are the prefix followed by a packed
// tuple. The zero value is the subspace of all keys, like [AllKeys].
//
// A Subspace is an immutable value: it owns a private copy of its prefix and
// is safe for concurrent use.
type Subspace struct {
	prefix []byte
}

// FromBytes returns the subspace with raw prefix b. It copies b.
func FromBytes(b []byte) Subspace {
	return Subspace{prefix: bytes.Clone(b)}
}

// Sub returns the subspace whose prefix is the packed tuple of elems. It
// panics in the same cases as [tuple.Tuple.Pack] (an unsupported element type).
func Sub(elems ...any) Subspace {
	return Subspace{prefix: tuple.Tuple(elems).Pack()}
}

// AllKeys returns the subspace with an empty prefix, which contains every key.
func AllKeys() Subspace {
	return Subspace{}
}

// Sub returns the subspace of s whose prefix is s's prefix followed by the
// packed tuple of elems. It panics in the same cases as [tuple.Tuple.Pack].
func (s Subspace) Sub(elems ...any) Subspace {
	return Subspace{prefix: s.Pack(tuple.Tuple(elems))}
}

// Bytes returns a copy of the prefix of s.
func (s Subspace) Bytes() []byte {
	return bytes.Clone(s.prefix)
}

// Pack returns the key for t in s: the prefix followed by the packed tuple.
// It allocates once and panics in the same cases as [tuple.Tuple.Pack].
func (s Subspace) Pack(t tuple.Tuple) []byte {
	// The clipped prefix makes AppendPack allocate a new array, sized once.
	return t.AppendPack(slices.Clip(s.prefix))
}

// PackWithVersionstamp returns the key for t in s in the form expected by a
// versionstamped-key write: the prefix, the packed tuple, then the 4-byte
// little-endian offset of the incomplete versionstamp. See
// [tuple.Tuple.PackWithVersionstamp] for the errors.
func (s Subspace) PackWithVersionstamp(t tuple.Tuple) ([]byte, error) {
	return t.PackWithVersionstamp(s.prefix)
}

// Unpack returns the tuple that k holds after the prefix of s. It returns an
// error if k does not start with the prefix, or if the rest is not a valid
// packed tuple. The prefix key itself unpacks to the empty tuple.
func (s Subspace) Unpack(k []byte) (tuple.Tuple, error) {
	if !s.Contains(k) {
		return nil, fmt.Errorf("subspace: key %x is not in subspace %x", k, s.prefix)
	}
	t, err := tuple.Unpack(k[len(s.prefix):])
	if err != nil {
		return nil, fmt.Errorf("subspace %x: %w", s.prefix, err)
	}
	return t, nil
}

// Contains reports whether k starts with the prefix of s. The prefix key
// itself is contained, although it lies outside [Subspace.FDBRangeKeys].
func (s Subspace) Contains(k []byte) bool {
	return bytes.HasPrefix(k, s.prefix)
}

// FDBRangeKeys returns the range [prefix+0x00, prefix+0xFF), which holds
// every key s.Pack(t) for a non-empty tuple t. The prefix key itself is not
// in the range. Both keys share one allocation, with capacities clipped so
// that appending to one never overwrites the other.
func (s Subspace) FDBRangeKeys() (begin, end []byte) {
	n := len(s.prefix)
	buf := make([]byte, 0, 2*n+2)
	buf = append(buf, s.prefix...)
	buf = append(buf, 0x00)
	buf = append(buf, s.prefix...)
	buf = append(buf, 0xff)
	return buf[: n+1 : n+1], buf[n+1:]
}

// String formats s for humans, with its prefix in hex.
func (s Subspace) String() string {
	return fmt.Sprintf("Subspace(%x)", s.prefix)
}
