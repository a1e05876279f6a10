package id

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// The classes of parse errors, for errors.Is. Every error returned by Parse,
// FromBytes and UnmarshalText is a *ParseError wrapping one of them.
var (
	// ErrLength: a string that is not 30 characters or bytes that are not 19.
	ErrLength = errors.New("wrong length")
	// ErrCharacter: a character outside 0-9, a-z, A-Z.
	ErrCharacter = errors.New("invalid character")
	// ErrOverflow: 30 base36 digits whose value needs more than 19 bytes.
	ErrOverflow = errors.New("value overflow")
	// ErrVersion: a version byte other than 1.
	ErrVersion = errors.New("unsupported version")
)

// ParseError describes input that is not an ID.
type ParseError struct {
	// Func is the function that failed: "Parse" or "FromBytes".
	Func string
	// Input is the input, quoted for Parse and in hex for FromBytes, cut
	// to at most 64 bytes of the original.
	Input string
	// Err is the class: ErrLength, ErrCharacter, ErrOverflow or ErrVersion.
	Err error
	// Detail says what exactly is wrong.
	Detail string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("id.%s(%s): %v: %s", e.Func, e.Input, e.Err, e.Detail)
}

// Unwrap returns the error class.
func (e *ParseError) Unwrap() error { return e.Err }

const maxQuoted = 64

func stringError(s string, class error, format string, args ...any) error {
	in := s
	if len(in) > maxQuoted {
		in = in[:maxQuoted]
	}
	q := fmt.Sprintf("%q", in)
	if len(s) > maxQuoted {
		q += "..."
	}
	return &ParseError{Func: "Parse", Input: q, Err: class, Detail: fmt.Sprintf(format, args...)}
}

func bytesError(b []byte, class error, format string, args ...any) error {
	in := b
	if len(in) > maxQuoted {
		in = in[:maxQuoted]
	}
	h := fmt.Sprintf("%x", in)
	if len(b) > maxQuoted {
		h += "..."
	}
	return &ParseError{Func: "FromBytes", Input: h, Err: class, Detail: fmt.Sprintf(format, args...)}
}

func badCharError(s string, i int) error {
	r, _ := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError {
		return stringError(s, ErrCharacter, "byte 0x%02x at position %d is not a base36 digit", s[i], i)
	}
	return stringError(s, ErrCharacter, "%q at position %d is not a base36 digit", r, i)
}
