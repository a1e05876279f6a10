package tuple

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestVectors(t *testing.T) {
	tv := loadVectors(t)
	for _, v := range tv.vectors {
		t.Run(v.name, func(t *testing.T) {
			got := v.tuple.Pack()
			if !bytes.Equal(got, v.packed) {
				t.Fatalf("Pack(%v) = %x, want %x", v.tuple, got, v.packed)
			}
			if n := len(v.tuple.AppendPack(nil)); n != len(got) {
				t.Fatalf("AppendPack(nil) length %d, want %d", n, len(got))
			}
			prefix := []byte("pre\x00fix")
			if got := v.tuple.AppendPack(slices.Clip(prefix)); !bytes.Equal(got, append(slices.Clip(prefix), v.packed...)) {
				t.Fatalf("AppendPack(prefix) = %x", got)
			}
			back, err := Unpack(v.packed)
			if err != nil {
				t.Fatalf("Unpack(%x): %v", v.packed, err)
			}
			if d := tupleDiff(back, v.tuple); d != "" {
				t.Fatalf("Unpack(%x) = %v: %s", v.packed, back, d)
			}
			if has, err := v.tuple.HasIncompleteVersionstamp(); has || err != nil {
				t.Fatalf("HasIncompleteVersionstamp = %v, %v", has, err)
			}
		})
	}
}

// TestVectorsOtherIntTypes packs every integer vector from each Go integer
// type that can hold it: the encoding depends on the value only.
func TestVectorsOtherIntTypes(t *testing.T) {
	tv := loadVectors(t)
	for _, v := range tv.vectors {
		if len(v.tuple) != 1 || typeRank(v.tuple[0]) != 4 {
			continue
		}
		x := asBig(v.tuple[0])
		var forms []any
		forms = append(forms, new(big.Int).Set(x), *new(big.Int).Set(x))
		if x.IsInt64() {
			i := x.Int64()
			forms = append(forms, int(i))
			if i == int64(int8(i)) {
				forms = append(forms, int8(i))
			}
			if i == int64(int16(i)) {
				forms = append(forms, int16(i))
			}
			if i == int64(int32(i)) {
				forms = append(forms, int32(i))
			}
		}
		if x.IsUint64() {
			u := x.Uint64()
			forms = append(forms, uint(u), u)
			if u == uint64(uint8(u)) {
				forms = append(forms, uint8(u))
			}
			if u == uint64(uint16(u)) {
				forms = append(forms, uint16(u))
			}
			if u == uint64(uint32(u)) {
				forms = append(forms, uint32(u))
			}
		}
		for _, f := range forms {
			if got := (Tuple{f}).Pack(); !bytes.Equal(got, v.packed) {
				t.Errorf("%s: Pack(%T %v) = %x, want %x", v.name, f, f, got, v.packed)
			}
		}
	}
}

func TestSortedVectors(t *testing.T) {
	tv := loadVectors(t)
	var prev []byte
	for i, v := range tv.sorted {
		got := v.tuple.Pack()
		if !bytes.Equal(got, v.packed) {
			t.Fatalf("sorted[%d] %v: Pack = %x, want %x", i, v.tuple, got, v.packed)
		}
		if i > 0 && bytes.Compare(prev, got) >= 0 {
			t.Fatalf("sorted[%d] %v: %x does not sort after %x", i, v.tuple, got, prev)
		}
		if i > 0 && compareTuples(tv.sorted[i-1].tuple, v.tuple) >= 0 {
			t.Fatalf("reference order disagrees at sorted[%d] %v", i, v.tuple)
		}
		back, err := Unpack(got)
		if err != nil {
			t.Fatal(err)
		}
		if d := tupleDiff(back, v.tuple); d != "" {
			t.Fatalf("sorted[%d]: Unpack = %v: %s", i, back, d)
		}
		prev = got
	}
}

func TestPackWithVersionstampVector(t *testing.T) {
	tv := loadVectors(t)
	got, err := tv.vsTuple.PackWithVersionstamp(tv.vsPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, tv.vsPacked) {
		t.Fatalf("PackWithVersionstamp = %x, want %x", got, tv.vsPacked)
	}
	if has, err := tv.vsTuple.HasIncompleteVersionstamp(); !has || err != nil {
		t.Fatalf("HasIncompleteVersionstamp = %v, %v", has, err)
	}
}

func TestPackWithVersionstamp(t *testing.T) {
	inc := IncompleteVersionstamp(7)
	complete := Versionstamp{TransactionVersion: [10]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, UserVersion: 3}
	tests := []struct {
		name    string
		prefix  []byte
		tuple   Tuple
		wantPos int
		wantErr error
	}{
		{"top level, no prefix", nil, Tuple{inc}, 1, nil},
		{"after prefix and elements", []byte{0xaa, 0xbb}, Tuple{"ab", int64(1), complete, inc}, 2 + 4 + 2 + 13 + 1, nil},
		{"nested", []byte{0xaa}, Tuple{Tuple{nil, inc}, "x"}, 1 + 1 + 2 + 1, nil},
		{"none", nil, Tuple{"a", complete}, 0, ErrNoIncompleteVersionstamp},
		{"empty", nil, Tuple{}, 0, ErrNoIncompleteVersionstamp},
		{"two", nil, Tuple{inc, inc}, 0, ErrMultipleIncompleteVersionstamps},
		{"two, one nested", nil, Tuple{inc, Tuple{inc}}, 0, ErrMultipleIncompleteVersionstamps},
		{"unsupported element", nil, Tuple{inc, struct{}{}}, 0, ErrUnsupportedType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.tuple.PackWithVersionstamp(tc.prefix)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := append(append([]byte{}, tc.prefix...), tc.tuple.Pack()...)
			want = append(want, byte(tc.wantPos), byte(tc.wantPos>>8), byte(tc.wantPos>>16), byte(tc.wantPos>>24))
			if !bytes.Equal(got, want) {
				t.Fatalf("got %x, want %x", got, want)
			}
			if !bytes.Equal(got[tc.wantPos:tc.wantPos+10], bytes.Repeat([]byte{0xff}, 10)) {
				t.Fatalf("offset %d does not point at the placeholder in %x", tc.wantPos, got)
			}
		})
	}
}

func TestHasIncompleteVersionstamp(t *testing.T) {
	inc := IncompleteVersionstamp(1)
	tests := []struct {
		tuple   Tuple
		want    bool
		wantErr error
	}{
		{Tuple{}, false, nil},
		{Tuple{"a", Versionstamp{UserVersion: 1}}, false, nil},
		{Tuple{"a", inc}, true, nil},
		{Tuple{Tuple{Tuple{inc}}}, true, nil},
		{Tuple{inc, []any{inc}}, true, ErrMultipleIncompleteVersionstamps},
		{Tuple{make(chan int)}, false, ErrUnsupportedType},
		{Tuple{(*big.Int)(nil)}, false, ErrUnsupportedType},
		{Tuple{new(big.Int).Lsh(big.NewInt(1), 8*255)}, false, ErrIntTooLarge},
	}
	for _, tc := range tests {
		got, err := tc.tuple.HasIncompleteVersionstamp()
		if got != tc.want || !errors.Is(err, tc.wantErr) {
			t.Errorf("%v: HasIncompleteVersionstamp = %v, %v; want %v, %v", tc.tuple, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestVersionstamp(t *testing.T) {
	v := IncompleteVersionstamp(0x0102)
	if v.IsComplete() {
		t.Fatal("IncompleteVersionstamp is complete")
	}
	if got, want := hex.EncodeToString(v.Bytes()), "ffffffffffffffffffff0102"; got != want {
		t.Fatalf("Bytes = %s, want %s", got, want)
	}
	if !(Versionstamp{}).IsComplete() {
		t.Fatal("zero versionstamp is incomplete")
	}
	// An incomplete versionstamp packs as its placeholder and round-trips.
	k := Tuple{"a", v}.Pack()
	if want := "026100" + "33ffffffffffffffffffff0102"; hex.EncodeToString(k) != want {
		t.Fatalf("Pack = %x, want %s", k, want)
	}
	back, err := Unpack(k)
	if err != nil || tupleDiff(back, Tuple{"a", v}) != "" {
		t.Fatalf("Unpack = %v, %v", back, err)
	}
}

// TestSpecExamples checks the examples of FoundationDB's tuple specification
// (docs/udb.md, "Tuple encoding").
func TestSpecExamples(t *testing.T) {
	tests := []struct {
		name  string
		tuple Tuple
		hex   string
	}{
		{"bytes with nul", Tuple{[]byte("foo\x00bar")}, "01666f6f00ff62617200"},
		{"unicode string", Tuple{"F\u00d4O\u0000bar"}, "0246c3944f00ff62617200"},
		{"nested", Tuple{Tuple{[]byte("foo\x00bar"), nil, Tuple{}}}, "05" + "01666f6f00ff62617200" + "00ff" + "0500" + "00"},
		{"empty nested", Tuple{Tuple{}}, "0500"},
		{"nested null", Tuple{Tuple{nil}}, "0500ff00"},
		{"-1", Tuple{int64(-1)}, "13fe"},
		{"-5551212", Tuple{int64(-5551212)}, "11ab4b93"},
		{"MinInt64", Tuple{int64(math.MinInt64)}, "0c7fffffffffffffff"},
		{"MaxUint64", Tuple{uint64(math.MaxUint64)}, "1cffffffffffffffff"},
		{"-42f", Tuple{float32(-42)}, "203dd7ffff"},
		{"0.0 double", Tuple{float64(0)}, "218000000000000000"},
		{"false", Tuple{false}, "26"},
		{"true", Tuple{true}, "27"},
		{"top-level null", Tuple{nil}, "00"},
		{"versionstamp", Tuple{Versionstamp{[10]byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 2}, 3}}, "3300000000000000010002" + "0003"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.tuple.Pack()
			if hex.EncodeToString(got) != tc.hex {
				t.Fatalf("Pack(%v) = %x, want %s", tc.tuple, got, tc.hex)
			}
			back, err := Unpack(got)
			if err != nil {
				t.Fatal(err)
			}
			if d := tupleDiff(back, normalize(tc.tuple)); d != "" {
				t.Fatalf("Unpack = %v: %s", back, d)
			}
		})
	}
}

// intTestValues returns integers of every encoded size (0 to 255 magnitude
// bytes) and both signs: the boundaries ±(2^(8k)-1), ±2^(8k), ±(2^(8k)+1),
// the 64-bit limits, and random values of each size.
func intTestValues() []*big.Int {
	rng := rand.New(rand.NewPCG(1, 2))
	one := big.NewInt(1)
	var vals []*big.Int
	add := func(x *big.Int) {
		vals = append(vals, new(big.Int).Set(x), new(big.Int).Neg(x))
	}
	add(big.NewInt(0))
	for k := 0; k <= 255; k++ {
		p := new(big.Int).Lsh(one, uint(8*k)) // 2^(8k)
		add(new(big.Int).Sub(p, one))
		if k < 255 {
			add(p)
			add(new(big.Int).Add(p, one))
		}
		if k > 0 {
			// random value with exactly k magnitude bytes
			buf := make([]byte, k)
			for i := range buf {
				buf[i] = byte(rng.Uint32())
			}
			if buf[0] == 0 {
				buf[0] = 1
			}
			add(new(big.Int).SetBytes(buf))
		}
	}
	for _, s := range []string{"9223372036854775807", "9223372036854775808", "9223372036854775809", "18446744073709551615"} {
		x, _ := new(big.Int).SetString(s, 10)
		add(x)
	}
	slices.SortFunc(vals, func(a, b *big.Int) int { return a.Cmp(b) })
	return slices.CompactFunc(vals, func(a, b *big.Int) bool { return a.Cmp(b) == 0 })
}

func TestIntegers(t *testing.T) {
	vals := intTestValues()
	var prev []byte
	for i, x := range vals {
		tup := Tuple{x}
		got := tup.Pack()
		// Expected length from the spec: code, then a length byte for
		// magnitudes over 8 bytes, then the minimal magnitude bytes.
		n := (x.BitLen() + 7) / 8
		wantLen := 1 + n
		if n > 8 {
			wantLen++
		}
		if len(got) != wantLen {
			t.Fatalf("Pack(%v) = %x: length %d, want %d", x, got, len(got), wantLen)
		}
		if i > 0 && bytes.Compare(prev, got) >= 0 {
			t.Fatalf("Pack(%v) = %x does not sort after Pack(%v) = %x", x, got, vals[i-1], prev)
		}
		back, err := Unpack(got)
		if err != nil {
			t.Fatalf("Unpack(%x): %v", got, err)
		}
		if d := tupleDiff(back, Tuple{canonicalInt(x)}); d != "" {
			t.Fatalf("Unpack(Pack(%v)): %s", x, d)
		}
		if !bytes.Equal(Tuple{*x}.Pack(), got) {
			t.Fatalf("big.Int value packs differently from *big.Int for %v", x)
		}
		prev = got
	}
	if len(vals) < 1500 {
		t.Fatalf("only %d test values", len(vals))
	}
}

func TestIntegerTooLarge(t *testing.T) {
	for _, x := range []*big.Int{
		new(big.Int).Lsh(big.NewInt(1), 8*255),
		new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 8*255)),
	} {
		func() {
			defer func() {
				r := recover()
				err, _ := r.(error)
				if !errors.Is(err, ErrIntTooLarge) {
					t.Errorf("Pack(256-byte int) panicked with %v, want ErrIntTooLarge", r)
				}
			}()
			Tuple{x}.Pack()
		}()
	}
}

func TestIntegerDecodeTypes(t *testing.T) {
	tests := []struct {
		hex  string
		want any
	}{
		{"14", int64(0)},
		{"1c7fffffffffffffff", int64(math.MaxInt64)},
		{"1c8000000000000000", uint64(1 << 63)},
		{"1cffffffffffffffff", uint64(math.MaxUint64)},
		{"0c7fffffffffffffff", int64(math.MinInt64)},
		{"0c7ffffffffffffffe", mustBig("-9223372036854775809")},
		{"0c0000000000000000", mustBig("-18446744073709551615")},
		{"1d09010000000000000000", mustBig("18446744073709551616")},
	}
	for _, tc := range tests {
		got, err := Unpack(mustHex(t, tc.hex))
		if err != nil {
			t.Fatalf("%s: %v", tc.hex, err)
		}
		if d := tupleDiff(got, Tuple{tc.want}); d != "" {
			t.Errorf("Unpack(%s): %s", tc.hex, d)
		}
	}
}

func mustBig(s string) *big.Int {
	x, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return x
}

func TestFloatOrder(t *testing.T) {
	f32 := []float32{
		math.Float32frombits(0xffffffff), // negative NaN, largest payload: first
		math.Float32frombits(0xffc00000), // negative quiet NaN
		float32(math.Inf(-1)),
		-math.MaxFloat32,
		-1,
		-math.SmallestNonzeroFloat32,
		float32(math.Copysign(0, -1)),
		0,
		math.SmallestNonzeroFloat32,
		1,
		math.MaxFloat32,
		float32(math.Inf(1)),
		math.Float32frombits(0x7fc00000), // quiet NaN
		math.Float32frombits(0x7fffffff), // last
	}
	f64 := []float64{
		math.Float64frombits(0xffffffffffffffff),
		math.Float64frombits(0xfff8000000000000),
		math.Inf(-1),
		-math.MaxFloat64,
		-1,
		-math.SmallestNonzeroFloat64,
		math.Copysign(0, -1),
		0,
		math.SmallestNonzeroFloat64,
		1,
		math.MaxFloat64,
		math.Inf(1),
		math.Float64frombits(0x7ff0000000000001), // signalling NaN: kept as is
		math.NaN(),                               // 0x7ff8000000000001
		math.Float64frombits(0x7fffffffffffffff),
	}
	var tuples []Tuple
	for _, f := range f32 {
		tuples = append(tuples, Tuple{f})
	}
	for _, f := range f64 {
		tuples = append(tuples, Tuple{f})
	}
	for i, tup := range tuples {
		k := tup.Pack()
		back, err := Unpack(k)
		if err != nil {
			t.Fatal(err)
		}
		if d := tupleDiff(back, tup); d != "" {
			t.Fatalf("round trip of %x: %s", k, d)
		}
		if i == 0 {
			continue
		}
		prev := tuples[i-1].Pack()
		if bytes.Compare(prev, k) >= 0 {
			t.Fatalf("%v (%x) does not sort after %v (%x)", tup, k, tuples[i-1], prev)
		}
		if compareTuples(tuples[i-1], tup) >= 0 {
			t.Fatalf("reference order disagrees at %v", tup)
		}
	}
	// Random floats: byte order must match numeric order for non-NaNs.
	rng := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		a, b := math.Float64frombits(rng.Uint64()), math.Float64frombits(rng.Uint64())
		if math.IsNaN(a) || math.IsNaN(b) || a == b {
			continue
		}
		c := bytes.Compare(Tuple{a}.Pack(), Tuple{b}.Pack())
		if (a < b) != (c < 0) {
			t.Fatalf("%v vs %v: byte compare %d", a, b, c)
		}
	}
}

func TestUnpackErrors(t *testing.T) {
	tests := []struct {
		hex     string
		wantMsg string
		wantOff int
	}{
		{"03", "unknown or reserved type code 0x03", 0},
		{"04", "unknown or reserved type code 0x04", 0},
		{"0a", "unknown or reserved type code 0x0a", 0},
		{"1e", "unknown or reserved type code 0x1e", 0},
		{"22", "unknown or reserved type code 0x22", 0},
		{"24", "unknown or reserved type code 0x24", 0},
		{"31", "unknown or reserved type code 0x31", 0},
		{"32", "unknown or reserved type code 0x32", 0},
		{"34", "unknown or reserved type code 0x34", 0},
		{"35", "unknown or reserved type code 0x35", 0},
		{"40", "unknown or reserved type code 0x40", 0},
		{"4f", "unknown or reserved type code 0x4f", 0},
		{"f0", "unknown or reserved type code 0xf0", 0},
		{"ff", "unknown or reserved type code 0xff", 0},
		{"1400ff", "unknown or reserved type code 0xff", 2}, // top-level null, then a stray 0xff
		{"01", "unterminated string", 0},
		{"01666f6f", "unterminated string", 0},
		{"14026100ff", "unterminated string", 1}, // 00 ff is an escape, not the end
		{"15", "truncated integer: need 1 bytes, have 0", 0},
		{"1cffff", "truncated integer: need 8 bytes, have 2", 0},
		{"0c00", "truncated integer: need 8 bytes, have 1", 0},
		{"1d", "truncated big integer: missing length byte", 0},
		{"1d0a0102", "truncated big integer: need 10 bytes, have 2", 0},
		{"0bf5", "truncated big integer: need 10 bytes, have 0", 0},
		{"20000000", "truncated float: need 4 bytes, have 3", 0},
		{"2100", "truncated double: need 8 bytes, have 1", 0},
		{"30000102", "truncated UUID: need 16 bytes, have 3", 0},
		{"33ffff", "truncated versionstamp: need 12 bytes, have 2", 0},
		{"05", "unterminated nested tuple", 0},
		{"140505", "unterminated nested tuple", 2},
		{"050500", "unterminated nested tuple", 0},
		{"0500ff", "unterminated nested tuple", 0},
		{"0540", "unknown or reserved type code 0x40", 1},
	}
	for _, tc := range tests {
		got, err := Unpack(mustHex(t, tc.hex))
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("Unpack(%s) = %v, %v; want a *DecodeError", tc.hex, got, err)
			continue
		}
		if de.Msg != tc.wantMsg || de.Offset != tc.wantOff {
			t.Errorf("Unpack(%s): %q at %d, want %q at %d", tc.hex, de.Msg, de.Offset, tc.wantMsg, tc.wantOff)
		}
		if !strings.HasPrefix(err.Error(), "tuple: ") {
			t.Errorf("error %q lacks the package prefix", err)
		}
	}
}

// TestNonCanonical lists the inputs Unpack accepts although Pack never
// produces them, with what they decode to and the canonical re-encoding.
func TestNonCanonical(t *testing.T) {
	tests := []struct {
		name, hex string
		want      Tuple
		canonical string
	}{
		{"deprecated true", "25", Tuple{true}, "27"},
		{"zero with one byte", "1500", Tuple{int64(0)}, "14"},
		{"leading zero", "160001", Tuple{int64(1)}, "1501"},
		{"negative zero", "13ff", Tuple{int64(0)}, "14"},
		{"negative leading 0xff", "12fffe", Tuple{int64(-1)}, "13fe"},
		{"big positive, small value", "1d0101", Tuple{int64(1)}, "1501"},
		{"big positive, empty", "1d00", Tuple{int64(0)}, "14"},
		{"big negative, small value", "0bfefe", Tuple{int64(-1)}, "13fe"},
		{"big negative, empty", "0bff", Tuple{int64(0)}, "14"},
		{"big, leading zeros", "1d0a00010000000000000000", Tuple{mustBig("18446744073709551616")}, "1d09010000000000000000"},
		{"nested", "0515000000", Tuple{Tuple{int64(0)}, nil}, "051400" + "00"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Unpack(mustHex(t, tc.hex))
			if err != nil {
				t.Fatal(err)
			}
			if d := tupleDiff(got, tc.want); d != "" {
				t.Fatalf("Unpack = %v: %s", got, d)
			}
			if k := got.Pack(); hex.EncodeToString(k) != tc.canonical {
				t.Fatalf("Pack(Unpack) = %x, want %s", k, tc.canonical)
			}
		})
	}
}

func TestUnpackCopies(t *testing.T) {
	k := Tuple{[]byte("abc"), []byte("a\x00b")}.Pack()
	got, err := Unpack(k)
	if err != nil {
		t.Fatal(err)
	}
	for i := range k {
		k[i] = 'X'
	}
	if string(got[0].([]byte)) != "abc" || string(got[1].([]byte)) != "a\x00b" {
		t.Fatalf("Unpack result aliases its input: %v", got)
	}
}

func TestPackPanicsOnUnsupportedType(t *testing.T) {
	for _, e := range []any{struct{}{}, make(chan int), [16]byte{}, (*big.Int)(nil), map[string]int{}, uintptr(1), complex(1, 2)} {
		func() {
			defer func() {
				r := recover()
				err, _ := r.(error)
				if !errors.Is(err, ErrUnsupportedType) {
					t.Errorf("Pack(%T) panicked with %v, want ErrUnsupportedType", e, r)
				}
			}()
			Tuple{"ok", Tuple{e}}.Pack()
			t.Errorf("Pack(%T) did not panic", e)
		}()
	}
}

func TestStrinc(t *testing.T) {
	tests := []struct {
		in, want string
		err      bool
	}{
		{"", "", true},
		{"ff", "", true},
		{"ffff", "", true},
		{"00", "01", false},
		{"61", "62", false},
		{"61ff", "62", false},
		{"6162ffff", "6163", false},
		{"01fe", "01ff", false},
		{"fe", "ff", false},
		{"00ff00ff", "00ff01", false},
	}
	for _, tc := range tests {
		in := mustHex(t, tc.in)
		orig := slices.Clone(in)
		got, err := Strinc(in)
		if tc.err {
			if !errors.Is(err, ErrStrincAllFF) {
				t.Errorf("Strinc(%s) = %x, %v; want ErrStrincAllFF", tc.in, got, err)
			}
			continue
		}
		if err != nil || hex.EncodeToString(got) != tc.want {
			t.Errorf("Strinc(%s) = %x, %v; want %s", tc.in, got, err, tc.want)
		}
		if !bytes.Equal(in, orig) {
			t.Errorf("Strinc modified its input")
		}
	}
}

func TestFDBRangeKeys(t *testing.T) {
	base := Tuple{"ns", int64(3)}
	begin, end := base.FDBRangeKeys()
	p := base.Pack()
	if !bytes.Equal(begin, append(slices.Clip(p), 0x00)) || !bytes.Equal(end, append(slices.Clip(p), 0xff)) {
		t.Fatalf("FDBRangeKeys = %x, %x", begin, end)
	}
	in := func(k []byte) bool { return bytes.Compare(k, begin) >= 0 && bytes.Compare(k, end) < 0 }
	if in(p) {
		t.Error("the tuple's own key is inside its range")
	}
	for _, ext := range []Tuple{{nil}, {[]byte{}}, {""}, {"\xff\xff"}, {Tuple{}}, {int64(math.MinInt64)}, {mustBig("1" + strings.Repeat("0", 300))}, {math.Inf(1)}, {true}, {UUID{0xff}}, {IncompleteVersionstamp(0xffff)}, {int64(1), "more"}} {
		k := append(slices.Clip(p), ext.Pack()...)
		if !in(k) {
			t.Errorf("%v extended by %v = %x is outside [%x, %x)", base, ext, k, begin, end)
		}
	}
	for _, other := range []Tuple{{"ns"}, {"ns", int64(2)}, {"ns", int64(4)}, {"ns", int64(3) << 8}, {"nt"}, {"ns\x00"}} {
		if k := other.Pack(); in(k) {
			t.Errorf("%v = %x is inside the range of %v", other, k, base)
		}
	}
	// Appending to begin must not clobber end.
	_ = append(begin, 0x42)
	if end[len(end)-1] != 0xff || !bytes.Equal(end[:len(end)-1], p) {
		t.Fatalf("end changed after append to begin: %x", end)
	}
	// Empty tuple: the whole tuple key space.
	b0, e0 := Tuple{}.FDBRangeKeys()
	if !bytes.Equal(b0, []byte{0x00}) || !bytes.Equal(e0, []byte{0xff}) {
		t.Fatalf("empty tuple range = %x, %x", b0, e0)
	}
}

func TestString(t *testing.T) {
	tup := Tuple{nil, []byte("a\x00\""), "s\"", int64(-1), uint64(math.MaxUint64), mustBig("-18446744073709551616"),
		float32(1.5), 2.5, true, UUID{1}, Tuple{"x"}, IncompleteVersionstamp(2)}
	want := `(None, b"a\x00\"", "s\"", -1, 18446744073709551615, -18446744073709551616, 1.5f, 2.5, true, ` +
		`UUID(01000000-0000-0000-0000-000000000000), ("x",), Versionstamp(ffffffffffffffffffff, 2))`
	if got := tup.String(); got != want {
		t.Fatalf("String =\n%s\nwant\n%s", got, want)
	}
}

// TestPackAllocs pins Pack of a typical key at one allocation (the result).
func TestPackAllocs(t *testing.T) {
	key := benchKey()
	if n := testing.AllocsPerRun(100, func() { _ = key.Pack() }); n != 1 {
		t.Fatalf("Pack allocates %v times, want 1", n)
	}
	buf := make([]byte, 0, 128)
	if n := testing.AllocsPerRun(100, func() { buf = key.AppendPack(buf[:0]) }); n != 0 {
		t.Fatalf("AppendPack into a large enough buffer allocates %v times, want 0", n)
	}
}

// TestDeepNesting: Unpack is iterative, so adversarial nesting depth costs
// memory in proportion to the input, never a stack overflow.
func TestDeepNesting(t *testing.T) {
	const depth = 100_000
	k := append(bytes.Repeat([]byte{nestedCode}, depth), bytes.Repeat([]byte{0x00}, depth)...)
	got, err := Unpack(k)
	if err != nil {
		t.Fatal(err)
	}
	inner := got
	for i := 0; i < depth; i++ {
		if len(inner) != 1 {
			t.Fatalf("level %d has %d elements", i, len(inner))
		}
		inner = inner[0].(Tuple)
	}
	if len(inner) != 0 {
		t.Fatalf("innermost tuple has %d elements", len(inner))
	}
	if !bytes.Equal(got.Pack(), k) {
		t.Fatal("deeply nested tuple does not pack back to its input")
	}
	if _, err := Unpack(k[:len(k)-1]); err == nil {
		t.Fatal("missing final terminator accepted")
	}
}
