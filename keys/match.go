package keys

import (
	"fmt"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/subspace"
	"github.com/berthhq/berth/pkg/tuple"
)

// hole is a variable segment in a key's shape; any other shape element is an
// int constant (a segment tag) that must match exactly.
type hole int

const (
	anyID     hole = iota // an id.ID
	anyString             // a string
	anyInt                // an integer that fits int64
	anyBytes              // a byte string
)

func (h hole) String() string {
	switch h {
	case anyID:
		return "id"
	case anyString:
		return "string"
	case anyBytes:
		return "bytes"
	default:
		return "int64"
	}
}

// unpack unpacks b in sub and checks that it has exactly the given shape:
// each int is a constant segment, each hole a variable segment of that type.
// On success the caller may type-assert the holes without checking.
func unpack(name string, sub subspace.Subspace, b []byte, shape ...any) (tuple.Tuple, error) {
	t, err := sub.Unpack(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s: %w", ErrBadKey, name, shown(b), err)
	}
	if len(t) != len(shape) {
		return nil, badKey(name, b, "%d segments, want %d", len(t), len(shape))
	}
	for i, s := range shape {
		switch s := s.(type) {
		case int:
			if v, ok := t[i].(int64); !ok || v != int64(s) {
				return nil, badKey(name, b, "segment %d is %v, want %d", i, t[i], s)
			}
		case hole:
			var ok bool
			switch s {
			case anyID:
				_, ok = t[i].(id.ID)
			case anyString:
				_, ok = t[i].(string)
			case anyInt:
				_, ok = t[i].(int64)
			case anyBytes:
				_, ok = t[i].([]byte)
			}
			if !ok {
				return nil, badKey(name, b, "segment %d is %T, want %v", i, t[i], s)
			}
		}
	}
	return t, nil
}
