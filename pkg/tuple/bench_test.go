package tuple

import "testing"

// benchKey is a typical engine key: ("actor", 16-byte id, "name", int64).
func benchKey() Tuple {
	id := []byte{0x3f, 0x2a, 0x91, 0x00, 0x5e, 0xc4, 0x47, 0x1b, 0x8d, 0x02, 0xee, 0x7a, 0x10, 0x66, 0xb9, 0x54}
	return Tuple{"actor", id, "name", int64(1750000000000)}
}

func BenchmarkPack(b *testing.B) {
	key := benchKey()
	b.ReportAllocs()
	for b.Loop() {
		_ = key.Pack()
	}
}

func BenchmarkAppendPack(b *testing.B) {
	key := benchKey()
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = key.AppendPack(buf[:0])
	}
}

func BenchmarkUnpack(b *testing.B) {
	packed := benchKey().Pack()
	b.ReportAllocs()
	b.SetBytes(int64(len(packed)))
	for b.Loop() {
		if _, err := Unpack(packed); err != nil {
			b.Fatal(err)
		}
	}
}
