package bare

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/big"
	"testing"
)

// checkDecodeError fails unless err is a *DecodeError with an offset inside the input.
func checkDecodeError(t *testing.T, in []byte, err error) {
	t.Helper()
	var de *DecodeError
	if !errors.As(err, &de) || de.Offset < 0 || de.Offset > len(in) {
		t.Fatalf("input %x: error %v is not a *DecodeError with an offset in [0, %d]", in, err, len(in))
	}
}

// FuzzDecodeSchema decodes the input with one of the test schemas (chosen by the first byte):
// the runner protocol's ToClient and ToServer unions, or a record holding every BARE type. Decoding
// must never panic, must fail only with a *DecodeError, and whatever it accepts must re-encode
// to exactly the input: the Reader accepts canonical encodings only.
func FuzzDecodeSchema(f *testing.F) {
	schemas := []schema{toClient, toServer, everything}
	for _, h := range []string{
		"00" + "00027231983a00000000000040771b000000000000",
		"00" + "050068e5cf8b010000",
		"00" + "010102613100000000000000000000000000046563686f01026b310068e5cf8b010000010568656c6c6f00",
		"00" + "04010203040a0b0c0d00000002613103474554062f783f793d310104686f737401680000",
		"01" + "00046563686f010000000a0000000101046563686f027b7d010e7b2270726f6265223a747275657d",
		"01" + "06010203040a0b0c0d000000c800010e636f6e74656e742d6c656e677468013201026f6b00",
		"01" + "05026131000000000201016b010176",
		"01" + "010102613100000000010000000000000001010000",
		"02" + "ac02 7f 07 0100 01000000 0100000000000000 ff feff ffffffff 0000000000000080 0000803f 00000000000004c0" +
			"01 0161 020102 abcdef 0102c3a9 0201 7f 02 00 0101 05 00 ff 02 01 0178",
	} {
		b, err := hex.DecodeString(spaceless(h))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		s, body := schemas[int(in[0])%len(schemas)], in[1:]
		r := NewReader(body)
		v := s.decode(r)
		if err := r.Done(); err != nil {
			checkDecodeError(t, body, err)
			return
		}
		var w Writer
		s.encode(&w, v)
		if w.Err() != nil || !bytes.Equal(w.Bytes(), body) {
			t.Fatalf("decoded %x to %#v, which re-encodes to %x (%v)", body, v, w.Bytes(), w.Err())
		}
	})
}

func spaceless(s string) string { return string(bytes.ReplaceAll([]byte(s), []byte(" "), nil)) }

// op is one primitive read and its matching write, for FuzzOps.
type op struct {
	read  func(r *Reader) any
	write func(w *Writer, v any)
}

var ops = []op{
	{func(r *Reader) any { return r.Uint() }, func(w *Writer, v any) { w.Uint(v.(uint64)) }},
	{func(r *Reader) any { return r.Int() }, func(w *Writer, v any) { w.Int(v.(int64)) }},
	{func(r *Reader) any { return r.U8() }, func(w *Writer, v any) { w.U8(v.(uint8)) }},
	{func(r *Reader) any { return r.U16() }, func(w *Writer, v any) { w.U16(v.(uint16)) }},
	{func(r *Reader) any { return r.U32() }, func(w *Writer, v any) { w.U32(v.(uint32)) }},
	{func(r *Reader) any { return r.U64() }, func(w *Writer, v any) { w.U64(v.(uint64)) }},
	{func(r *Reader) any { return r.I8() }, func(w *Writer, v any) { w.I8(v.(int8)) }},
	{func(r *Reader) any { return r.I16() }, func(w *Writer, v any) { w.I16(v.(int16)) }},
	{func(r *Reader) any { return r.I32() }, func(w *Writer, v any) { w.I32(v.(int32)) }},
	{func(r *Reader) any { return r.I64() }, func(w *Writer, v any) { w.I64(v.(int64)) }},
	{func(r *Reader) any { return r.F32() }, func(w *Writer, v any) { w.F32(v.(float32)) }},
	{func(r *Reader) any { return r.F64() }, func(w *Writer, v any) { w.F64(v.(float64)) }},
	{func(r *Reader) any { return r.Bool() }, func(w *Writer, v any) { w.Bool(v.(bool)) }},
	{func(r *Reader) any { return r.Optional() }, func(w *Writer, v any) { w.Optional(v.(bool)) }},
	{func(r *Reader) any { return r.Str() }, func(w *Writer, v any) { w.String(v.(string)) }},
	{func(r *Reader) any { return r.Data() }, func(w *Writer, v any) { w.Data(v.([]byte)) }},
	{func(r *Reader) any { return r.FixedData(4) }, func(w *Writer, v any) { w.FixedData(v.([]byte)) }},
	{func(r *Reader) any { return r.ListLen() }, func(w *Writer, v any) { w.ListLen(v.(int)) }},
	{func(r *Reader) any { return r.MapLen() }, func(w *Writer, v any) { w.MapLen(v.(int)) }},
	{func(r *Reader) any { return r.UnionTag() }, func(w *Writer, v any) { w.UnionTag(v.(uint64)) }},
	{func(r *Reader) any { return ReadVersion(r) }, func(w *Writer, v any) { w.buf = AppendVersion(w.buf, v.(uint16)) }},
}

// FuzzOps reads data with the sequence of primitive reads named by script (one op per byte).
// Reads never panic and fail only with a *DecodeError; when every read succeeds and no input is
// left, writing the values back with the matching writes reproduces data exactly.
func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 1, 14, 15}, []byte{0xac, 0x02, 0x03, 0x02, 'h', 'i', 0x01, 0xff})
	f.Add([]byte{10, 11, 12, 13}, []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0, 0, 0, 0xf0, 0x7f, 1, 0})
	f.Add([]byte{17, 18, 16, 19, 20}, []byte{0x03, 0x01, 1, 2, 3, 4, 0x05, 7, 0})
	f.Add([]byte{0}, []byte{0x80, 0x00})
	f.Fuzz(func(t *testing.T, script, data []byte) {
		r := NewReader(data)
		vals := make([]any, len(script))
		for i, c := range script {
			vals[i] = ops[int(c)%len(ops)].read(r)
		}
		if err := r.Done(); err != nil {
			checkDecodeError(t, data, err)
			return
		}
		var w Writer
		for i, c := range script {
			ops[int(c)%len(ops)].write(&w, vals[i])
		}
		if w.Err() != nil || !bytes.Equal(w.Bytes(), data) {
			t.Fatalf("script %v: decoded %x to %v, which re-encodes to %x (%v)", script, data, vals, w.Bytes(), w.Err())
		}
	})
}

// FuzzUint checks Reader.Uint against an oracle written from the specification with math/big:
// an encoding is valid iff it terminates, its value fits in 64 bits, and it has the minimal
// length for its value.
func FuzzUint(f *testing.F) {
	for _, h := range []string{"00", "7f", "8001", "ac02", "8000", "ffffffffffffffffff01", "ffffffffffffffffff02", "8080808080808080808001", "80"} {
		b, _ := hex.DecodeString(h)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(in)
		got := r.Uint()
		// Oracle.
		// Past 16 bytes a uint is invalid whatever follows; stopping there keeps the oracle fast.
		n, val, ok := 0, new(big.Int), false
		for i, c := range in[:min(len(in), 16)] {
			val.Or(val, new(big.Int).Lsh(big.NewInt(int64(c&0x7f)), uint(7*i)))
			if c < 0x80 {
				n, ok = i+1, true
				break
			}
		}
		minLen := max(1, (val.BitLen()+6)/7)
		valid := ok && val.BitLen() <= 64 && n == minLen
		if valid != (r.Err() == nil) {
			t.Fatalf("Uint(%x): err %v, oracle says valid=%v (value %v, %d bytes)", in, r.Err(), valid, val, n)
		}
		if !valid {
			checkDecodeError(t, in, r.Err())
			if r.Offset() != 0 {
				t.Fatalf("a failed Uint consumed %d bytes", r.Offset())
			}
			return
		}
		if got != val.Uint64() || r.Offset() != n {
			t.Fatalf("Uint(%x) = %d after %d bytes, want %v after %d", in, got, r.Offset(), val, n)
		}
	})
}
