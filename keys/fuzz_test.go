package keys

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzUnpackKeys runs every Unpack function on the input: none may panic,
// every failure wraps ErrBadKey, and an accepted key packs to bytes that
// unpack to the same key (inputs may use non-canonical tuple encodings, so
// the bytes themselves may differ).
func FuzzUnpackKeys(f *testing.F) {
	cases := allKeyCases()
	for _, c := range cases {
		f.Add(c.key.Pack())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, c := range cases {
			got, err := c.unpack(b)
			if err != nil {
				if !errors.Is(err, ErrBadKey) {
					t.Fatalf("%s: error %v does not wrap ErrBadKey", c.name, err)
				}
				continue
			}
			var repacked []byte
			switch g := got.(type) {
			case chunkRef:
				repacked = g.key.(interface{ ChunkKey(int) []byte }).ChunkKey(g.chunk)
			case packer:
				repacked = g.Pack()
			default:
				t.Fatalf("%s: unpacked %T", c.name, got)
			}
			again, err := c.unpack(repacked)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("%s: Unpack(Pack(Unpack(%x))) = %+v, %v; want %+v", c.name, b, again, err, got)
			}
		}
	})
}

// FuzzDecodeValues runs every value decoder on the input: none may panic,
// every failure wraps ErrBadValue, and an accepted value encodes to bytes
// that decode to the same value.
func FuzzDecodeValues(f *testing.F) {
	cases := allValueCases()
	for _, c := range cases {
		f.Add(c.encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, c := range cases {
			got, err := c.decode(b)
			if err != nil {
				if !errors.Is(err, ErrBadValue) {
					t.Fatalf("%s: error %v does not wrap ErrBadValue", c.name, err)
				}
				continue
			}
			again, err := c.decode(c.encodeAny(got))
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("%s: Decode(Encode(Decode(%x))) = %+v, %v; want %+v", c.name, b, again, err, got)
			}
		}
	})
}
