package subspace

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/berthhq/berth/pkg/tuple"
)

func TestConstructors(t *testing.T) {
	tests := []struct {
		name string
		s    Subspace
		hex  string
	}{
		{"AllKeys", AllKeys(), ""},
		{"zero value", Subspace{}, ""},
		{"FromBytes", FromBytes([]byte{0xfe, 0x00}), "fe00"},
		{"Sub", Sub(int64(0), int64(3)), "14" + "1503"},
		{"Sub of Sub", Sub(int64(0)).Sub("ns", nil), "14" + "026e7300" + "00"},
		{"AllKeys.Sub", AllKeys().Sub(int64(0), int64(3)), "141503"},
		{"FromBytes.Sub", FromBytes([]byte{0xaa}).Sub(true), "aa27"},
		{"Sub of nothing", Sub(), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := hex.EncodeToString(tc.s.Bytes()); got != tc.hex {
				t.Fatalf("Bytes = %s, want %s", got, tc.hex)
			}
		})
	}
}

func TestFromBytesCopies(t *testing.T) {
	b := []byte{1, 2}
	s := FromBytes(b)
	b[0] = 9
	if !bytes.Equal(s.Bytes(), []byte{1, 2}) {
		t.Fatal("FromBytes aliases its argument")
	}
	s.Bytes()[0] = 9
	if !bytes.Equal(s.Bytes(), []byte{1, 2}) {
		t.Fatal("Bytes exposes the internal prefix")
	}
}

func TestPackUnpack(t *testing.T) {
	s := Sub("actor")
	k := s.Pack(tuple.Tuple{[]byte{1, 0, 2}, "name", int64(-7)})
	if want := "026163746f7200" + "010100ff0200" + "026e616d6500" + "13f8"; hex.EncodeToString(k) != want {
		t.Fatalf("Pack = %x, want %s", k, want)
	}
	if !s.Contains(k) {
		t.Fatal("Contains(Pack) = false")
	}
	got, err := s.Unpack(k)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != `(b"\x01\x00\x02", "name", -7)` {
		t.Fatalf("Unpack = %v", got)
	}
	// Packing must never write into the subspace's prefix array.
	s2 := s.Sub("x")
	_ = s.Pack(tuple.Tuple{"y"})
	if !bytes.Equal(s2.Bytes(), tuple.Tuple{"actor", "x"}.Pack()) {
		t.Fatal("Pack changed a derived subspace")
	}
	// The prefix key itself is contained and unpacks to the empty tuple.
	empty, err := s.Unpack(s.Bytes())
	if err != nil || len(empty) != 0 {
		t.Fatalf("Unpack(prefix) = %v, %v", empty, err)
	}
}

func TestUnpackErrors(t *testing.T) {
	s := Sub(int64(5))
	for _, k := range [][]byte{nil, {}, {0x15}, {0x15, 0x06}, {0x16, 0x05, 0x00}, tuple.Tuple{int64(6), "a"}.Pack()} {
		if s.Contains(k) {
			t.Errorf("Contains(%x) = true", k)
		}
		if got, err := s.Unpack(k); err == nil {
			t.Errorf("Unpack(%x) = %v, want an error", k, got)
		}
	}
	// In the subspace, but not a valid tuple after the prefix.
	k := append(s.Bytes(), 0x40)
	_, err := s.Unpack(k)
	var de *tuple.DecodeError
	if !errors.As(err, &de) || de.Offset != 0 {
		t.Fatalf("Unpack(%x) = %v, want a *tuple.DecodeError at offset 0", k, err)
	}
}

func TestAllKeys(t *testing.T) {
	s := AllKeys()
	for _, k := range [][]byte{nil, {0x00}, {0xff, 0xff}} {
		if !s.Contains(k) {
			t.Errorf("AllKeys does not contain %x", k)
		}
	}
	k := s.Pack(tuple.Tuple{"a"})
	if !bytes.Equal(k, tuple.Tuple{"a"}.Pack()) {
		t.Fatalf("AllKeys().Pack = %x", k)
	}
	begin, end := s.FDBRangeKeys()
	if !bytes.Equal(begin, []byte{0x00}) || !bytes.Equal(end, []byte{0xff}) {
		t.Fatalf("AllKeys range = %x, %x", begin, end)
	}
}

func TestFDBRangeKeys(t *testing.T) {
	s := Sub("ns", int64(3))
	p := s.Bytes()
	begin, end := s.FDBRangeKeys()
	if !bytes.Equal(begin, append(s.Bytes(), 0x00)) || !bytes.Equal(end, append(s.Bytes(), 0xff)) {
		t.Fatalf("FDBRangeKeys = %x, %x", begin, end)
	}
	in := func(k []byte) bool { return bytes.Compare(k, begin) >= 0 && bytes.Compare(k, end) < 0 }
	if in(p) {
		t.Error("the prefix key itself is inside the range")
	}
	if !s.Contains(p) {
		t.Error("the prefix key itself is not contained")
	}
	for _, tup := range []tuple.Tuple{{nil}, {[]byte{}}, {"\xff"}, {int64(-1) << 62}, {tuple.UUID{0xff}}, {tuple.Tuple{"deep"}, false}} {
		k := s.Pack(tup)
		if !in(k) || !s.Contains(k) {
			t.Errorf("Pack(%v) = %x not in range [%x, %x) or not contained", tup, k, begin, end)
		}
	}
	for _, k := range [][]byte{Sub("ns").Bytes(), Sub("ns", int64(4)).Bytes(), Sub("ns", int64(2), "z").Bytes(), end} {
		if in(k) {
			t.Errorf("%x is inside [%x, %x)", k, begin, end)
		}
	}
	_ = append(begin, 0x42)
	if end[len(end)-1] != 0xff {
		t.Fatal("appending to begin overwrote end")
	}
}

func TestPackWithVersionstamp(t *testing.T) {
	s := FromBytes([]byte{0xaa})
	got, err := s.PackWithVersionstamp(tuple.Tuple{"a", tuple.IncompleteVersionstamp(7)})
	if err != nil {
		t.Fatal(err)
	}
	// The vector measured with the official encoder (docs/udb.md, "Tuple encoding").
	if want := "aa02610033ffffffffffffffffffff000705000000"; hex.EncodeToString(got) != want {
		t.Fatalf("PackWithVersionstamp = %x, want %s", got, want)
	}
	if _, err := s.PackWithVersionstamp(tuple.Tuple{"a"}); !errors.Is(err, tuple.ErrNoIncompleteVersionstamp) {
		t.Fatalf("without a versionstamp: %v", err)
	}
}

func TestString(t *testing.T) {
	if got := Sub("a").String(); got != "Subspace(026100)" {
		t.Fatalf("String = %s", got)
	}
}

func TestPackAllocs(t *testing.T) {
	s := Sub("actor", []byte("0123456789abcdef"))
	tup := tuple.Tuple{"name", int64(42)}
	if n := testing.AllocsPerRun(100, func() { _ = s.Pack(tup) }); n != 1 {
		t.Fatalf("Subspace.Pack allocates %v times, want 1", n)
	}
}
