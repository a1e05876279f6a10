package tuple

import (
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Tuple is an ordered list of elements. Packed tuples sort, byte-wise, in the
// tuple order defined by the FoundationDB tuple layer specification (summed up
// in docs/udb.md, "Tuple encoding"): element by element, a prefix before
// any extension, and within an element first by type, then by value.
//
// Element types accepted by [Tuple.Pack]:
//
//	nil                                  null
//	[]byte                               byte string
//	string                               unicode string (bytes stored as given; UTF-8 is not validated)
//	Tuple, []any                         nested tuple
//	int, int8, int16, int32, int64       integer
//	uint, uint8, uint16, uint32, uint64  integer
//	*big.Int, big.Int                    integer, magnitude at most 255 bytes
//	float32, float64                     IEEE float / double (NaN payloads are kept)
//	bool                                 false / true
//	UUID                                 128-bit UUID
//	Versionstamp                         96-bit versionstamp
//	UserType                             application type, code 0x40–0x4f (see RegisterUserType)
//
// [Unpack] returns only these dynamic types: nil, []byte, string, Tuple,
// int64, uint64 (positive values above math.MaxInt64), *big.Int (values
// outside the 64-bit ranges), float32, float64, bool, UUID and Versionstamp,
// plus whatever the decoders of registered user types return.
type Tuple []any

// TupleElement is any value that can appear in a [Tuple].
type TupleElement = any

// UUID is a 128-bit UUID in RFC 4122 network byte order.
type UUID [16]byte

// String formats u as 8-4-4-4-12 lowercase hex digits.
func (u UUID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
	return string(b[:])
}

// Versionstamp is a 96-bit versionstamp: a 10-byte transaction version (the
// 8-byte big-endian commit version then the 2-byte big-endian batch order)
// followed by a 16-bit user version.
//
// A versionstamp whose transaction version is ten 0xFF bytes is incomplete: it
// is a placeholder that the database fills in at commit time, see
// [Tuple.PackWithVersionstamp].
type Versionstamp struct {
	TransactionVersion [10]byte
	UserVersion        uint16
}

var incompleteTransactionVersion = [10]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// IncompleteVersionstamp returns a placeholder versionstamp with the given
// user version, to be completed by the database at commit time.
func IncompleteVersionstamp(userVersion uint16) Versionstamp {
	return Versionstamp{TransactionVersion: incompleteTransactionVersion, UserVersion: userVersion}
}

// IsComplete reports whether v carries a real transaction version rather than
// the incomplete placeholder.
func (v Versionstamp) IsComplete() bool {
	return v.TransactionVersion != incompleteTransactionVersion
}

// Bytes returns the 12-byte encoding of v: transaction version then the
// big-endian user version.
func (v Versionstamp) Bytes() []byte {
	b := make([]byte, versionstampLen)
	copy(b, v.TransactionVersion[:])
	b[10] = byte(v.UserVersion >> 8)
	b[11] = byte(v.UserVersion)
	return b
}

// String formats v as hex transaction version and decimal user version.
func (v Versionstamp) String() string {
	return fmt.Sprintf("Versionstamp(%x, %d)", v.TransactionVersion[:], v.UserVersion)
}

// String formats t for humans, in a Python-like notation:
// (None, b"raw\x00", "text", 42, 1.5, true, ("nested",)).
// It is meant for logs and test failures, not for parsing.
func (t Tuple) String() string {
	var sb strings.Builder
	writeTuple(&sb, t)
	return sb.String()
}

func writeTuple(sb *strings.Builder, t Tuple) {
	sb.WriteByte('(')
	for i, e := range t {
		if i > 0 {
			sb.WriteString(", ")
		}
		writeElem(sb, e)
	}
	if len(t) == 1 {
		sb.WriteByte(',')
	}
	sb.WriteByte(')')
}

func writeElem(sb *strings.Builder, e any) {
	switch v := e.(type) {
	case nil:
		sb.WriteString("None")
	case []byte:
		sb.WriteString("b\"")
		for _, c := range v {
			switch {
			case c == '"' || c == '\\':
				sb.WriteByte('\\')
				sb.WriteByte(c)
			case c >= 0x20 && c < 0x7f:
				sb.WriteByte(c)
			default:
				sb.WriteString(`\x`)
				sb.WriteString(hex.EncodeToString([]byte{c}))
			}
		}
		sb.WriteByte('"')
	case string:
		sb.WriteString(strconv.Quote(v))
	case Tuple:
		writeTuple(sb, v)
	case []any:
		writeTuple(sb, v)
	case float32:
		sb.WriteString(strconv.FormatFloat(float64(v), 'g', -1, 32))
		sb.WriteString("f")
	case float64:
		sb.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	case *big.Int:
		if v == nil {
			sb.WriteString("<nil *big.Int>")
			return
		}
		sb.WriteString(v.String())
	case big.Int:
		sb.WriteString(v.String())
	case UUID:
		sb.WriteString("UUID(")
		sb.WriteString(v.String())
		sb.WriteByte(')')
	default:
		fmt.Fprint(sb, v)
	}
}
