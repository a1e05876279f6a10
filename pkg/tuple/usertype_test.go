package tuple

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// testUser is a user type for the tests: code 0x41, a 3-byte payload whose
// first byte must not be 0xff (so decoder errors are exercised too).
type testUser [3]byte

const (
	testUserCode = 0x41
	testUserSize = 3
	// badDecoderCode is registered with a decoder that returns a value of
	// the wrong type.
	badDecoderCode = 0x42
)

var errTestUser = errors.New("first byte is 0xff")

func (u testUser) TupleUserCode() byte                { return testUserCode }
func (u testUser) AppendTupleBytes(dst []byte) []byte { return append(dst, u[:]...) }

// unregisteredUser uses a code nobody registers.
type unregisteredUser struct{}

func (unregisteredUser) TupleUserCode() byte                { return 0x4f }
func (unregisteredUser) AppendTupleBytes(dst []byte) []byte { return dst }

// shortUser breaks the contract: it writes 2 bytes for a 3-byte code.
type shortUser struct{}

func (shortUser) TupleUserCode() byte                { return testUserCode }
func (shortUser) AppendTupleBytes(dst []byte) []byte { return append(dst, 1, 2) }

// outOfRangeUser claims a code outside 0x40–0x4f.
type outOfRangeUser struct{}

func (outOfRangeUser) TupleUserCode() byte                { return 0x30 }
func (outOfRangeUser) AppendTupleBytes(dst []byte) []byte { return dst }

func init() {
	RegisterUserType(testUserCode, testUserSize, func(p []byte) (any, error) {
		if p[0] == 0xff {
			return nil, errTestUser
		}
		return testUser(p), nil
	})
	RegisterUserType(badDecoderCode, 1, func(p []byte) (any, error) { return string(p), nil })
}

func TestUserTypeRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		tup  Tuple
		hex  string
	}{
		{"alone", Tuple{testUser{1, 2, 3}}, "41010203"},
		{"between", Tuple{"x", testUser{0, 0, 0}, int64(5)}, "0278004100000015" + "05"},
		{"nested with zero bytes", Tuple{Tuple{testUser{0, 0xff, 0}, nil}}, "0541" + "00ff00" + "00ff" + "00"},
		{"nested last", Tuple{[]any{testUser{7, 0, 0}}, "y"}, "05410700000002790" + "0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := tc.tup.Pack()
			if want := mustHex(t, tc.hex); !bytes.Equal(k, want) {
				t.Fatalf("Pack = %x, want %x", k, want)
			}
			back, err := Unpack(k)
			if err != nil {
				t.Fatal(err)
			}
			if d := tupleDiff(back, normalize(tc.tup)); d != "" {
				t.Fatalf("Unpack(Pack) = %v: %s", back, d)
			}
		})
	}
}

func TestUserTypeOrder(t *testing.T) {
	// By code after the built-in types, then by payload bytes.
	sorted := []Tuple{
		{IncompleteVersionstamp(0)},
		{testUser{0, 0, 0}},
		{testUser{0, 0, 1}},
		{testUser{0, 1, 0}},
		{testUser{0x7f, 0, 0}},
		{testUser{0x7f, 0, 0}, nil},
	}
	for i := 1; i < len(sorted); i++ {
		if a, b := sorted[i-1].Pack(), sorted[i].Pack(); bytes.Compare(a, b) >= 0 {
			t.Errorf("%v (%x) does not sort before %v (%x)", sorted[i-1], a, sorted[i], b)
		}
	}
}

func TestUserTypeDecodeErrors(t *testing.T) {
	tests := []struct {
		hex     string
		wantMsg string
		wantOff int
		wantErr error
	}{
		{"41", "truncated user type 0x41: need 3 bytes, have 0", 0, nil},
		{"1441" + "0102", "truncated user type 0x41: need 3 bytes, have 2", 1, nil},
		{"41ff0000", "user type 0x41: first byte is 0xff", 0, errTestUser},
		{"0541ff000000", "user type 0x41: first byte is 0xff", 1, errTestUser},
		{"4261", "user type 0x42: decoder returned string, not a UserType of that code", 0, nil},
		{"40", "unknown or reserved type code 0x40", 0, nil}, // unregistered codes stay errors
		{"43000000", "unknown or reserved type code 0x43", 0, nil},
		{"4f", "unknown or reserved type code 0x4f", 0, nil},
		{"50", "unknown or reserved type code 0x50", 0, nil},
	}
	for _, tc := range tests {
		_, err := Unpack(mustHex(t, tc.hex))
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("Unpack(%s) error = %v, want a *DecodeError", tc.hex, err)
			continue
		}
		if de.Msg != tc.wantMsg || de.Offset != tc.wantOff {
			t.Errorf("Unpack(%s): %q at %d, want %q at %d", tc.hex, de.Msg, de.Offset, tc.wantMsg, tc.wantOff)
		}
		if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
			t.Errorf("Unpack(%s): %v does not wrap %v", tc.hex, err, tc.wantErr)
		}
		if tc.wantErr == nil && de.Err != nil {
			t.Errorf("Unpack(%s): unexpected wrapped error %v", tc.hex, de.Err)
		}
	}
}

func TestUserTypePackErrors(t *testing.T) {
	for _, e := range []any{unregisteredUser{}, outOfRangeUser{}} {
		tup := Tuple{"a", e}
		if _, err := tup.HasIncompleteVersionstamp(); !errors.Is(err, ErrUnsupportedType) || !strings.Contains(err.Error(), "not registered") {
			t.Errorf("HasIncompleteVersionstamp(%T) = %v, want ErrUnsupportedType naming the code", e, err)
		}
		if _, err := tup.PackWithVersionstamp(nil); !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("PackWithVersionstamp(%T) = %v, want ErrUnsupportedType", e, err)
		}
		mustPanic(t, fmt.Sprintf("Pack of %T", e), func() { tup.Pack() })
	}
	mustPanic(t, "Pack of a UserType writing the wrong size", func() { Tuple{shortUser{}}.Pack() })
}

func TestRegisterUserTypePanics(t *testing.T) {
	dec := func([]byte) (any, error) { return nil, nil }
	tests := []struct {
		name   string
		code   byte
		size   int
		decode func([]byte) (any, error)
	}{
		{"below range", 0x3f, 1, dec},
		{"above range", 0x50, 1, dec},
		{"negative size", 0x4e, -1, dec},
		{"nil decoder", 0x4e, 1, nil},
		{"duplicate", testUserCode, testUserSize, dec},
	}
	for _, tc := range tests {
		mustPanic(t, tc.name, func() { RegisterUserType(tc.code, tc.size, tc.decode) })
	}
	if lookupUserType(0x4e) != nil {
		t.Fatal("a refused registration was kept")
	}
}

func TestUserTypePackAllocs(t *testing.T) {
	key := Tuple{"runner", testUser{1, 2, 3}, int64(42)}
	if n := testing.AllocsPerRun(100, func() { _ = key.Pack() }); n > 1 {
		t.Fatalf("Pack with a user type allocates %v times, want 1", n)
	}
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", what)
		}
	}()
	f()
}
