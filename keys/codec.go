package keys

import (
	"encoding/binary"
	"unicode/utf8"

	"github.com/berthhq/berth/pkg/id"
)

// Value codecs shared by the key types. Plain integers are big-endian, as in
// Rivet; values changed by atomic add are little-endian i64, because
// FoundationDB's add is little-endian. Strings are raw UTF-8, ids their 19
// raw bytes, presence-only values empty.

func encodeI64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func decodeI64(name string, b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, badValue(name, "value is %d bytes, want 8 (big-endian i64)", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

func encodeU32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func decodeU32(name string, b []byte) (uint32, error) {
	if len(b) != 4 {
		return 0, badValue(name, "value is %d bytes, want 4 (big-endian u32)", len(b))
	}
	return binary.BigEndian.Uint32(b), nil
}

func encodeU16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }

func decodeU16(name string, b []byte) (uint16, error) {
	if len(b) != 2 {
		return 0, badValue(name, "value is %d bytes, want 2 (big-endian u16)", len(b))
	}
	return binary.BigEndian.Uint16(b), nil
}

func encodeU8(v uint8) []byte { return []byte{v} }

func decodeU8(name string, b []byte) (uint8, error) {
	if len(b) != 1 {
		return 0, badValue(name, "value is %d bytes, want 1 (u8)", len(b))
	}
	return b[0], nil
}

// encodeCounter is the little-endian i64 operand and value of an atomic-add
// counter.
func encodeCounter(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

func decodeCounter(name string, b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, badValue(name, "value is %d bytes, want 8 (little-endian i64)", len(b))
	}
	return int64(binary.LittleEndian.Uint64(b)), nil
}

func encodeString(s string) []byte { return []byte(s) }

func decodeString(name string, b []byte) (string, error) {
	if !utf8.Valid(b) {
		return "", badValue(name, "value is not valid UTF-8")
	}
	return string(b), nil
}

func encodeID(v id.ID) []byte { return append([]byte(nil), v[:]...) }

// decodeID accepts a valid ID, and the zero ID, which berth stores where Rivet
// stores a workflow id and there is none.
func decodeID(name string, b []byte) (id.ID, error) {
	if len(b) == id.Size && id.ID(b).IsZero() {
		return id.ID{}, nil
	}
	v, err := id.FromBytes(b)
	if err != nil {
		return id.ID{}, badValue(name, "%v", err)
	}
	return v, nil
}

// Empty is the value of keys whose presence is the information (an index
// entry, a flag).
type Empty struct{}

func encodeEmpty() []byte { return []byte{} }

func decodeEmpty(name string, b []byte) (Empty, error) {
	if len(b) != 0 {
		return Empty{}, badValue(name, "value is %d bytes, want none", len(b))
	}
	return Empty{}, nil
}
