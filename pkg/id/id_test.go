package id

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/tuple"
)

// refString computes the string form of the 19 bytes b straight from the
// definition, with math/big: read b as a little-endian number, write it in
// base36, least significant digit first, padded to 30 digits.
func refString(b []byte) string {
	be := slices.Clone(b)
	slices.Reverse(be)
	digits := []byte(new(big.Int).SetBytes(be).Text(36))
	slices.Reverse(digits)
	return string(digits) + strings.Repeat("0", StringLen-len(digits))
}

func TestKnownVectors(t *testing.T) {
	ones := [16]byte{}
	for i := range ones {
		ones[i] = 0xff
	}
	tests := []struct {
		name  string
		id    ID
		want  string // "" means: computed by refString
		label uint16
	}{
		// By hand: the number is 1, so the least significant digit is 1.
		{"version only", FromParts([16]byte{}, 0), "1" + strings.Repeat("0", 29), 0},
		// The number is 1 + 256^18 (label 1 is byte 18).
		{"zero uuid, label 1", FromParts([16]byte{}, 1), "", 1},
		{"zero uuid, label 0xabcd", FromParts([16]byte{}, 0xabcd), "", 0xabcd},
		{"all ones", FromParts(ones, 0xffff), "", 0xffff},
		{"pattern", FromParts([16]byte{0x3f, 0x2a, 0x91, 0x00, 0x5e, 0xc4, 0x47, 0x1b, 0x8d, 0x02, 0xee, 0x7a, 0x10, 0x66, 0xb9, 0x54}, 7), "", 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "" {
				want = refString(tc.id[:])
			} else if ref := refString(tc.id[:]); ref != want {
				t.Fatalf("reference %q disagrees with the hand-derived %q", ref, want)
			}
			if got := tc.id.String(); got != want {
				t.Fatalf("String = %q, want %q", got, want)
			}
			got, err := Parse(want)
			if err != nil || got != tc.id {
				t.Fatalf("Parse(%q) = %x, %v; want %x", want, got[:], err, tc.id[:])
			}
			if got, err := Parse(strings.ToUpper(want)); err != nil || got != tc.id {
				t.Fatalf("Parse(upper case) = %x, %v", got[:], err)
			}
			if got.Label() != tc.label || got.Version() != Version {
				t.Fatalf("Label = %d, Version = %d", got.Label(), got.Version())
			}
		})
	}
	// The largest 19-byte value with version 1 still fits in 30 digits.
	var maxID ID
	for i := range maxID {
		maxID[i] = 0xff
	}
	maxID[0] = Version
	if got, err := Parse(maxID.String()); err != nil || got != maxID {
		t.Fatalf("max id: %v", err)
	}
}

func TestFirstFourCharsGiveVersion(t *testing.T) {
	for range 100 {
		s := New(uint16(3)).String()
		v := 0
		for i := 3; i >= 0; i-- {
			v = v*36 + strings.IndexByte(digits, s[i])
		}
		if v%256 != Version {
			t.Fatalf("%s: first four digits are %d, mod 256 = %d", s, v, v%256)
		}
	}
}

func TestNew(t *testing.T) {
	seen := map[ID]bool{}
	for range 1000 {
		id := New(0x1234)
		if seen[id] {
			t.Fatalf("duplicate %v", id)
		}
		seen[id] = true
		u := id.UUID()
		if id.Version() != 1 || id.Label() != 0x1234 || u[6]>>4 != 4 || u[8]>>6 != 2 || id.IsZero() {
			t.Fatalf("New(0x1234) = %x: version %d, label %x, uuid version %d, variant %b",
				id[:], id.Version(), id.Label(), u[6]>>4, u[8]>>6)
		}
		if !bytes.Equal(id[1:17], u[:]) {
			t.Fatalf("UUID() = %x, bytes %x", u, id[1:17])
		}
		s := id.String()
		if len(s) != StringLen || s != strings.ToLower(s) {
			t.Fatalf("String = %q", s)
		}
		back, err := Parse(s)
		if err != nil || back != id {
			t.Fatalf("Parse(String(%x)) = %x, %v", id[:], back[:], err)
		}
		fb, err := FromBytes(id[:])
		if err != nil || fb != id {
			t.Fatalf("FromBytes = %x, %v", fb[:], err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	valid := FromParts([16]byte{1, 2, 3}, 9).String()
	// Thirty 'z' is 36^30-1, far above 256^19.
	overflow := strings.Repeat("z", StringLen)
	// Version byte 2: the number 2.
	v2 := "2" + strings.Repeat("0", 29)
	tests := []struct {
		name   string
		in     string
		class  error
		detail string
	}{
		{"empty", "", ErrLength, "got 0 characters, want 30"},
		{"short", valid[:29], ErrLength, "got 29 characters, want 30"},
		{"long", valid + "0", ErrLength, "got 31 characters, want 30"},
		{"uuid", "3f2a9100-5ec4-471b-8d02-ee7a1066b954", ErrLength, "version 0 (UUID) ids are not supported"},
		{"huge", strings.Repeat("a", 1000), ErrLength, "got 1000 characters"},
		{"symbol", valid[:5] + "!" + valid[6:], ErrCharacter, `'!' at position 5`},
		{"space", " " + valid[1:], ErrCharacter, `' ' at position 0`},
		{"non-ascii", valid[:28] + "é", ErrCharacter, `'é' at position 28`},
		{"invalid utf8", valid[:29] + "\xff", ErrCharacter, "byte 0xff at position 29"},
		{"overflow", overflow, ErrOverflow, "does not fit in 19 bytes"},
		{"zero", strings.Repeat("0", 30), ErrVersion, "version byte is 0, want 1"},
		{"version 2", v2, ErrVersion, "version byte is 2, want 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Func != "Parse" {
				t.Fatalf("Parse(%q) = %v, %v; want a *ParseError", tc.in, got, err)
			}
			if !errors.Is(err, tc.class) {
				t.Fatalf("error %v is not %v", err, tc.class)
			}
			if !strings.Contains(err.Error(), tc.detail) || !strings.HasPrefix(err.Error(), "id.Parse(") {
				t.Fatalf("error %q lacks %q", err, tc.detail)
			}
			if len(err.Error()) > 300 {
				t.Fatalf("error is %d bytes long", len(err.Error()))
			}
			if !got.IsZero() {
				t.Fatalf("Parse returned %x with an error", got[:])
			}
			var into ID
			if uerr := into.UnmarshalText([]byte(tc.in)); !errors.Is(uerr, tc.class) || !into.IsZero() {
				t.Fatalf("UnmarshalText = %v, left %x", uerr, into[:])
			}
		})
	}
}

func TestFromBytesErrors(t *testing.T) {
	good := New(1)
	v0 := good
	v0[0] = 0
	tests := []struct {
		name  string
		in    []byte
		class error
	}{
		{"nil", nil, ErrLength},
		{"uuid only", good[1:17], ErrLength},
		{"short", good[:18], ErrLength},
		{"long", append(good[:], 0), ErrLength},
		{"version 0", v0[:], ErrVersion},
	}
	for _, tc := range tests {
		_, err := FromBytes(tc.in)
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Func != "FromBytes" || !errors.Is(err, tc.class) {
			t.Errorf("%s: FromBytes(%x) = %v, want a *ParseError of class %v", tc.name, tc.in, err, tc.class)
		}
	}
}

func TestCompare(t *testing.T) {
	a := FromParts([16]byte{1}, 5)
	b := FromParts([16]byte{2}, 0)
	c := FromParts([16]byte{2}, 1)
	sorted := []ID{a, b, c}
	for i := range sorted {
		for j := range sorted {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := sorted[i].Compare(sorted[j]); got != want {
				t.Errorf("Compare(%d, %d) = %d, want %d", i, j, got, want)
			}
			// Tuple order agrees with Compare.
			if got := bytes.Compare(tuple.Tuple{sorted[i]}.Pack(), tuple.Tuple{sorted[j]}.Pack()); got != want {
				t.Errorf("packed order (%d, %d) = %d, want %d", i, j, got, want)
			}
		}
	}
}

func TestJSON(t *testing.T) {
	type doc struct {
		ID  ID  `json:"id"`
		Ptr *ID `json:"ptr"`
	}
	id := New(2)
	b, err := json.Marshal(doc{ID: id, Ptr: &id})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"` + id.String() + `","ptr":"` + id.String() + `"}`
	if string(b) != want {
		t.Fatalf("Marshal = %s, want %s", b, want)
	}
	var back doc
	if err := json.Unmarshal(b, &back); err != nil || back.ID != id || back.Ptr == nil || *back.Ptr != id {
		t.Fatalf("Unmarshal = %+v, %v", back, err)
	}
	upper := `{"id":"` + strings.ToUpper(id.String()) + `"}`
	if err := json.Unmarshal([]byte(upper), &back); err != nil || back.ID != id {
		t.Fatalf("Unmarshal upper case: %v", err)
	}
	for _, bad := range []string{`{"id":"nope"}`, `{"id":12}`, `{"id":"` + strings.Repeat("z", 30) + `"}`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("Unmarshal(%s) succeeded", bad)
		}
	}
	var pe *ParseError
	if err := json.Unmarshal([]byte(`{"id":"nope"}`), &back); !errors.As(err, &pe) || !errors.Is(err, ErrLength) {
		t.Errorf("Unmarshal error %v does not carry the *ParseError", err)
	}
	if txt, err := id.AppendText([]byte("x=")); err != nil || string(txt) != "x="+id.String() {
		t.Errorf("AppendText = %q, %v", txt, err)
	}
}

func TestTuple(t *testing.T) {
	id := New(0xbeef)
	tup := tuple.Tuple{"x", id, int64(3)}
	k := tup.Pack()
	want := append(append([]byte{0x02, 'x', 0x00, TupleCode}, id[:]...), 0x15, 0x03)
	if !bytes.Equal(k, want) {
		t.Fatalf("Pack = %x, want %x", k, want)
	}
	back, err := tuple.Unpack(k)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := back[1].(ID); !ok || got != id || len(back) != 3 || back[0] != "x" || back[2] != int64(3) {
		t.Fatalf("Unpack = %v (%T)", back, back[1])
	}
	// Nested, and with zero bytes in the id.
	z := FromParts([16]byte{}, 0)
	nested := tuple.Tuple{tuple.Tuple{z, nil}}
	if back, err := tuple.Unpack(nested.Pack()); err != nil || back[0].(tuple.Tuple)[0] != z {
		t.Fatalf("nested: %v, %v", back, err)
	}
	// The zero ID round-trips in tuples (it never parses from a string).
	if back, err := tuple.Unpack(tuple.Tuple{ID{}}.Pack()); err != nil || back[0] != (ID{}) {
		t.Fatalf("zero id: %v, %v", back, err)
	}
	// A bad version byte inside a tuple is a decode error wrapping ours.
	bad := slices.Clone(k)
	bad[4] = 2
	_, err = tuple.Unpack(bad)
	var de *tuple.DecodeError
	if !errors.As(err, &de) || de.Offset != 3 || !errors.Is(err, ErrVersion) {
		t.Fatalf("Unpack(bad version) = %v", err)
	}
	if _, err := tuple.Unpack(k[:10]); !errors.As(err, &de) {
		t.Fatalf("Unpack(truncated) = %v", err)
	}
}

func TestStringAllocs(t *testing.T) {
	id := New(1)
	if n := testing.AllocsPerRun(100, func() { _ = id.String() }); n > 1 {
		t.Fatalf("String allocates %v times", n)
	}
	s := id.String()
	if n := testing.AllocsPerRun(100, func() { _, _ = Parse(s) }); n != 0 {
		t.Fatalf("Parse allocates %v times", n)
	}
}
