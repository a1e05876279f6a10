package bare

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// Writer appends BARE values to a buffer. The zero value is ready to use; Reset keeps the
// buffer's memory for the next message, so a reused Writer does not allocate.
//
// Writing cannot fail on valid values. A value BARE cannot carry (a negative length, a NaN
// float) writes nothing and sets a sticky error that Err reports; encoders check Err once at
// the end, as decoders do with Reader.Err.
type Writer struct {
	buf []byte
	err error
}

// Bytes returns the encoded bytes. The slice aliases the Writer's buffer: it is valid until
// the next write or Reset.
func (w *Writer) Bytes() []byte { return w.buf }

// Len returns the number of bytes written.
func (w *Writer) Len() int { return len(w.buf) }

// Err returns the first encoding error, or nil.
func (w *Writer) Err() error { return w.err }

// Reset empties the Writer and clears its error, keeping the buffer's capacity.
func (w *Writer) Reset() {
	w.buf = w.buf[:0]
	w.err = nil
}

// Failf records a schema-level error (a nil union value, an unknown enum value, a duplicate
// map key, a member the protocol version lacks), unless an error is already recorded. The
// Writer goes on writing; Err reports the first error.
func (w *Writer) Failf(format string, args ...any) { w.fail(fmt.Sprintf(format, args...)) }

func (w *Writer) fail(msg string) {
	if w.err == nil {
		w.err = &EncodeError{Offset: len(w.buf), Msg: msg}
	}
}

// Uint writes a BARE uint: LEB128, 1 to 10 bytes.
func (w *Writer) Uint(v uint64) { w.buf = binary.AppendUvarint(w.buf, v) }

// Int writes a BARE int: the zig-zag encoding of v as a uint.
func (w *Writer) Int(v int64) { w.buf = binary.AppendVarint(w.buf, v) }

// U8 writes one byte.
func (w *Writer) U8(v uint8) { w.buf = append(w.buf, v) }

// U16 writes v as 2 bytes, little-endian.
func (w *Writer) U16(v uint16) { w.buf = binary.LittleEndian.AppendUint16(w.buf, v) }

// U32 writes v as 4 bytes, little-endian.
func (w *Writer) U32(v uint32) { w.buf = binary.LittleEndian.AppendUint32(w.buf, v) }

// U64 writes v as 8 bytes, little-endian.
func (w *Writer) U64(v uint64) { w.buf = binary.LittleEndian.AppendUint64(w.buf, v) }

// I8 writes v as one two's-complement byte.
func (w *Writer) I8(v int8) { w.U8(uint8(v)) }

// I16 writes v as 2 bytes, two's complement, little-endian.
func (w *Writer) I16(v int16) { w.U16(uint16(v)) }

// I32 writes v as 4 bytes, two's complement, little-endian.
func (w *Writer) I32(v int32) { w.U32(uint32(v)) }

// I64 writes v as 8 bytes, two's complement, little-endian.
func (w *Writer) I64(v int64) { w.U64(uint64(v)) }

// F32 writes v as IEEE 754 binary32, little-endian. NaN is an error (BARE has no NaN).
func (w *Writer) F32(v float32) {
	if v != v {
		w.fail("f32 is NaN")
		return
	}
	w.U32(math.Float32bits(v))
}

// F64 writes v as IEEE 754 binary64, little-endian. NaN is an error (BARE has no NaN).
func (w *Writer) F64(v float64) {
	if math.IsNaN(v) {
		w.fail("f64 is NaN")
		return
	}
	w.U64(math.Float64bits(v))
}

// Bool writes 1 for true, 0 for false.
func (w *Writer) Bool(v bool) {
	if v {
		w.buf = append(w.buf, 1)
	} else {
		w.buf = append(w.buf, 0)
	}
}

// Data writes a BARE data: the length as a uint, then the bytes.
func (w *Writer) Data(b []byte) {
	w.Uint(uint64(len(b)))
	w.buf = append(w.buf, b...)
}

// FixedData writes b as is, with no length: BARE data[N], where the schema fixes N = len(b).
func (w *Writer) FixedData(b []byte) { w.buf = append(w.buf, b...) }

// String writes a BARE str: the length in bytes as a uint, then the bytes. s should be valid
// UTF-8; the Writer does not check (Reader.Str does).
func (w *Writer) String(s string) {
	w.Uint(uint64(len(s)))
	w.buf = append(w.buf, s...)
}

// Str writes a BARE str as String does, and records an error if s is not valid UTF-8 (the
// check Reader.Str makes on the other side).
func (w *Writer) Str(s string) {
	if !utf8.ValidString(s) {
		w.fail(fmt.Sprintf("str %q is not valid UTF-8", s))
	}
	w.String(s)
}

// Optional writes the tag of an optional<T>: 1 if present, 0 if not. When present, the caller
// writes the value next.
func (w *Writer) Optional(present bool) { w.Bool(present) }

// ListLen writes the item count of a list<T>; the caller writes the n items next.
// A negative n is an error.
func (w *Writer) ListLen(n int) { w.count(n, "list") }

// MapLen writes the entry count of a map<K><V>; the caller writes n key/value pairs next,
// with no key twice. A negative n is an error.
func (w *Writer) MapLen(n int) { w.count(n, "map") }

func (w *Writer) count(n int, what string) {
	if n < 0 {
		w.fail(what + " length is negative")
		return
	}
	w.Uint(uint64(n))
}

// UnionTag writes the tag of a union member (its 0-based position in the schema); the caller
// writes the member's body next (nothing for a void member).
func (w *Writer) UnionTag(tag uint64) { w.Uint(tag) }
