package tuple

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"slices"
	"strings"
)

// Type codes of the tuple encoding. They are file format: never change them.
const (
	nullCode         = 0x00
	bytesCode        = 0x01
	stringCode       = 0x02
	nestedCode       = 0x05
	negBigIntCode    = 0x0b // 0x0b, length XOR 0xff, one's complement magnitude
	negInt8Code      = 0x0c // 0x0c..0x13: negative, 8..1 bytes of one's complement
	intZeroCode      = 0x14 // 0x14: zero; 0x15..0x1c: positive, 1..8 bytes
	posInt8Code      = 0x1c
	posBigIntCode    = 0x1d // 0x1d, length, big-endian magnitude
	floatCode        = 0x20
	doubleCode       = 0x21
	oldTrueCode      = 0x25 // deprecated encoding of true; decoded, never emitted
	falseCode        = 0x26
	trueCode         = 0x27
	uuidCode         = 0x30
	versionstampCode = 0x33

	escapeByte = 0xff // follows 0x00 inside byte strings (and nested nulls)

	uuidLen         = 16
	versionstampLen = 12

	// maxBigIntLen is the largest integer magnitude, in bytes, that the
	// encoding can carry (the length is a single byte).
	maxBigIntLen = 255
)

// Errors returned by [Tuple.PackWithVersionstamp] and
// [Tuple.HasIncompleteVersionstamp]; match them with errors.Is.
var (
	// ErrUnsupportedType marks an element whose Go type the tuple layer cannot encode.
	ErrUnsupportedType = errors.New("tuple: unsupported element type")
	// ErrIntTooLarge marks an integer whose magnitude needs more than 255 bytes.
	ErrIntTooLarge = errors.New("tuple: integer magnitude exceeds 255 bytes")
	// ErrNoIncompleteVersionstamp is returned by PackWithVersionstamp when the
	// tuple holds no incomplete versionstamp.
	ErrNoIncompleteVersionstamp = errors.New("tuple: no incomplete versionstamp")
	// ErrMultipleIncompleteVersionstamps is returned when a tuple holds more
	// than one incomplete versionstamp.
	ErrMultipleIncompleteVersionstamps = errors.New("tuple: more than one incomplete versionstamp")
)

// Pack returns the encoding of t.
//
// An incomplete [Versionstamp] is encoded as its placeholder bytes (ten 0xFF
// bytes), so Pack(Unpack(k)) == k holds for such keys too; use
// [Tuple.PackWithVersionstamp] to build a key for a versionstamped write.
//
// Pack panics if t contains an element of an unsupported Go type (see
// [Tuple]; a [UserType] whose code is not registered is unsupported), a nil
// *big.Int, or an integer whose magnitude exceeds 255 bytes:
// those are programming errors. [Tuple.HasIncompleteVersionstamp] reports
// them as errors instead, for callers that pack untrusted element values.
func (t Tuple) Pack() []byte {
	n, _, err := t.measure(false)
	if err != nil {
		panic(err)
	}
	return t.appendTo(make([]byte, 0, n), false, nil)
}

// AppendPack appends the encoding of t to dst and returns the extended
// slice. It grows dst at most once. It panics in the same cases as
// [Tuple.Pack].
func (t Tuple) AppendPack(dst []byte) []byte {
	n, _, err := t.measure(false)
	if err != nil {
		panic(err)
	}
	return t.appendTo(slices.Grow(dst, n), false, nil)
}

// PackWithVersionstamp returns prefix followed by the encoding of t followed
// by the 4-byte little-endian position of the incomplete versionstamp's
// 10-byte placeholder, counted from the start of the returned key. This is
// the key format of FoundationDB's SetVersionstampedKey (API version 520 and
// later).
//
// t must contain exactly one incomplete versionstamp, possibly inside a
// nested tuple; otherwise PackWithVersionstamp returns
// ErrNoIncompleteVersionstamp or ErrMultipleIncompleteVersionstamps. It
// returns an error, never panics, for unsupported elements too.
func (t Tuple) PackWithVersionstamp(prefix []byte) ([]byte, error) {
	n, vs, err := t.measure(false)
	if err != nil {
		return nil, err
	}
	switch {
	case vs == 0:
		return nil, ErrNoIncompleteVersionstamp
	case vs > 1:
		return nil, ErrMultipleIncompleteVersionstamps
	}
	total := len(prefix) + n
	if total > math.MaxUint32 {
		return nil, fmt.Errorf("tuple: versionstamped key of %d bytes is too long", total)
	}
	b := make([]byte, 0, total+4)
	b = append(b, prefix...)
	pos := -1
	b = t.appendTo(b, false, &pos)
	return binary.LittleEndian.AppendUint32(b, uint32(pos)), nil
}

// HasIncompleteVersionstamp reports whether t contains an incomplete
// versionstamp, looking into nested tuples. It returns an error if t holds
// more than one (ErrMultipleIncompleteVersionstamps) or any element Pack
// would panic on (ErrUnsupportedType, ErrIntTooLarge).
func (t Tuple) HasIncompleteVersionstamp() (bool, error) {
	_, vs, err := t.measure(false)
	if err != nil {
		return false, err
	}
	if vs > 1 {
		return true, ErrMultipleIncompleteVersionstamps
	}
	return vs == 1, nil
}

// measure returns the encoded length of t and the number of incomplete
// versionstamps in it, or an error for an element Pack cannot encode.
func (t Tuple) measure(nested bool) (n, vs int, err error) {
	for i, e := range t {
		en, evs, err := measureElem(e, nested)
		if err != nil {
			if nested {
				return 0, 0, err
			}
			return 0, 0, fmt.Errorf("%w (at element %d)", err, i)
		}
		n += en
		vs += evs
	}
	return n, vs, nil
}

func measureElem(e any, nested bool) (n, vs int, err error) {
	switch v := e.(type) {
	case nil:
		if nested {
			return 2, 0, nil
		}
		return 1, 0, nil
	case []byte:
		return 2 + len(v) + bytes.Count(v, []byte{0}), 0, nil
	case string:
		return 2 + len(v) + strings.Count(v, "\x00"), 0, nil
	case Tuple:
		n, vs, err := v.measure(true)
		return 2 + n, vs, err
	case []any:
		n, vs, err := Tuple(v).measure(true)
		return 2 + n, vs, err
	case int:
		return intLen(int64(v)), 0, nil
	case int8:
		return intLen(int64(v)), 0, nil
	case int16:
		return intLen(int64(v)), 0, nil
	case int32:
		return intLen(int64(v)), 0, nil
	case int64:
		return intLen(v), 0, nil
	case uint:
		return uintLen(uint64(v)), 0, nil
	case uint8:
		return uintLen(uint64(v)), 0, nil
	case uint16:
		return uintLen(uint64(v)), 0, nil
	case uint32:
		return uintLen(uint64(v)), 0, nil
	case uint64:
		return uintLen(v), 0, nil
	case *big.Int:
		if v == nil {
			return 0, 0, fmt.Errorf("%w: nil *big.Int", ErrUnsupportedType)
		}
		n, err := bigLen(v)
		return n, 0, err
	case big.Int:
		n, err := bigLen(&v)
		return n, 0, err
	case float32:
		return 5, 0, nil
	case float64:
		return 9, 0, nil
	case bool:
		return 1, 0, nil
	case UUID:
		return 1 + uuidLen, 0, nil
	case Versionstamp:
		if !v.IsComplete() {
			vs = 1
		}
		return 1 + versionstampLen, vs, nil
	case UserType:
		n, err := measureUser(v)
		return n, 0, err
	default:
		return 0, 0, fmt.Errorf("%w %T", ErrUnsupportedType, e)
	}
}

// byteLen is the number of bytes of the minimal big-endian form of u.
func byteLen(u uint64) int { return (bits.Len64(u) + 7) / 8 }

func uintLen(u uint64) int { return 1 + byteLen(u) }

func intLen(v int64) int {
	if v >= 0 {
		return 1 + byteLen(uint64(v))
	}
	return 1 + byteLen(-uint64(v))
}

func bigLen(x *big.Int) (int, error) {
	n := (x.BitLen() + 7) / 8
	switch {
	case n <= 8:
		return 1 + n, nil
	case n <= maxBigIntLen:
		return 2 + n, nil
	default:
		return 0, fmt.Errorf("%w (%d bytes)", ErrIntTooLarge, n)
	}
}

// appendTo appends the encoding of t. The elements must have passed measure.
// If vsPos is not nil, the position in b of the first incomplete
// versionstamp's placeholder is stored in it.
func (t Tuple) appendTo(b []byte, nested bool, vsPos *int) []byte {
	for _, e := range t {
		b = appendElem(b, e, nested, vsPos)
	}
	return b
}

func appendElem(b []byte, e any, nested bool, vsPos *int) []byte {
	switch v := e.(type) {
	case nil:
		if nested {
			return append(b, nullCode, escapeByte)
		}
		return append(b, nullCode)
	case []byte:
		return appendEscaped(append(b, bytesCode), v)
	case string:
		return appendEscapedString(append(b, stringCode), v)
	case Tuple:
		b = v.appendTo(append(b, nestedCode), true, vsPos)
		return append(b, nullCode)
	case []any:
		b = Tuple(v).appendTo(append(b, nestedCode), true, vsPos)
		return append(b, nullCode)
	case int:
		return appendInt(b, int64(v))
	case int8:
		return appendInt(b, int64(v))
	case int16:
		return appendInt(b, int64(v))
	case int32:
		return appendInt(b, int64(v))
	case int64:
		return appendInt(b, v)
	case uint:
		return appendUint(b, uint64(v))
	case uint8:
		return appendUint(b, uint64(v))
	case uint16:
		return appendUint(b, uint64(v))
	case uint32:
		return appendUint(b, uint64(v))
	case uint64:
		return appendUint(b, v)
	case *big.Int:
		return appendBig(b, v)
	case big.Int:
		return appendBig(b, &v)
	case float32:
		return appendFloat32(b, v)
	case float64:
		return appendFloat64(b, v)
	case bool:
		if v {
			return append(b, trueCode)
		}
		return append(b, falseCode)
	case UUID:
		return append(append(b, uuidCode), v[:]...)
	case Versionstamp:
		b = append(b, versionstampCode)
		if vsPos != nil && *vsPos < 0 && !v.IsComplete() {
			*vsPos = len(b)
		}
		b = append(b, v.TransactionVersion[:]...)
		return binary.BigEndian.AppendUint16(b, v.UserVersion)
	case UserType:
		return appendUser(b, v)
	default:
		// measure rejects these before any byte is written.
		panic(fmt.Sprintf("tuple: internal error: unexpected element type %T", e))
	}
}

// appendEscaped appends s with every 0x00 byte followed by 0xFF, then the
// 0x00 terminator.
func appendEscaped(b, s []byte) []byte {
	for {
		i := bytes.IndexByte(s, 0)
		if i < 0 {
			b = append(b, s...)
			return append(b, 0)
		}
		b = append(b, s[:i+1]...)
		b = append(b, escapeByte)
		s = s[i+1:]
	}
}

func appendEscapedString(b []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, 0)
		if i < 0 {
			b = append(b, s...)
			return append(b, 0)
		}
		b = append(b, s[:i+1]...)
		b = append(b, escapeByte)
		s = s[i+1:]
	}
}

// appendBE appends the low n bytes of u in big-endian order.
func appendBE(b []byte, u uint64, n int) []byte {
	var tmp [8]byte
	binary.BigEndian.PutUint64(tmp[:], u)
	return append(b, tmp[8-n:]...)
}

func appendUint(b []byte, u uint64) []byte {
	n := byteLen(u)
	return appendBE(append(b, intZeroCode+byte(n)), u, n)
}

func appendInt(b []byte, v int64) []byte {
	if v >= 0 {
		return appendUint(b, uint64(v))
	}
	return appendNegMagnitude(b, -uint64(v))
}

// appendNegMagnitude appends -mag for 0 < mag < 2^64: the code 0x14-n and the
// n-byte one's complement of the magnitude, which equals mag's negation plus
// 2^(8n)-1.
func appendNegMagnitude(b []byte, mag uint64) []byte {
	n := byteLen(mag)
	return appendBE(append(b, intZeroCode-byte(n)), ^mag, n)
}

func appendBig(b []byte, x *big.Int) []byte {
	n := (x.BitLen() + 7) / 8
	if n <= 8 {
		// Values of up to 8 bytes of magnitude, including negative ones below
		// math.MinInt64, use the fixed-size codes like every other integer.
		var tmp [8]byte
		x.FillBytes(tmp[:]) // absolute value
		mag := binary.BigEndian.Uint64(tmp[:])
		if x.Sign() < 0 {
			return appendNegMagnitude(b, mag)
		}
		return appendUint(b, mag)
	}
	if x.Sign() < 0 {
		b = append(b, negBigIntCode, byte(n)^0xff)
	} else {
		b = append(b, posBigIntCode, byte(n))
	}
	start := len(b)
	b = slices.Grow(b, n)[:start+n]
	x.FillBytes(b[start:])
	if x.Sign() < 0 {
		for i := start; i < len(b); i++ {
			b[i] = ^b[i]
		}
	}
	return b
}

// Floats are stored big-endian with a transform that makes byte order equal
// the IEEE total order: if the sign bit is set all bits are flipped,
// otherwise only the sign bit is. -0 sorts before +0, and NaNs sort at both
// ends according to their sign. NaN payloads are stored unchanged.

func appendFloat32(b []byte, f float32) []byte {
	u := math.Float32bits(f)
	if u&(1<<31) != 0 {
		u = ^u
	} else {
		u ^= 1 << 31
	}
	return binary.BigEndian.AppendUint32(append(b, floatCode), u)
}

func appendFloat64(b []byte, f float64) []byte {
	u := math.Float64bits(f)
	if u&(1<<63) != 0 {
		u = ^u
	} else {
		u ^= 1 << 63
	}
	return binary.BigEndian.AppendUint64(append(b, doubleCode), u)
}
