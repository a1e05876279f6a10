package keys

import (
	"encoding/binary"

	"github.com/berthhq/berth/pkg/tuple"
)

// Lease is a named task's holder among the engine nodes of a datacenter (ops/lease): one
// node at a time does the task, until ExpiresMs unless it renews the lease.
type Lease struct {
	// ExpiresMs is unix ms after which another node may take the lease.
	ExpiresMs int64
	// Holder is the holding node's id.
	Holder string
}

// LeaseKey is (PEGBOARD, LEASE, name) → Lease: big-endian i64 expiry, then the holder's
// node id as UTF-8. berth's own (Rivet runs such tasks as workflows).
type LeaseKey struct{ Name string }

func (k LeaseKey) Pack() []byte { return pegboard.Pack(tuple.Tuple{tagLease, k.Name}) }

// UnpackLeaseKey parses a LeaseKey, checking every constant segment.
func UnpackLeaseKey(b []byte) (LeaseKey, error) {
	t, err := unpack("LeaseKey", pegboard, b, tagLease, anyString)
	if err != nil {
		return LeaseKey{}, err
	}
	return LeaseKey{Name: t[1].(string)}, nil
}

func (LeaseKey) Encode(v Lease) []byte { return append(encodeI64(v.ExpiresMs), v.Holder...) }

func (LeaseKey) Decode(b []byte) (Lease, error) {
	if len(b) < 8 {
		return Lease{}, badValue("LeaseKey", "value is %d bytes, want at least 8", len(b))
	}
	holder, err := decodeString("LeaseKey", b[8:])
	if err != nil {
		return Lease{}, err
	}
	return Lease{ExpiresMs: int64(binary.BigEndian.Uint64(b)), Holder: holder}, nil
}
