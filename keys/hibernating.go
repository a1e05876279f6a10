package keys

import (
	"encoding/binary"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// HibernatingRequestKey is (ACTOR, HIBERNATING_REQUEST, actor_id, gateway_and_request) →
// last keepalive ts (big-endian i64): a client WebSocket the gateway keeps open while the
// actor sleeps. gateway_and_request is the 4-byte gateway id then the 4-byte request id, as
// one big-endian 64-bit integer. The actor's next start lists the fresh entries
// (CommandStartActor.hibernatingRequests) so its runner restores those sockets.
type HibernatingRequestKey struct {
	ActorID   id.ID
	GatewayID [4]byte
	RequestID [4]byte
}

func (k HibernatingRequestKey) Pack() []byte {
	var b [8]byte
	copy(b[:4], k.GatewayID[:])
	copy(b[4:], k.RequestID[:])
	return pegboard.Pack(tuple.Tuple{tagActor, tagHibernatingRequest, k.ActorID, int64(binary.BigEndian.Uint64(b[:]))})
}

// UnpackHibernatingRequestKey parses a HibernatingRequestKey, checking every constant segment.
func UnpackHibernatingRequestKey(b []byte) (HibernatingRequestKey, error) {
	t, err := unpack("HibernatingRequestKey", pegboard, b, tagActor, tagHibernatingRequest, anyID, anyInt)
	if err != nil {
		return HibernatingRequestKey{}, err
	}
	var pair [8]byte
	binary.BigEndian.PutUint64(pair[:], uint64(t[3].(int64)))
	k := HibernatingRequestKey{ActorID: t[2].(id.ID)}
	copy(k.GatewayID[:], pair[:4])
	copy(k.RequestID[:], pair[4:])
	return k, nil
}

func (HibernatingRequestKey) Encode(ts int64) []byte { return encodeI64(ts) }
func (HibernatingRequestKey) Decode(b []byte) (int64, error) {
	return decodeI64("HibernatingRequestKey", b)
}

// HibernatingRequestRange is the hibernating requests of actor aid.
func HibernatingRequestRange(aid id.ID) (begin, end []byte) {
	return prefixRange(pegboard.Pack(tuple.Tuple{tagActor, tagHibernatingRequest, aid}))
}
