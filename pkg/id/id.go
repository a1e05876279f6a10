package id

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"

	"github.com/berthhq/berth/pkg/tuple"
)

// Layout and encoding constants. They are wire and storage format: never
// change them.
const (
	// Size is the length of an ID in bytes.
	Size = 19
	// StringLen is the length of an ID's string form.
	StringLen = 30
	// Version is the only supported version byte.
	Version = 1
	// TupleCode is the tuple type code an ID packs under, followed by its
	// 19 bytes (Rivet's util-id).
	TupleCode = 0x40
)

// ID is a Rivet Id: byte 0 is the version (1), bytes 1–16 a UUIDv4 and bytes
// 17–18 the big-endian label of the datacenter that created it. The same type
// names namespaces, runners, actors, workflows and requests.
//
// The string form reads the 19 bytes as one little-endian number (byte 0 is the
// least significant) and writes it in base36 with 30 digits, least significant
// digit first, using 0-9a-z. So the first four characters determine the version:
// their value mod 256 is byte 0, because 36⁴ ≡ 0 (mod 256).
//
// The zero ID (version 0) is not a valid id; [ID.IsZero] reports it. It still
// formats, as thirty zeros, but Parse and FromBytes reject it. Inside a packed
// tuple it round-trips, so that no stored key becomes unreadable; any other
// version-0 payload is a decode error there.
//
// IDs compare, and sort inside packed tuples, by their bytes ([ID.Compare]).
type ID [Size]byte

// New returns a new ID with a random UUIDv4 and the given datacenter label.
func New(label uint16) ID {
	var u [16]byte
	// crypto/rand.Read never returns an error (it crashes the program if
	// the system's random source fails).
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return FromParts(u, label)
}

// FromParts returns the version 1 ID with the given UUID and label. It does
// not check that uuid is a version 4 UUID (Rivet does not either).
func FromParts(uuid [16]byte, label uint16) ID {
	var id ID
	id[0] = Version
	copy(id[1:17], uuid[:])
	binary.BigEndian.PutUint16(id[17:], label)
	return id
}

// FromBytes returns the ID held in b, which must be 19 bytes starting with
// the version byte 1. Errors are *ParseError values wrapping ErrLength or
// ErrVersion.
func FromBytes(b []byte) (ID, error) {
	if len(b) != Size {
		return ID{}, bytesError(b, ErrLength, "got %d bytes, want %d", len(b), Size)
	}
	if b[0] != Version {
		return ID{}, bytesError(b, ErrVersion, "version byte is %d, want %d", b[0], Version)
	}
	return ID(b), nil
}

// Version returns the version byte (1 for every valid ID).
func (id ID) Version() byte { return id[0] }

// Label returns the label of the datacenter that created the ID.
func (id ID) Label() uint16 { return binary.BigEndian.Uint16(id[17:]) }

// UUID returns the 16 UUID bytes.
func (id ID) UUID() [16]byte { return [16]byte(id[1:17]) }

// IsZero reports whether id is the zero value.
func (id ID) IsZero() bool { return id == ID{} }

// Compare returns -1, 0 or +1 as id sorts before, equal to or after other:
// byte order, which is also the order of IDs packed in tuples.
func (id ID) Compare(other ID) int { return bytes.Compare(id[:], other[:]) }

// TupleUserCode makes ID a [tuple.UserType]: it packs as 0x40 then its 19 bytes.
func (ID) TupleUserCode() byte { return TupleCode }

// AppendTupleBytes appends the 19 bytes of id.
func (id ID) AppendTupleBytes(dst []byte) []byte { return append(dst, id[:]...) }

func init() {
	tuple.RegisterUserType(TupleCode, Size, func(p []byte) (any, error) {
		if ID(p).IsZero() {
			return ID{}, nil // so that every ID, even the zero one, unpacks as packed
		}
		id, err := FromBytes(p)
		if err != nil {
			return nil, err
		}
		return id, nil
	})
}
