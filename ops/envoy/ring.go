package envoy

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/udb"
)

// VirtualNodes is how many entries an envoy has on its pool's hash ring (Rivet's default).
const VirtualNodes = 8

// ringPosition is the position of virtual node i of envoy key on the ring: the first 16
// bytes of SHA-256(key, i). Rivet hashes with xxh3-128; only the spread matters, and the
// positions are rewritten whenever an envoy registers.
func ringPosition(key string, i uint8) []byte {
	h := sha256.New()
	h.Write([]byte(key))
	h.Write([]byte{i})
	return h.Sum(nil)[:16]
}

// ringKeys are the envoy's hash-ring entries for its current fields.
func (s state) ringKeys() []keys.EnvoyHashIdxKey {
	out := make([]keys.EnvoyHashIdxKey, s.virtualNodes)
	for i := range out {
		out[i] = keys.EnvoyHashIdxKey{Namespace: s.ns, PoolName: s.pool, Version: s.version, Position: ringPosition(s.key, uint8(i)), EnvoyKey: s.key}
	}
	return out
}

// join puts the envoy in its pool's placement indexes: the load-balancer entry and its
// virtual nodes on the hash ring. Its ring size is recorded (VirtualNodesKey) so that
// leave clears exactly what was written.
func (s state) join(tx udb.Transaction) {
	s.index(tx)
	keys.Set(tx, keys.EnvoyVirtualNodesKey{Namespace: s.ns, EnvoyKey: s.key}, s.virtualNodes)
	for _, k := range s.ringKeys() {
		keys.Set(tx, k, keys.Empty{})
	}
}

// leave takes the envoy out of the placement indexes, if it is in them, with a read
// conflict on every entry it clears: a placement that chose the envoy from a snapshot (and
// added a read conflict on its choice) then conflicts with this transaction.
func (s state) leave(tx udb.Transaction) error {
	if !s.indexed() {
		return nil
	}
	for _, k := range s.ringKeys() {
		b := k.Pack()
		if err := udb.AddReadConflictKey(tx, b); err != nil {
			return err
		}
		tx.Clear(b)
	}
	return s.unindex(tx)
}

// ringPivot draws a random 16-byte position on the ring.
func ringPivot(random func(n int64) int64) []byte {
	hi, lo := uint64(random(1<<62))<<2|uint64(random(4)), uint64(random(1<<62))<<2|uint64(random(4))
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, hi), lo)
}
