package keys

import (
	"encoding/binary"
	"unicode/utf8"

	"github.com/berthhq/berth/pkg/id"
)

// Struct values are versioned BARE, as Rivet writes them with
// serialize_with_embedded_version: a 2-byte little-endian schema version,
// then the BARE encoding of that version's struct (engine/sdks/schemas/data).
// The few types needed are written by hand here: uint as LEB128 (uvarint),
// u16/u32 little-endian, bool one byte 0 or 1, data and str a uvarint length
// then the bytes. Rivet's Id is `type Id data`: a uvarint 19 then the 19 bytes.

func appendVersion(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }

func appendData(b, d []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(d)))
	return append(b, d...)
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBareID(b []byte, v id.ID) []byte { return appendData(b, v[:]) }

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// bareReader decodes BARE fields. The first error sticks; later reads return
// zero values.
type bareReader struct {
	name string // key type, for errors
	b    []byte
	err  error
}

func (r *bareReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = badValue(r.name, format, args...)
	}
}

// version reads the 2-byte embedded version.
func (r *bareReader) version() uint16 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 2 {
		r.fail("value is %d bytes, too short for the 2-byte version", len(r.b))
		return 0
	}
	v := binary.LittleEndian.Uint16(r.b)
	r.b = r.b[2:]
	return v
}

func (r *bareReader) uvarint(field string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	switch {
	case n == 0:
		r.fail("%s: truncated length", field)
		return 0
	case n < 0:
		r.fail("%s: length overflows 64 bits", field)
		return 0
	case n > 1 && r.b[n-1] == 0:
		r.fail("%s: non-canonical length encoding", field)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *bareReader) data(field string) []byte {
	n := r.uvarint(field)
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.fail("%s: length %d, only %d bytes left", field, n, len(r.b))
		return nil
	}
	d := r.b[:n:n]
	r.b = r.b[n:]
	return d
}

func (r *bareReader) str(field string) string {
	d := r.data(field)
	if r.err != nil {
		return ""
	}
	if !utf8.Valid(d) {
		r.fail("%s: not valid UTF-8", field)
		return ""
	}
	return string(d)
}

func (r *bareReader) id(field string) id.ID {
	d := r.data(field)
	if r.err != nil {
		return id.ID{}
	}
	v, err := decodeID(r.name, d)
	if err != nil {
		r.fail("%s: %v", field, err)
	}
	return v
}

func (r *bareReader) bool(field string) bool {
	if r.err != nil {
		return false
	}
	if len(r.b) < 1 {
		r.fail("%s: truncated bool", field)
		return false
	}
	c := r.b[0]
	r.b = r.b[1:]
	if c > 1 {
		r.fail("%s: bool byte is %d, want 0 or 1", field, c)
	}
	return c == 1
}

func (r *bareReader) u32(field string) uint32 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 4 {
		r.fail("%s: truncated u32", field)
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *bareReader) u16(field string) uint16 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 2 {
		r.fail("%s: truncated u16", field)
		return 0
	}
	v := binary.LittleEndian.Uint16(r.b)
	r.b = r.b[2:]
	return v
}

// done returns the first error, or an error if bytes are left over.
func (r *bareReader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d bytes left after the last field", len(r.b))
	}
	return r.err
}

func appendU32LE(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }

func appendU16LE(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }

// binaryUvarintLen is the encoded size of n as a uvarint.
func binaryUvarintLen(n int) int {
	l := 1
	for u := uint64(n); u >= 0x80; u >>= 7 {
		l++
	}
	return l
}
