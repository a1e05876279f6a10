package tuple

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strings"
)

// DecodeError describes malformed tuple bytes.
type DecodeError struct {
	// Offset is the position in the input of the element (or byte) at fault.
	Offset int
	// Msg says what is wrong.
	Msg string
	// Err is the error of a user type's decoder (see [RegisterUserType]),
	// or nil.
	Err error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("tuple: %s at offset %d", e.Msg, e.Offset)
}

// Unwrap returns the user type decoder's error, if any.
func (e *DecodeError) Unwrap() error { return e.Err }

func decodeErr(off int, format string, args ...any) error {
	return &DecodeError{Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// Unpack decodes a packed tuple. It never panics: malformed input (an
// unknown or reserved type code, truncated data, an unterminated string or
// nested tuple, a payload a user type's decoder rejects) yields a
// *DecodeError. Type codes 0x40–0x4f decode only if registered with
// [RegisterUserType].
//
// The result holds only the types listed in [Tuple]. Integers decode to
// int64, to uint64 if positive and above math.MaxInt64, and to *big.Int if
// outside both 64-bit ranges, whatever the width of their encoding. Byte
// strings are copied: the result does not alias b.
//
// Unpack accepts some non-canonical encodings that [Tuple.Pack] never
// produces, and which therefore do not survive a round trip byte for byte:
// the deprecated true code 0x25, integers encoded with more bytes than
// needed (leading zero magnitude bytes, or the 0x1d/0x0b codes for a value
// that fits in 8 bytes), and negative zero.
func Unpack(b []byte) (Tuple, error) {
	var (
		cur    Tuple   // tuple being filled
		parent []Tuple // enclosing tuples, innermost last
		starts []int   // offsets of the 0x05 opening each enclosing tuple
	)
	if len(b) > 0 {
		cur = make(Tuple, 0, 4)
	} else {
		cur = Tuple{}
	}
	i := 0
	for i < len(b) {
		code := b[i]
		if code == nestedCode {
			parent = append(parent, cur)
			starts = append(starts, i)
			cur = Tuple{}
			i++
			continue
		}
		if code == nullCode && len(parent) > 0 {
			// Inside a nested tuple, 00 FF is a null and a lone 00 ends the tuple.
			if i+1 < len(b) && b[i+1] == escapeByte {
				cur = append(cur, nil)
				i += 2
				continue
			}
			done := cur
			cur = append(parent[len(parent)-1], done)
			parent = parent[:len(parent)-1]
			starts = starts[:len(starts)-1]
			i++
			continue
		}
		e, next, err := decodeElem(b, i)
		if err != nil {
			return nil, err
		}
		cur = append(cur, e)
		i = next
	}
	if len(parent) > 0 {
		return nil, decodeErr(starts[len(starts)-1], "unterminated nested tuple")
	}
	return cur, nil
}

// decodeElem decodes the element starting at b[i] (any code but 0x05, and 0x00
// only at top level) and returns it with the offset just past it.
func decodeElem(b []byte, i int) (any, int, error) {
	code := b[i]
	switch {
	case code == nullCode:
		return nil, i + 1, nil
	case code == bytesCode:
		end, escapes, err := scanEscaped(b, i)
		if err != nil {
			return nil, 0, err
		}
		return unescapeBytes(b[i+1:end], escapes), end + 1, nil
	case code == stringCode:
		end, escapes, err := scanEscaped(b, i)
		if err != nil {
			return nil, 0, err
		}
		return unescapeString(b[i+1:end], escapes), end + 1, nil
	case code >= negInt8Code && code <= posInt8Code:
		n := int(code) - intZeroCode
		neg := n < 0
		if neg {
			n = -n
		}
		if len(b)-i-1 < n {
			return nil, 0, decodeErr(i, "truncated integer: need %d bytes, have %d", n, len(b)-i-1)
		}
		var u uint64
		for _, c := range b[i+1 : i+1+n] {
			u = u<<8 | uint64(c)
		}
		if neg {
			// The payload is the one's complement of the magnitude over n bytes.
			u = ^u
			if n < 8 {
				u &= 1<<(8*uint(n)) - 1
			}
			return negInt(u), i + 1 + n, nil
		}
		return posInt(u), i + 1 + n, nil
	case code == posBigIntCode || code == negBigIntCode:
		if len(b)-i < 2 {
			return nil, 0, decodeErr(i, "truncated big integer: missing length byte")
		}
		n := int(b[i+1])
		neg := code == negBigIntCode
		if neg {
			n ^= 0xff
		}
		if len(b)-i-2 < n {
			return nil, 0, decodeErr(i, "truncated big integer: need %d bytes, have %d", n, len(b)-i-2)
		}
		return bigIntValue(b[i+2:i+2+n], neg), i + 2 + n, nil
	case code == floatCode:
		if len(b)-i-1 < 4 {
			return nil, 0, decodeErr(i, "truncated float: need 4 bytes, have %d", len(b)-i-1)
		}
		u := binary.BigEndian.Uint32(b[i+1:])
		if u&(1<<31) != 0 {
			u ^= 1 << 31
		} else {
			u = ^u
		}
		return math.Float32frombits(u), i + 5, nil
	case code == doubleCode:
		if len(b)-i-1 < 8 {
			return nil, 0, decodeErr(i, "truncated double: need 8 bytes, have %d", len(b)-i-1)
		}
		u := binary.BigEndian.Uint64(b[i+1:])
		if u&(1<<63) != 0 {
			u ^= 1 << 63
		} else {
			u = ^u
		}
		return math.Float64frombits(u), i + 9, nil
	case code == falseCode:
		return false, i + 1, nil
	case code == trueCode || code == oldTrueCode:
		return true, i + 1, nil
	case code == uuidCode:
		if len(b)-i-1 < uuidLen {
			return nil, 0, decodeErr(i, "truncated UUID: need %d bytes, have %d", uuidLen, len(b)-i-1)
		}
		var u UUID
		copy(u[:], b[i+1:])
		return u, i + 1 + uuidLen, nil
	case code == versionstampCode:
		if len(b)-i-1 < versionstampLen {
			return nil, 0, decodeErr(i, "truncated versionstamp: need %d bytes, have %d", versionstampLen, len(b)-i-1)
		}
		var v Versionstamp
		copy(v.TransactionVersion[:], b[i+1:])
		v.UserVersion = binary.BigEndian.Uint16(b[i+11:])
		return v, i + 1 + versionstampLen, nil
	case code >= MinUserTypeCode && code <= MaxUserTypeCode:
		if e, next, ok, err := decodeUser(b, i); ok {
			return e, next, err
		}
		return nil, 0, decodeErr(i, "unknown or reserved type code 0x%02x", code)
	default:
		return nil, 0, decodeErr(i, "unknown or reserved type code 0x%02x", code)
	}
}

// scanEscaped finds the terminator of the byte or unicode string whose type
// code is at b[i]. It returns the terminator's offset and the number of
// escaped nulls (00 FF pairs) before it.
func scanEscaped(b []byte, i int) (end, escapes int, err error) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], 0)
		if k < 0 {
			return 0, 0, decodeErr(i, "unterminated string")
		}
		j += k
		if j+1 < len(b) && b[j+1] == escapeByte {
			escapes++
			j += 2
			continue
		}
		return j, escapes, nil
	}
}

func unescapeBytes(s []byte, escapes int) []byte {
	out := make([]byte, 0, len(s)-escapes)
	if escapes == 0 {
		return append(out, s...)
	}
	for {
		k := bytes.IndexByte(s, 0)
		if k < 0 {
			return append(out, s...)
		}
		out = append(out, s[:k+1]...)
		s = s[k+2:] // skip the 0xFF
	}
}

func unescapeString(s []byte, escapes int) string {
	if escapes == 0 {
		return string(s)
	}
	var sb strings.Builder
	sb.Grow(len(s) - escapes)
	for {
		k := bytes.IndexByte(s, 0)
		if k < 0 {
			sb.Write(s)
			return sb.String()
		}
		sb.Write(s[:k+1])
		s = s[k+2:]
	}
}

// posInt returns u as int64 if it fits, else as uint64.
func posInt(u uint64) any {
	if u <= math.MaxInt64 {
		return int64(u)
	}
	return u
}

// negInt returns -mag as int64 if it fits (mag <= 2^63), else as *big.Int.
func negInt(mag uint64) any {
	if mag <= 1<<63 {
		return -int64(mag) // for mag == 2^63 this wraps to math.MinInt64, as intended
	}
	x := new(big.Int).SetUint64(mag)
	return x.Neg(x)
}

// bigIntValue decodes the payload of a 0x1d (big-endian magnitude) or 0x0b
// (one's complement magnitude) integer.
func bigIntValue(p []byte, neg bool) any {
	if neg {
		q := make([]byte, len(p))
		for k, c := range p {
			q[k] = ^c
		}
		p = q
	}
	for len(p) > 0 && p[0] == 0 {
		p = p[1:]
	}
	if len(p) <= 8 {
		var u uint64
		for _, c := range p {
			u = u<<8 | uint64(c)
		}
		if neg {
			return negInt(u)
		}
		return posInt(u)
	}
	x := new(big.Int).SetBytes(p)
	if neg {
		x.Neg(x)
	}
	return x
}
