package keys

import (
	"errors"
	"fmt"
)

// Error classes, for errors.Is. Unpack functions return errors wrapping
// ErrBadKey; Decode methods (and Get, which calls them) return errors
// wrapping ErrBadValue. Both name the key type.
var (
	// ErrBadKey marks bytes that are not a key of the expected type: another
	// family, a wrong constant segment, a wrong element type, malformed tuple
	// bytes.
	ErrBadKey = errors.New("keys: not a key of this type")
	// ErrBadValue marks stored bytes that do not decode as the key's value:
	// wrong length, unknown version, malformed BARE. It means corrupt data.
	ErrBadValue = errors.New("keys: malformed value")
)

const maxShown = 64

func shown(b []byte) string {
	if len(b) > maxShown {
		return fmt.Sprintf("%x...", b[:maxShown])
	}
	return fmt.Sprintf("%x", b)
}

func badKey(name string, b []byte, format string, args ...any) error {
	return fmt.Errorf("%w: %s %s: %s", ErrBadKey, name, shown(b), fmt.Sprintf(format, args...))
}

func badValue(name string, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrBadValue, name, fmt.Sprintf(format, args...))
}
