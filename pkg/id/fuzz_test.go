package id

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics, fails only with a *ParseError of
// one class, and that what it accepts formats back to the lower-cased input
// and parses again to the same ID.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "1" + strings.Repeat("0", 29), strings.Repeat("z", 30), strings.Repeat("0", 30),
		New(1).String(), strings.ToUpper(New(2).String()), "3f2a9100-5ec4-471b-8d02-ee7a1066b954",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := Parse(s)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q): %v is not a *ParseError", s, err)
			}
			n := 0
			for _, c := range []error{ErrLength, ErrCharacter, ErrOverflow, ErrVersion} {
				if errors.Is(err, c) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("Parse(%q): %v matches %d classes", s, err, n)
			}
			return
		}
		if got := id.String(); got != strings.ToLower(s) {
			t.Fatalf("String(Parse(%q)) = %q", s, got)
		}
		back, err := Parse(id.String())
		if err != nil || back != id {
			t.Fatalf("Parse(String(x)) = %x, %v; want %x", back[:], err, id[:])
		}
		if fb, err := FromBytes(id[:]); err != nil || fb != id {
			t.Fatalf("FromBytes(x[:]) = %v", err)
		}
	})
}

// FuzzFromBytes checks FromBytes and the string round trip from raw bytes.
func FuzzFromBytes(f *testing.F) {
	id := New(5)
	f.Add(id[:])
	f.Add([]byte{})
	f.Add(make([]byte, 19))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := FromBytes(b)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || !(errors.Is(err, ErrLength) || errors.Is(err, ErrVersion)) {
				t.Fatalf("FromBytes(%x): %v", b, err)
			}
			return
		}
		if back, err := Parse(id.String()); err != nil || back != id {
			t.Fatalf("Parse(String(%x)) = %x, %v", b, back[:], err)
		}
	})
}
