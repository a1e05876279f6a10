package bare

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// TestVectors checks each primitive against its encoding from the BARE specification (and, for
// the fixed-width ones, the frames of docs/protocol.md, "Known-good frames"), in both directions.
func TestVectors(t *testing.T) {
	str300 := strings.Repeat("x", 300)
	tests := []struct {
		name  string
		hex   string
		write func(w *Writer)
		read  func(r *Reader) any
		want  any
	}{
		{"uint 0", "00", func(w *Writer) { w.Uint(0) }, func(r *Reader) any { return r.Uint() }, uint64(0)},
		{"uint 1", "01", func(w *Writer) { w.Uint(1) }, func(r *Reader) any { return r.Uint() }, uint64(1)},
		{"uint 127", "7f", func(w *Writer) { w.Uint(127) }, func(r *Reader) any { return r.Uint() }, uint64(127)},
		{"uint 128", "8001", func(w *Writer) { w.Uint(128) }, func(r *Reader) any { return r.Uint() }, uint64(128)},
		{"uint 300", "ac02", func(w *Writer) { w.Uint(300) }, func(r *Reader) any { return r.Uint() }, uint64(300)},
		{"uint 16383", "ff7f", func(w *Writer) { w.Uint(16383) }, func(r *Reader) any { return r.Uint() }, uint64(16383)},
		{"uint 16384", "808001", func(w *Writer) { w.Uint(16384) }, func(r *Reader) any { return r.Uint() }, uint64(16384)},
		{"uint MaxUint32", "ffffffff0f", func(w *Writer) { w.Uint(math.MaxUint32) }, func(r *Reader) any { return r.Uint() }, uint64(math.MaxUint32)},
		{"uint 2^63", "80808080808080808001", func(w *Writer) { w.Uint(1 << 63) }, func(r *Reader) any { return r.Uint() }, uint64(1 << 63)},
		{"uint MaxUint64", "ffffffffffffffffff01", func(w *Writer) { w.Uint(math.MaxUint64) }, func(r *Reader) any { return r.Uint() }, uint64(math.MaxUint64)},

		{"int 0", "00", func(w *Writer) { w.Int(0) }, func(r *Reader) any { return r.Int() }, int64(0)},
		{"int -1", "01", func(w *Writer) { w.Int(-1) }, func(r *Reader) any { return r.Int() }, int64(-1)},
		{"int 1", "02", func(w *Writer) { w.Int(1) }, func(r *Reader) any { return r.Int() }, int64(1)},
		{"int -2", "03", func(w *Writer) { w.Int(-2) }, func(r *Reader) any { return r.Int() }, int64(-2)},
		{"int 63", "7e", func(w *Writer) { w.Int(63) }, func(r *Reader) any { return r.Int() }, int64(63)},
		{"int -64", "7f", func(w *Writer) { w.Int(-64) }, func(r *Reader) any { return r.Int() }, int64(-64)},
		{"int 64", "8001", func(w *Writer) { w.Int(64) }, func(r *Reader) any { return r.Int() }, int64(64)},
		{"int -65", "8101", func(w *Writer) { w.Int(-65) }, func(r *Reader) any { return r.Int() }, int64(-65)},
		{"int MaxInt64", "feffffffffffffffff01", func(w *Writer) { w.Int(math.MaxInt64) }, func(r *Reader) any { return r.Int() }, int64(math.MaxInt64)},
		{"int MinInt64", "ffffffffffffffffff01", func(w *Writer) { w.Int(math.MinInt64) }, func(r *Reader) any { return r.Int() }, int64(math.MinInt64)},

		{"u8 200", "c8", func(w *Writer) { w.U8(200) }, func(r *Reader) any { return r.U8() }, uint8(200)},
		{"u16 200", "c800", func(w *Writer) { w.U16(200) }, func(r *Reader) any { return r.U16() }, uint16(200)},
		{"u32 0x01020304", "04030201", func(w *Writer) { w.U32(0x01020304) }, func(r *Reader) any { return r.U32() }, uint32(0x01020304)},
		{"u64 1700000000000", "0068e5cf8b010000", func(w *Writer) { w.U64(1700000000000) }, func(r *Reader) any { return r.U64() }, uint64(1700000000000)},
		{"i8 -128", "80", func(w *Writer) { w.I8(-128) }, func(r *Reader) any { return r.I8() }, int8(-128)},
		{"i16 -2", "feff", func(w *Writer) { w.I16(-2) }, func(r *Reader) any { return r.I16() }, int16(-2)},
		{"i32 -1", "ffffffff", func(w *Writer) { w.I32(-1) }, func(r *Reader) any { return r.I32() }, int32(-1)},
		{"i64 15000", "983a000000000000", func(w *Writer) { w.I64(15000) }, func(r *Reader) any { return r.I64() }, int64(15000)},
		{"i64 MinInt64", "0000000000000080", func(w *Writer) { w.I64(math.MinInt64) }, func(r *Reader) any { return r.I64() }, int64(math.MinInt64)},
		{"f32 1", "0000803f", func(w *Writer) { w.F32(1) }, func(r *Reader) any { return r.F32() }, float32(1)},
		{"f32 -Inf", "000080ff", func(w *Writer) { w.F32(float32(math.Inf(-1))) }, func(r *Reader) any { return r.F32() }, float32(math.Inf(-1))},
		{"f64 -2.5", "00000000000004c0", func(w *Writer) { w.F64(-2.5) }, func(r *Reader) any { return r.F64() }, -2.5},
		{"f64 +Inf", "000000000000f07f", func(w *Writer) { w.F64(math.Inf(1)) }, func(r *Reader) any { return r.F64() }, math.Inf(1)},

		{"bool false", "00", func(w *Writer) { w.Bool(false) }, func(r *Reader) any { return r.Bool() }, false},
		{"bool true", "01", func(w *Writer) { w.Bool(true) }, func(r *Reader) any { return r.Bool() }, true},

		{"str empty", "00", func(w *Writer) { w.String("") }, func(r *Reader) any { return r.Str() }, ""},
		{"str echo", "046563686f", func(w *Writer) { w.String("echo") }, func(r *Reader) any { return r.Str() }, "echo"},
		{"str multibyte", "0968c3a96c6c6fe282ac", func(w *Writer) { w.String("héllo€") }, func(r *Reader) any { return r.Str() }, "héllo€"},
		{"str 300 bytes", "ac02" + strings.Repeat("78", 300), func(w *Writer) { w.String(str300) }, func(r *Reader) any { return r.Str() }, str300},
		{"data", "03010203", func(w *Writer) { w.Data([]byte{1, 2, 3}) }, func(r *Reader) any { return r.Data() }, []byte{1, 2, 3}},
		{"data empty", "00", func(w *Writer) { w.Data(nil) }, func(r *Reader) any { return r.Data() }, []byte{}},
		{"data[4]", "01020304", func(w *Writer) { w.FixedData([]byte{1, 2, 3, 4}) }, func(r *Reader) any { return r.FixedData(4) }, []byte{1, 2, 3, 4}},

		{"optional absent", "00", func(w *Writer) { w.Optional(false) }, func(r *Reader) any { return r.Optional() }, false},
		{"optional<u8> 7", "0107",
			func(w *Writer) { w.Optional(true); w.U8(7) },
			func(r *Reader) any {
				if !r.Optional() {
					return nil
				}
				return r.U8()
			}, uint8(7)},
		{"list<str> [a b]", "0201610162",
			func(w *Writer) { w.ListLen(2); w.String("a"); w.String("b") },
			func(r *Reader) any {
				n := r.ListLen()
				out := make([]string, 0, n)
				for range n {
					out = append(out, r.Str())
				}
				return out
			}, []string{"a", "b"}},
		{"map<str><u8> {a:1}", "01016101",
			func(w *Writer) { w.MapLen(1); w.String("a"); w.U8(1) },
			func(r *Reader) any {
				m := map[string]uint8{}
				ReadMap(r, func(r *Reader) string { k := r.Str(); m[k] = r.U8(); return k })
				return m
			}, map[string]uint8{"a": 1}},
		{"union tag 3", "03", func(w *Writer) { w.UnionTag(3) }, func(r *Reader) any { return r.UnionTag() }, uint64(3)},
		{"version 7", "0700", func(w *Writer) { w.buf = AppendVersion(w.buf, 7) }, func(r *Reader) any { return ReadVersion(r) }, uint16(7)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := unhex(t, tt.hex)
			var w Writer
			tt.write(&w)
			if w.Err() != nil || !bytes.Equal(w.Bytes(), want) {
				t.Fatalf("encode = %x, %v; want %x", w.Bytes(), w.Err(), want)
			}
			r := NewReader(want)
			got := tt.read(r)
			if err := r.Done(); err != nil {
				t.Fatalf("decode %x: %v", want, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("decode %x = %#v, want %#v", want, got, tt.want)
			}
		})
	}
}

// TestRivetFrames decodes the known-good runner protocol v7 frames of
// docs/protocol.md, "Known-good frames" (encoded by @rivetkit/engine-runner-protocol 2.2.1 with bare-ts)
// and checks that re-encoding the decoded tree gives the same bytes.
func TestRivetFrames(t *testing.T) {
	tests := []struct {
		name   string
		schema schema
		hex    string
		check  func(v any) bool // spot-checks a decoded field
	}{
		{"ToServerInit", toServer, "00046563686f010000000a0000000101046563686f027b7d010e7b2270726f6265223a747275657d",
			func(v any) bool { return field(v, 2) == uint32(10) && field(v, 4) == `{"probe":true}` }},
		{"ToClientInit", toClient, "00027231983a00000000000040771b000000000000",
			func(v any) bool {
				return field(v, 0) == "r1" && field(v, 1, 1) == int64(1800000) && field(v, 1, 2) == nil
			}},
		{"ToClientPing", toClient, "050068e5cf8b010000", func(v any) bool { return field(v, 0) == int64(1700000000000) }},
		{"ToServerPong", toServer, "040068e5cf8b010000", func(v any) bool { return field(v, 0) == int64(1700000000000) }},
		{"ToClientCommands Start", toClient, "010102613100000000000000000000000000046563686f01026b310068e5cf8b010000010568656c6c6f00",
			func(v any) bool { return string(field(v, 0, 1, 0, 3).([]byte)) == "hello" }},
		{"ToClientCommands Stop", toClient, "010102613100000000010000000000000001",
			func(v any) bool { return field(v, 0, 0, 2) == int64(1) }},
		{"ToServerEvents Running", toServer, "01010261310000000000000000000000000100", nil},
		{"ToServerEvents Stop OK", toServer, "010102613100000000010000000000000001010000",
			func(v any) bool { return field(v, 0, 1, 0, 0) == uint64(0) }},
		{"ToClientAckEvents", toClient, "0201026131000000000100000000000000", nil},
		{"ToClientRequestStart", toClient, "04010203040a0b0c0d00000002613103474554062f783f793d310104686f737401680000",
			func(v any) bool {
				return field(v, 1, 2) == "/x?y=1" && field(v, 1, 3).([]entry)[0] == entry{"host", "h"}
			}},
		{"ToServerResponseStart", toServer, "06010203040a0b0c0d000000c800010e636f6e74656e742d6c656e677468013201026f6b00",
			func(v any) bool { return field(v, 1, 0) == uint16(200) }},
		{"ToServerKvRequest(Put)", toServer, "05026131000000000201016b010176", nil},
		{"ToClientKvResponse(Put)", toClient, "030000000003", nil},
		{"ToServerStopping", toServer, "03", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := unhex(t, tt.hex)
			r := NewReader(in)
			v := tt.schema.decode(r)
			if err := r.Done(); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if tt.check != nil && !tt.check(v) {
				t.Fatalf("decoded %#v fails its spot check", v)
			}
			var w Writer
			tt.schema.encode(&w, v)
			if !bytes.Equal(w.Bytes(), in) {
				t.Fatalf("re-encoded %x, want %x", w.Bytes(), in)
			}
		})
	}
}

// field walks a decoded tree: union members by their value, records and lists by index.
func field(v any, path ...int) any {
	for _, i := range path {
		if m, ok := v.(member); ok {
			v = m.v
		}
		v = v.([]any)[i]
	}
	if m, ok := v.(member); ok {
		return m.v
	}
	return v
}

// TestRejects checks every rule the Reader enforces: each input is invalid for the read, must
// fail with a *DecodeError at the given offset, and the error message must mention msg.
func TestRejects(t *testing.T) {
	str := func(r *Reader) { r.Str() }
	uint_ := func(r *Reader) { r.Uint() }
	tests := []struct {
		name   string
		hex    string
		read   func(r *Reader)
		offset int
		msg    string
	}{
		{"empty uint", "", uint_, 0, "truncated uint"},
		{"truncated uint", "80", uint_, 0, "truncated uint"},
		{"truncated long uint", "ffffffff", uint_, 0, "truncated uint"},
		{"non-canonical 0", "8000", uint_, 0, "non-canonical"},
		{"non-canonical 1", "8100", uint_, 0, "non-canonical"},
		{"non-canonical 300", "ac8200", uint_, 0, "non-canonical"},
		{"non-canonical 10 bytes", "80808080808080808000", uint_, 0, "non-canonical"},
		{"non-canonical after a value", "05 8000", func(r *Reader) { r.Uint(); r.Uint() }, 1, "non-canonical"},
		{"uint overflows (10th byte 2)", "ffffffffffffffffff02", uint_, 0, "overflows"},
		{"uint 11 bytes", "ffffffffffffffffff8101", uint_, 0, "overflows"},
		{"uint 11 bytes of zero payload", "8080808080808080808001", uint_, 0, "overflows"},
		{"int non-canonical", "8100", func(r *Reader) { r.Int() }, 0, "non-canonical int"},
		{"union tag non-canonical", "8000", func(r *Reader) { r.UnionTag() }, 0, "non-canonical union tag"},
		{"truncated u16", "01", func(r *Reader) { r.U16() }, 0, "truncated u16"},
		{"truncated u32", "010203", func(r *Reader) { r.U32() }, 0, "truncated u32"},
		{"truncated i64", "01020304050607", func(r *Reader) { r.I64() }, 0, "truncated u64"},
		{"truncated u8", "", func(r *Reader) { r.U8() }, 0, "truncated u8"},
		{"f32 NaN", "0000c07f", func(r *Reader) { r.F32() }, 0, "NaN"},
		{"f32 negative NaN", "010080ff", func(r *Reader) { r.F32() }, 0, "NaN"},
		{"f64 NaN", "000000000000f87f", func(r *Reader) { r.F64() }, 0, "NaN"},
		{"bool 2", "02", func(r *Reader) { r.Bool() }, 0, "bool is 2"},
		{"bool ff after a value", "01ff", func(r *Reader) { r.Bool(); r.Bool() }, 1, "bool is 255"},
		{"optional tag 2", "02", func(r *Reader) { r.Optional() }, 0, "optional tag is 2"},
		{"truncated bool", "", func(r *Reader) { r.Bool() }, 0, "truncated bool"},
		{"invalid UTF-8", "02c328", str, 0, "UTF-8"},
		{"UTF-16 surrogate", "03eda080", str, 0, "UTF-8"},
		{"overlong encoding", "02c0af", str, 0, "UTF-8"},
		{"truncated str", "056162", str, 0, "str length 5 exceeds the 2 bytes left"},
		{"str length non-canonical", "8000", str, 0, "non-canonical str length"},
		{"truncated data", "00 05 0102", func(r *Reader) { r.U8(); r.Data() }, 1, "data length 5 exceeds the 2 bytes left"},
		{"huge data length", "ffffffffffffffffff01", func(r *Reader) { r.Data() }, 0, "exceeds"},
		{"huge str length", "ffffffffffffff7f41", str, 0, "exceeds"},
		{"huge list length", "ffffffffffffffffff01", func(r *Reader) { r.ListLen() }, 0, "list length 18446744073709551615 exceeds"},
		{"list longer than input", "030101", func(r *Reader) { r.ListLen() }, 0, "list length 3 exceeds the 2 bytes left"},
		{"map longer than input", "02016101", func(r *Reader) { r.MapLen() }, 0, "map length 2 exceeds the 3 bytes left"},
		{"truncated fixed data", "010203", func(r *Reader) { r.FixedData(4) }, 0, "truncated data[4]"},
		{"negative fixed data", "01", func(r *Reader) { r.FixedData(-1) }, 0, "negative"},
		{"duplicate map key", "02 0161 0178 0161 0179", func(r *Reader) {
			ReadMap(r, func(r *Reader) string { k := r.Str(); r.Str(); return k })
		}, 5, `duplicate map key a`},
		{"duplicate data key", "02 0100 00 0100 00", func(r *Reader) {
			ReadMap(r, func(r *Reader) string { k := r.Data(); r.Bool(); return string(k) })
		}, 4, "duplicate map key"},
		{"map entry error", "01 0161 02", func(r *Reader) {
			ReadMap(r, func(r *Reader) string { k := r.Str(); r.Bool(); return k })
		}, 3, "bool is 2"},
		{"trailing bytes", "0100", func(r *Reader) { r.Uint() }, 1, "1 trailing bytes"},
		{"trailing after nothing", "00", func(r *Reader) {}, 0, "1 trailing bytes"},
		{"truncated version", "07", func(r *Reader) { ReadVersion(r) }, 0, "truncated u16"},
		{"schema error", "09", func(r *Reader) { r.UnionTag(); r.FailAt(0, "unknown tag %d", 9) }, 0, "unknown tag 9"},
		{"schema error offset clamped", "", func(r *Reader) { r.FailAt(99, "x") }, 0, "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := unhex(t, tt.hex)
			r := NewReader(in)
			tt.read(r)
			err := r.Done()
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v, want a *DecodeError", err)
			}
			if de.Offset != tt.offset || !strings.Contains(de.Msg, tt.msg) {
				t.Fatalf("error %q at %d, want %q at %d", de.Msg, de.Offset, tt.msg, tt.offset)
			}
			if de.Offset < 0 || de.Offset > len(in) {
				t.Fatalf("offset %d outside the input (%d bytes)", de.Offset, len(in))
			}
		})
	}
}

// TestSticky checks that the first error is kept and that reads after it return zero values
// without consuming input.
func TestSticky(t *testing.T) {
	r := NewReader(unhex(t, "02 05 0161 0000803f"))
	if r.Bool() {
		t.Fatal("Bool(02) = true")
	}
	first := r.Err()
	if first == nil {
		t.Fatal("no error for bool 02")
	}
	off := r.Offset()
	if v, b, s, d, f := r.Uint(), r.Optional(), r.Str(), r.Data(), r.F32(); v != 0 || b || s != "" || d != nil || f != 0 {
		t.Fatalf("reads after an error returned %v %v %q %v %v", v, b, s, d, f)
	}
	if n := r.ListLen(); n != 0 {
		t.Fatalf("ListLen after error = %d", n)
	}
	if ReadMap(r, func(r *Reader) int { t.Fatal("entry called after an error"); return 0 }) != first {
		t.Fatal("ReadMap lost the first error")
	}
	r.Failf("later")
	if r.Offset() != off || r.Err() != first || r.Done() != first {
		t.Fatalf("offset %d err %v, want %d %v", r.Offset(), r.Err(), off, first)
	}
}

func TestDataAliasesInputWithCappedCapacity(t *testing.T) {
	in := unhex(t, "02 0102 03")
	r := NewReader(in)
	d := r.Data()
	if cap(d) != 2 {
		t.Fatalf("cap = %d, want 2", cap(d))
	}
	_ = append(d, 0xee) // must not overwrite the next byte of the input
	if r.U8() != 3 || r.Done() != nil {
		t.Fatal("appending to Data clobbered the input")
	}
}

func TestWriterErrors(t *testing.T) {
	tests := []struct {
		name  string
		write func(w *Writer)
		msg   string
	}{
		{"negative list", func(w *Writer) { w.ListLen(-1) }, "list length is negative"},
		{"negative map", func(w *Writer) { w.MapLen(-2) }, "map length is negative"},
		{"NaN f32", func(w *Writer) { w.F32(float32(math.NaN())) }, "f32 is NaN"},
		{"NaN f64", func(w *Writer) { w.F64(math.NaN()) }, "f64 is NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w Writer
			w.U8(1)
			tt.write(&w)
			w.U8(2)
			var ee *EncodeError
			if !errors.As(w.Err(), &ee) || ee.Msg != tt.msg || ee.Offset != 1 {
				t.Fatalf("Err() = %v, want %q at 1", w.Err(), tt.msg)
			}
			if !bytes.Equal(w.Bytes(), []byte{1, 2}) {
				t.Fatalf("bytes %x: the bad value must write nothing", w.Bytes())
			}
			w.Reset()
			if w.Err() != nil || w.Len() != 0 {
				t.Fatal("Reset kept state")
			}
		})
	}
}

// TestRoundTripRandom encodes random values of the everything schema and decodes them back.
func TestRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		v := randomValue(rng, everything)
		var w Writer
		everything.encode(&w, v)
		if w.Err() != nil {
			t.Fatalf("#%d: encode: %v", i, w.Err())
		}
		r := NewReader(w.Bytes())
		got := everything.decode(r)
		if err := r.Done(); err != nil {
			t.Fatalf("#%d: decode %x: %v", i, w.Bytes(), err)
		}
		if !reflect.DeepEqual(got, v) {
			t.Fatalf("#%d: decoded %#v, want %#v", i, got, v)
		}
	}
}

func randomValue(rng *rand.Rand, s schema) any {
	switch s := s.(type) {
	case prim:
		bits := rng.Uint64() >> rng.IntN(64) // favour small magnitudes too
		switch s {
		case "uint", "u64":
			return bits
		case "int", "i64":
			if rng.IntN(2) == 0 {
				return -int64(bits>>1) - 1
			}
			return int64(bits >> 1)
		case "u8":
			return uint8(bits)
		case "u16":
			return uint16(bits)
		case "u32":
			return uint32(bits)
		case "i8":
			return int8(bits)
		case "i16":
			return int16(bits)
		case "i32":
			return int32(bits)
		case "f32":
			if f := math.Float32frombits(uint32(bits)); f == f {
				return f
			}
			return float32(0.5)
		case "f64":
			if f := math.Float64frombits(bits); !math.IsNaN(f) {
				return f
			}
			return -0.25
		case "bool":
			return bits&1 == 1
		case "str":
			return strings.Repeat("é", rng.IntN(5))
		case "data":
			b := make([]byte, rng.IntN(6))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			return b
		}
	case fixed:
		b := make([]byte, int(s))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	case optional:
		if rng.IntN(2) == 0 {
			return nil
		}
		return randomValue(rng, s.of)
	case list:
		out := make([]any, rng.IntN(4))
		for i := range out {
			out[i] = randomValue(rng, s.of)
		}
		return out
	case mapOf:
		var out []entry
		seen := map[any]bool{}
		for range rng.IntN(4) {
			k := randomValue(rng, s.key)
			if !seen[k] {
				seen[k] = true
				out = append(out, entry{k, randomValue(rng, s.val)})
			}
		}
		return out
	case record:
		out := make([]any, len(s))
		for i, f := range s {
			out[i] = randomValue(rng, f)
		}
		return out
	case union:
		tag := uint64(rng.IntN(len(s)))
		if s[tag] == nil {
			return member{tag: tag}
		}
		return member{tag, randomValue(rng, s[tag])}
	}
	panic("randomValue: unsupported schema")
}

// TestWriterReuseDoesNotAllocate pins the encoder of a small message at zero allocations once
// the Writer's buffer has grown.
func TestWriterReuseDoesNotAllocate(t *testing.T) {
	var w Writer
	m := sampleMessage()
	m.encode(&w)
	allocs := testing.AllocsPerRun(100, func() {
		w.Reset()
		m.encode(&w)
	})
	if allocs != 0 {
		t.Fatalf("encoding with a reused Writer allocated %v times per run", allocs)
	}
}

func TestSampleMessageRoundTrip(t *testing.T) {
	m := sampleMessage()
	var w Writer
	m.encode(&w)
	var got sample
	if err := got.decode(w.Bytes()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("got %+v, want %+v", got, m)
	}
}

func TestReaderReset(t *testing.T) {
	r := NewReader([]byte{2})
	r.Bool()
	if r.Err() == nil {
		t.Fatal("no error for bool 2")
	}
	r.Reset([]byte{1})
	if !r.Bool() || r.Done() != nil || r.Offset() != 1 || r.Remaining() != 0 {
		t.Fatal("Reset did not clear the error and position")
	}
	var zero Reader
	if zero.Done() != nil || zero.U8() != 0 || zero.Err() == nil {
		t.Fatal("a zero Reader must read an empty input")
	}
}
