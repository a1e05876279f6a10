package tuple

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"slices"
	"testing"
)

// FuzzUnpack checks that Unpack never panics, fails only with a
// *DecodeError, and that whatever it accepts packs back to the same bytes
// unless the input used one of the non-canonical forms (see nonCanonical).
func FuzzUnpack(f *testing.F) {
	tv := loadVectors(f)
	for _, v := range append(tv.vectors, tv.sorted...) {
		f.Add(v.packed)
	}
	f.Add(tv.vsPacked)
	f.Add(tv.vsTuple.Pack())
	for _, s := range []string{"25", "1500", "13ff", "0bfefe", "1d0101", "0515000000", "05", "0500ff", "01", "40",
		"41010203", "41ff0000", "4101", "054100ff0000ff00", "4261"} {
		f.Add(mustHex(f, s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tup, err := Unpack(b)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Offset < 0 || de.Offset >= len(b) {
				t.Fatalf("Unpack(%x): error %v is not a *DecodeError with an offset inside the input", b, err)
			}
			return
		}
		k := tup.Pack()
		back, err := Unpack(k)
		if err != nil {
			t.Fatalf("Unpack(Pack(Unpack(%x))) = Unpack(%x): %v", b, k, err)
		}
		if d := tupleDiff(back, tup); d != "" {
			t.Fatalf("Unpack(Pack(t)) != t for t = Unpack(%x) = %v: %s", b, tup, d)
		}
		if k2 := back.Pack(); !bytes.Equal(k2, k) {
			t.Fatalf("Pack(Unpack(k)) = %x != k = %x", k2, k)
		}
		if nc := nonCanonical(b); nc == bytes.Equal(k, b) {
			t.Fatalf("input %x: nonCanonical = %v but Pack(Unpack) = %x", b, nc, k)
		}
		if len(k) > len(b) {
			t.Fatalf("canonical form %x is longer than input %x", k, b)
		}
	})
}

// nonCanonical reports whether a valid packed tuple b uses an encoding Pack
// never emits. It is written from the specification, apart from Unpack:
//   - 0x25, the deprecated true;
//   - an integer of codes 0x0c..0x1c whose magnitude has a leading zero byte
//     (payload starts 0x00 if positive, 0xff if negative), including -0;
//   - a 0x1d/0x0b integer whose magnitude fits in 8 bytes or has a leading
//     zero byte.
//
// The only user type code it knows is the test type's (testUserCode).
func nonCanonical(b []byte) bool {
	depth := 0
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == 0x00:
			if depth > 0 && i+1 < len(b) && b[i+1] == 0xff {
				i += 2
			} else {
				if depth > 0 {
					depth--
				}
				i++
			}
		case c == 0x01 || c == 0x02:
			i++
			for !(b[i] == 0x00 && (i+1 == len(b) || b[i+1] != 0xff)) {
				if b[i] == 0x00 {
					i++
				}
				i++
			}
			i++
		case c == 0x05:
			depth++
			i++
		case c == 0x14:
			i++
		case c >= 0x15 && c <= 0x1c:
			if b[i+1] == 0x00 {
				return true
			}
			i += 1 + int(c-0x14)
		case c >= 0x0c && c <= 0x13:
			if b[i+1] == 0xff {
				return true
			}
			i += 1 + int(0x14-c)
		case c == 0x1d:
			n := int(b[i+1])
			if n <= 8 || b[i+2] == 0x00 {
				return true
			}
			i += 2 + n
		case c == 0x0b:
			n := int(b[i+1] ^ 0xff)
			if n <= 8 || b[i+2] == 0xff {
				return true
			}
			i += 2 + n
		case c == 0x20:
			i += 5
		case c == 0x21:
			i += 9
		case c == 0x25:
			return true
		case c == 0x26 || c == 0x27:
			i++
		case c == 0x30:
			i += 17
		case c == 0x33:
			i += 13
		case c == testUserCode:
			i += 1 + testUserSize
		default:
			panic("nonCanonical: invalid input")
		}
	}
	return false
}

// FuzzPackRoundTrip builds two tuples from the fuzz input, with elements of
// every supported Go type, and checks the round trip, AppendPack, the range
// helpers, the versionstamp helpers, and that byte order equals tuple order.
func FuzzPackRoundTrip(f *testing.F) {
	tv := loadVectors(f)
	for i := 1; i < len(tv.sorted); i++ {
		f.Add(tv.sorted[i-1].packed, tv.sorted[i].packed)
	}
	for _, v := range tv.vectors {
		f.Add(v.packed, v.packed)
	}
	f.Add([]byte{3, 1, 2, 0, 0xff, 4, 5, 1, 2, 3, 4, 5, 6, 7, 8}, []byte{3, 3, 4, 13, 0xff})
	f.Add([]byte{19, 0xff, 8, 0xff}, []byte{8, 0x89, 1})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ta, tb := genTuple(a), genTuple(b)
		ka := checkRoundTrip(t, ta)
		kb := checkRoundTrip(t, tb)
		if got, want := sign(bytes.Compare(ka, kb)), sign(compareTuples(ta, tb)); got != want {
			t.Fatalf("order mismatch: %v vs %v: bytes %d, tuples %d\n%x\n%x", ta, tb, got, want, ka, kb)
		}
	})
}

func checkRoundTrip(t *testing.T, tup Tuple) []byte {
	t.Helper()
	k := tup.Pack()
	back, err := Unpack(k)
	if err != nil {
		t.Fatalf("Unpack(Pack(%v) = %x): %v", tup, k, err)
	}
	if d := tupleDiff(back, normalize(tup)); d != "" {
		t.Fatalf("Unpack(Pack(%v)) = %v: %s", tup, back, d)
	}
	if nonCanonical(k) {
		t.Fatalf("Pack(%v) = %x is not canonical", tup, k)
	}
	if got := tup.AppendPack([]byte{0xab}); !bytes.Equal(got[1:], k) || got[0] != 0xab {
		t.Fatalf("AppendPack = %x, Pack = %x", got, k)
	}
	begin, end := tup.FDBRangeKeys()
	if !bytes.Equal(begin, append(slices.Clip(k), 0)) || !bytes.Equal(end, append(slices.Clip(k), 0xff)) {
		t.Fatalf("FDBRangeKeys = %x, %x for %x", begin, end, k)
	}
	ext := append(slices.Clip(k), Tuple{tup}.Pack()...)
	if bytes.Compare(ext, begin) < 0 || bytes.Compare(ext, end) >= 0 {
		t.Fatalf("%x outside [%x, %x)", ext, begin, end)
	}

	has, herr := tup.HasIncompleteVersionstamp()
	vk, verr := tup.PackWithVersionstamp([]byte{0x01})
	switch {
	case herr != nil:
		if !errors.Is(herr, ErrMultipleIncompleteVersionstamps) || !errors.Is(verr, ErrMultipleIncompleteVersionstamps) {
			t.Fatalf("HasIncompleteVersionstamp: %v, PackWithVersionstamp: %v", herr, verr)
		}
	case !has:
		if !errors.Is(verr, ErrNoIncompleteVersionstamp) {
			t.Fatalf("PackWithVersionstamp without a versionstamp: %v", verr)
		}
	default:
		if verr != nil {
			t.Fatal(verr)
		}
		if !bytes.Equal(vk[1:len(vk)-4], k) {
			t.Fatalf("PackWithVersionstamp = %x, Pack = %x", vk, k)
		}
		pos := int(binary.LittleEndian.Uint32(vk[len(vk)-4:]))
		if pos < 2 || pos+12 > len(vk)-4 || vk[pos-1] != versionstampCode ||
			!bytes.Equal(vk[pos:pos+10], incompleteTransactionVersion[:]) {
			t.Fatalf("PackWithVersionstamp = %x: bad placeholder offset %d", vk, pos)
		}
	}
	return k
}

// genTuple interprets data as a program that builds a tuple, so the fuzzer
// can explore every element type, nesting and value range.
func genTuple(data []byte) Tuple {
	g := &tupleGen{data: data}
	return g.tuple(0)
}

type tupleGen struct{ data []byte }

func (g *tupleGen) byte() byte {
	if len(g.data) == 0 {
		return 0
	}
	c := g.data[0]
	g.data = g.data[1:]
	return c
}

func (g *tupleGen) bytes(n int) []byte {
	out := make([]byte, n)
	copy(out, g.data)
	g.data = g.data[min(n, len(g.data)):]
	return out
}

func (g *tupleGen) uint64() uint64 { return binary.BigEndian.Uint64(g.bytes(8)) }

func (g *tupleGen) tuple(depth int) Tuple {
	t := Tuple{}
	for len(g.data) > 0 && len(t) < 64 {
		switch op := g.byte(); op % 21 {
		case 0:
			t = append(t, nil)
		case 1:
			t = append(t, g.bytes(int(g.byte()%8)))
		case 2:
			t = append(t, string(g.bytes(int(g.byte()%8))))
		case 3:
			if depth < 5 {
				t = append(t, g.tuple(depth+1))
			}
		case 4:
			if depth > 0 {
				return t
			}
		case 5:
			t = append(t, int64(g.uint64()))
		case 6:
			t = append(t, int8(g.byte()))
		case 7:
			t = append(t, g.uint64())
		case 8, 17:
			n := g.byte()
			x := new(big.Int).SetBytes(g.bytes(int(n % 40)))
			if n&0x80 != 0 {
				x.Neg(x)
			}
			if op%20 == 8 {
				t = append(t, x)
			} else {
				t = append(t, *x)
			}
		case 9:
			t = append(t, math.Float32frombits(uint32(g.uint64())))
		case 10:
			t = append(t, math.Float64frombits(g.uint64()))
		case 11:
			t = append(t, g.byte()&1 == 1)
		case 12:
			t = append(t, UUID(g.bytes(16)))
		case 13:
			c := g.byte()
			var v Versionstamp
			if c&1 == 1 {
				v = IncompleteVersionstamp(uint16(c >> 1))
			} else {
				copy(v.TransactionVersion[:], g.bytes(10))
				v.UserVersion = uint16(c >> 1)
			}
			t = append(t, v)
		case 14:
			t = append(t, int(int64(g.uint64())>>(g.byte()%64)))
		case 15:
			if c := g.byte(); c&1 == 1 {
				t = append(t, uint16(c)<<8|uint16(g.byte()))
			} else {
				t = append(t, uint32(g.uint64()))
			}
		case 16:
			if depth < 5 {
				t = append(t, []any(g.tuple(depth+1)))
			}
		case 18:
			t = append(t, int64(int8(g.byte())))
		case 19:
			// Integers with up to 255 magnitude bytes: a repeated pattern.
			n, c := int(g.byte()), g.byte()
			x := new(big.Int).SetBytes(bytes.Repeat([]byte{c | 1}, n))
			if c&0x80 != 0 {
				x.Neg(x)
			}
			t = append(t, x)
		case 20:
			// The test user type; its decoder rejects a leading 0xff.
			u := testUser(g.bytes(testUserSize))
			u[0] &= 0x7f
			t = append(t, u)
		}
	}
	return t
}
