package keys

import (
	"bytes"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// Entry parses key, an entry of the index r ranges over: its last two segments, create_ts
// and the tie (a runner or actor id, or an envoy key). Only those two are decoded: the
// segments before them are the range's prefix, which key must begin with. It is what the
// index's Unpack function returns for those two fields, without unpacking the whole key, so
// that a list reads the ids of a page without allocating per entry. Anything that is not
// such an entry is an error wrapping ErrBadKey.
func (r CreateTsRange[T]) Entry(key []byte) (createTs int64, tie T, err error) {
	if !bytes.HasPrefix(key, r.prefix) {
		return 0, tie, badKey("index entry", key, "not under %s", shown(r.prefix))
	}
	rest := key[len(r.prefix):]
	createTs, rest, ok := parseInt(rest)
	if !ok {
		return 0, tie, badKey("index entry", key, "no create_ts after the index prefix")
	}
	switch t := any(&tie).(type) {
	case *id.ID:
		if len(rest) == 1+id.Size && rest[0] == id.TupleCode {
			if *t, err = id.FromBytes(rest[1:]); err == nil {
				return createTs, tie, nil
			}
		}
		return 0, tie, badKey("index entry", key, "no id after create_ts")
	case *string:
		if v, err := tuple.Unpack(rest); err == nil && len(v) == 1 {
			if s, ok := v[0].(string); ok {
				*t = s
				return createTs, tie, nil
			}
		}
		return 0, tie, badKey("index entry", key, "no string after create_ts")
	}
	return 0, tie, badKey("index entry", key, "unknown tie type %T", tie)
}

// parseInt reads one tuple-packed integer that fits int64 at the start of b and returns it
// and the bytes after it: codes 0x0c to 0x1c, as tuple.Unpack reads them. ok is false for
// anything else.
func parseInt(b []byte) (v int64, rest []byte, ok bool) {
	if len(b) == 0 || b[0] < 0x0c || b[0] > 0x1c {
		return 0, b, false
	}
	if b[0] >= 0x14 {
		u, rest, ok := parseUint(b)
		if !ok || u > 1<<63-1 {
			return 0, b, false
		}
		return int64(u), rest, true
	}
	n := int(0x14 - b[0])
	if len(b) < 1+n {
		return 0, b, false
	}
	var u uint64
	for _, c := range b[1 : 1+n] {
		u = u<<8 | uint64(c)
	}
	// The payload is the ones' complement of the magnitude over n bytes.
	mag := ^u
	if n < 8 {
		mag &= 1<<(8*uint(n)) - 1
	}
	if mag > 1<<63 {
		return 0, b, false
	}
	return -int64(mag), b[1+n:], true
}
