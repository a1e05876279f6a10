package alltypes

import (
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/berthhq/berth/sdk/bare"
	"github.com/berthhq/berth/sdk/internal/baregen"
)

func TestGeneratedCode(t *testing.T) {
	if err := baregen.CheckGenerated("."); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func encode(m Message, v int) ([]byte, error) {
	var w bare.Writer
	writeMessage(&w, m, v)
	return w.Bytes(), w.Err()
}

func decode(b []byte, v int) (Message, error) {
	r := bare.NewReader(b)
	m := readMessage(r, v)
	return m, r.Done()
}

var prims = Prims{U: 300, I: -2, A: 0xff, B: 0x1234, C: 0x01020304, D: 1, E: -1, F: -2, G: -3, H: -4,
	J: 1.5, K: -2, T: true, S: "hé", Raw: []byte{0xde, 0xad}, Fixed: [2]byte{1, 2}, Named: Fixed{7, 8, 9}, Name: "n"}

// primsHex is prims by the BARE spec: uint and int are LEB128 (int zig-zag), fixed-width
// integers and floats little-endian, bool one byte, str and data a uint length then the bytes,
// data[N] the N bytes alone.
const primsHex = "ac02 03 ff 3412 04030201 0100000000000000 ff feff fdffffff fcffffffffffffff" +
	" 0000c03f 00000000000000c0 01 0368c3a9 02dead 0102 070809 016e"

func compound(added uint8) Compound {
	return Compound{
		OptU: ptr(uint32(5)), OptData: []byte{}, OptList: []string{"a"}, OptShape: Empty{},
		List: []Point{{1, -1}}, Array: [3]uint8{1, 2, 3}, Nested: [][]Shape{{Point{2, 3}}, {}},
		Ints: Ints{-1}, GoMap: map[string]int64{"b": 2, "a": 1},
		Entries: []Entry{{"z", 1}, {"y", 2}}, Pairs: []Pair{{ID: 9, X: 1, Y: 2}},
		Color: ColorBlue, Sparse: SpTen, Colors: map[Color]string{ColorGreen: "g", ColorRed: "r"},
		Added: added,
	}
}

// compoundHex is compound by the spec; emptyTag is Empty's tag in Shape (3 in v2, 1 in v1).
func compoundHex(emptyTag, added string) string {
	return "01 05000000" + // optional<u32> present
		" 01 00" + // optional<data> present, empty
		" 00" + // optional<Point> absent
		" 01 01 0161" + // optional<list<str>> present, one item
		" 01 " + emptyTag + // optional<Shape> present: a void member is its tag alone
		" 01 0100 ffff" + // list<Point>
		" 010203" + // list<u8>[3]: no length
		" 02 01 00 0200 0300 00" + // list<list<Shape>>
		" 01 ffffffff" + // Ints
		" 02 0161 0100000000000000 0162 0200000000000000" + // map<str><i64>, in key order
		" 02 017a 01 0179 02" + // map<str><u8> as []Entry, in slice order
		" 01 09000000 0100 0200" + // map<u32><struct> as []Pair
		" 02 0a" + // enums are uints
		" 02 00 0172 01 0167" + // map<Color><str>
		added
}

func TestEncoding(t *testing.T) {
	tests := []struct {
		name string
		m    Message
		v    int
		hex  string
	}{
		{"Prims", prims, 2, "00" + primsHex},
		{"Prims v1", prims, 1, "00" + primsHex},
		{"Compound", compound(7), 2, "01" + compoundHex("03", " 07")},
		{"Compound v1", compound(0), 1, "01" + compoundHex("01", "")},
		{"Ints, explicit tag", Ints{}, 2, "07 00"},
		{"empty values", Prims{Raw: []byte{}}, 2, "00 00 00 00 0000 00000000 0000000000000000 00 0000 00000000 0000000000000000" +
			" 00000000 0000000000000000 00 00 00 0000 000000 00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := unhex(t, tt.hex)
			got, err := encode(tt.m, tt.v)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("encoded %x, %v\nwant    %x", got, err, want)
			}
			m, err := decode(want, tt.v)
			if err != nil || !reflect.DeepEqual(m, tt.m) {
				t.Fatalf("decoded %#v, %v\nwant    %#v", m, err, tt.m)
			}
		})
	}
}

// TestVersions checks the tags that differ between v1 and v2 and the members one lacks.
func TestVersions(t *testing.T) {
	shape := func(s Shape, v int) string {
		var w bare.Writer
		writeShape(&w, s, v)
		if w.Err() != nil {
			return w.Err().Error()
		}
		return hex.EncodeToString(w.Bytes())
	}
	for _, tt := range []struct {
		s      Shape
		v1, v2 string
	}{
		{Point{}, "0000000000", "0000000000"},
		{Empty{}, "01", "03"},
		{Ints{}, "0400", "0500"},
		{Gone{Z: true}, "0201", "bare: cannot encode: Gone needs protocol v1, not v2 at offset 0"},
	} {
		if got := shape(tt.s, 1); got != tt.v1 {
			t.Errorf("v1 %T = %s, want %s", tt.s, got, tt.v1)
		}
		if got := shape(tt.s, 2); got != tt.v2 {
			t.Errorf("v2 %T = %s, want %s", tt.s, got, tt.v2)
		}
	}
	r := bare.NewReader([]byte{2})
	if s := readShape(r, 2); s != nil || !strings.Contains(r.Err().Error(), "unknown Shape tag 2 at offset 0") {
		t.Errorf("v2 tag 2 = %#v, %v", s, r.Err())
	}
	r = bare.NewReader([]byte{2, 1})
	if s := readShape(r, 1); !reflect.DeepEqual(s, Gone{Z: true}) || r.Done() != nil {
		t.Errorf("v1 tag 2 = %#v, %v", s, r.Err())
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tt := range []struct {
		name, hex string
		offset    int
		msg       string
	}{
		{"unknown tag", "02", 0, "unknown Message tag 2"},
		{"unknown nested tag", "01 00 00 00 00 00 00 000000 01 01 09", 12, "unknown Shape tag 9"},
		{"unknown enum", "01" + compoundHex("03", " 07")[:strings.Index(compoundHex("03", ""), " 02 0a")] + " 03 0a 00 00", 0, "unknown Color 3"},
		{"sparse enum", "01 00 00 00 00 00 00 000000 00 00 00 00 00 00 02", 16, "unknown Sparse 2"},
		{"duplicate entry key", "01 00 00 00 00 00 00 000000 00 00 00 02 0161 01 0161 02", 17, "duplicate map key a"},
		{"duplicate map key", "01 00 00 00 00 00 00 000000 00 00 02 0161 0100000000000000 0161 0100000000000000", 23, "duplicate map key a"},
		{"bad optional", "01 02", 1, "optional tag is 2"},
		{"truncated fixed", "00 00 00 00 0000 00000000 0000000000000000 00 0000 00000000 0000000000000000 00000000 0000000000000000 00 00 00 00", 48, "truncated"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decode(unhex(t, tt.hex), 2)
			var de *bare.DecodeError
			if !errors.As(err, &de) || !strings.Contains(de.Msg, tt.msg) || (tt.offset != 0 && de.Offset != tt.offset) {
				t.Fatalf("error %v, want %q at %d", err, tt.msg, tt.offset)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		m    Message
		msg  string
	}{
		{"nil message", nil, "nil Message"},
		{"pointer member", &Prims{}, "*alltypes.Prims is not a member of Message"},
		{"nil nested union", Compound{Nested: [][]Shape{{nil}}}, "nil Shape"},
		{"unknown enum", Compound{Color: 3}, "unknown Color 3"},
		{"unknown sparse enum", Compound{Sparse: 2}, "unknown Sparse 2"},
		{"duplicate entry", Compound{Entries: []Entry{{"k", 1}, {"k", 2}}}, `duplicate entry "k"`},
		{"duplicate pair", Compound{Pairs: []Pair{{ID: 4}, {ID: 4}}}, "duplicate pair 4"},
		{"bad UTF-8", Prims{S: "\xff"}, "not valid UTF-8"},
		{"bad UTF-8 named", Prims{Name: "\xfe"}, "not valid UTF-8"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := encode(tt.m, 2)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %v, want %q", err, tt.msg)
			}
		})
	}
}
