package bare

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// maxUvarintLen is the longest canonical uint: 10 bytes carry 64 bits.
const maxUvarintLen = 10

// Reader decodes BARE values from a byte slice.
//
// The first error is kept: after it, every read returns the zero value without consuming
// input, so a decoder reads all its fields and checks Err (or Done) once. Every error is a
// *DecodeError naming the offset of the offending value. A Reader never panics and never
// allocates more than the input could hold.
type Reader struct {
	b   []byte
	off int
	err error
}

// NewReader returns a Reader of b. The Reader does not copy b; see Data.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Reset makes r read b from the start with no error, so a hot decoder can reuse one Reader
// (a Reader passed to a ReadMap callback escapes to the heap).
func (r *Reader) Reset(b []byte) { *r = Reader{b: b} }

// Err returns the first decoding error, or nil.
func (r *Reader) Err() error { return r.err }

// Done returns the first decoding error or, if there was none, an error if any input is left:
// a message is exactly one value. Call it after reading a whole message.
func (r *Reader) Done() error {
	if r.err == nil && r.off < len(r.b) {
		r.failAt(r.off, fmt.Sprintf("%d trailing bytes", len(r.b)-r.off))
	}
	return r.err
}

// Offset returns the number of bytes consumed.
func (r *Reader) Offset() int { return r.off }

// Remaining returns the number of bytes not yet consumed.
func (r *Reader) Remaining() int { return len(r.b) - r.off }

// Failf records a schema-level error (an unknown union tag, an out-of-range enum) at the
// current offset, unless an error is already recorded.
func (r *Reader) Failf(format string, args ...any) { r.failAt(r.off, fmt.Sprintf(format, args...)) }

// FailAt records a schema-level error at offset (typically where the offending value began,
// from Offset), unless an error is already recorded. The offset is clamped to the input.
func (r *Reader) FailAt(offset int, format string, args ...any) {
	r.failAt(offset, fmt.Sprintf(format, args...))
}

func (r *Reader) failAt(off int, msg string) {
	if r.err != nil {
		return
	}
	off = min(max(off, 0), len(r.b))
	r.err = &DecodeError{Offset: off, Msg: msg}
}

// take consumes n bytes, or records a truncation error (naming what) and returns nil.
func (r *Reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.failAt(r.off, fmt.Sprintf("truncated %s: need %d bytes, have %d", what, n, len(r.b)-r.off))
		return nil
	}
	s := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return s
}

// Uint reads a BARE uint. Only the canonical (shortest) LEB128 form is accepted.
func (r *Reader) Uint() uint64 { return r.uvarint("uint", "") }

// uvarint reads a canonical LEB128 uint; what+suffix names it in errors (they are joined only
// then: a concatenation on every read would cost more than the read).
func (r *Reader) uvarint(what, suffix string) uint64 {
	if r.err != nil {
		return 0
	}
	start := r.off
	if start < len(r.b) && r.b[start] < 0x80 { // one byte: most tags, lengths and counts
		r.off++
		return uint64(r.b[start])
	}
	var v uint64
	for i := 0; ; i++ {
		if start+i >= len(r.b) {
			r.failAt(start, "truncated "+what+suffix)
			return 0
		}
		c := r.b[start+i]
		if i == maxUvarintLen-1 && c > 1 {
			// The 10th byte holds bit 63 only; more means a value above 2^64-1 or an 11th byte.
			r.failAt(start, what+suffix+" overflows 64 bits")
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				r.failAt(start, "non-canonical "+what+suffix+" (trailing zero byte)")
				return 0
			}
			r.off = start + i + 1
			return v
		}
	}
}

// Int reads a BARE int (zig-zag uint).
func (r *Reader) Int() int64 {
	u := r.uvarint("int", "")
	return int64(u>>1) ^ -int64(u&1)
}

// U8 reads one byte.
func (r *Reader) U8() uint8 {
	if b := r.take(1, "u8"); b != nil {
		return b[0]
	}
	return 0
}

// U16 reads a little-endian u16.
func (r *Reader) U16() uint16 {
	if b := r.take(2, "u16"); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

// U32 reads a little-endian u32.
func (r *Reader) U32() uint32 {
	if b := r.take(4, "u32"); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

// U64 reads a little-endian u64.
func (r *Reader) U64() uint64 {
	if b := r.take(8, "u64"); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// I8 reads a two's-complement i8.
func (r *Reader) I8() int8 { return int8(r.U8()) }

// I16 reads a little-endian two's-complement i16.
func (r *Reader) I16() int16 { return int16(r.U16()) }

// I32 reads a little-endian two's-complement i32.
func (r *Reader) I32() int32 { return int32(r.U32()) }

// I64 reads a little-endian two's-complement i64.
func (r *Reader) I64() int64 { return int64(r.U64()) }

// F32 reads a little-endian IEEE 754 binary32. NaN is an error.
func (r *Reader) F32() float32 {
	b := r.take(4, "f32")
	if b == nil {
		return 0
	}
	v := math.Float32frombits(binary.LittleEndian.Uint32(b))
	if v != v {
		r.failAt(r.off-4, "f32 is NaN")
		return 0
	}
	return v
}

// F64 reads a little-endian IEEE 754 binary64. NaN is an error.
func (r *Reader) F64() float64 {
	b := r.take(8, "f64")
	if b == nil {
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(b))
	if math.IsNaN(v) {
		r.failAt(r.off-8, "f64 is NaN")
		return 0
	}
	return v
}

// Bool reads a bool: byte 0 or 1, anything else is an error.
func (r *Reader) Bool() bool { return r.flag("bool") }

// Optional reads the tag of an optional<T>: false if absent (0), true if a value follows (1).
// Any other byte is an error.
func (r *Reader) Optional() bool { return r.flag("optional tag") }

func (r *Reader) flag(what string) bool {
	b := r.take(1, what)
	if b == nil {
		return false
	}
	if b[0] > 1 {
		r.failAt(r.off-1, fmt.Sprintf("%s is %d, want 0 or 1", what, b[0]))
		return false
	}
	return b[0] == 1
}

// length reads a uint length of what and checks that n items of at least unit bytes each fit
// in the remaining input.
func (r *Reader) length(what string, unit int) int {
	start := r.off
	n := r.uvarint(what, " length")
	if r.err != nil {
		return 0
	}
	if rem := uint64(len(r.b) - r.off); n > rem/uint64(unit) {
		r.failAt(start, fmt.Sprintf("%s length %d exceeds the %d bytes left", what, n, rem))
		return 0
	}
	return int(n)
}

// Data reads a BARE data (uint length, then bytes). The result aliases the Reader's input, with
// its capacity capped at its length; copy it (bytes.Clone) to keep it beyond the input's life.
// An empty data is a non-nil empty slice unless an error occurred.
func (r *Reader) Data() []byte {
	n := r.length("data", 1)
	if r.err != nil {
		return nil
	}
	return r.take(n, "data")
}

// FixedData reads a BARE data[n]: exactly n bytes, no length. The result aliases the input
// as with Data. A negative n is an error.
func (r *Reader) FixedData(n int) []byte {
	if n < 0 {
		r.failAt(r.off, fmt.Sprintf("negative fixed data length %d", n))
		return nil
	}
	return r.take(n, fmt.Sprintf("data[%d]", n))
}

// Str reads a BARE str (uint length, then UTF-8 bytes), the counterpart of Writer.String.
// Invalid UTF-8 is an error. (It is not named String so that *Reader is no fmt.Stringer:
// printing a Reader must not consume its input.)
func (r *Reader) Str() string {
	start := r.off
	n := r.length("str", 1)
	b := r.take(n, "str")
	if b == nil {
		return ""
	}
	if !utf8.Valid(b) {
		r.failAt(start, "str is not valid UTF-8")
		return ""
	}
	return string(b)
}

// ListLen reads the item count of a list<T>. Every BARE value takes at least one byte, so a
// count above the remaining input is an error: the count is safe to allocate by.
func (r *Reader) ListLen() int { return r.length("list", 1) }

// MapLen reads the entry count of a map<K><V>, bounded like ListLen (an entry takes at least two
// bytes). Use ReadMap to read the entries and reject duplicate keys.
func (r *Reader) MapLen() int { return r.length("map", 2) }

// UnionTag reads the tag of a union member. The caller checks it against the schema (FailAt
// for an unknown tag) and reads the member's body.
func (r *Reader) UnionTag() uint64 { return r.uvarint("union tag", "") }

// ReadMap reads a map<K><V>: the entry count, then for each entry calls entry, which reads one
// key and its value from r and returns the key. A key seen twice is an error at the offset of
// its second occurrence (BARE maps have unique keys; bare-ts rejects duplicates too). ReadMap
// stops at the first error and returns r.Err().
func ReadMap[K comparable](r *Reader, entry func(r *Reader) K) error {
	n := r.MapLen()
	var keys KeySet[K]
	for i := 0; i < n && r.err == nil; i++ {
		start := r.off
		k := entry(r)
		if r.err != nil {
			break
		}
		if keys.Add(k) {
			r.failAt(start, fmt.Sprintf("duplicate map key %v", k))
			break
		}
	}
	return r.err
}
