package keys

import (
	"encoding/binary"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/subspace"
	"github.com/berthhq/berth/pkg/tuple"
)

// Keys unique across datacenters (berth's own; ops/keyres, docs/design.md "Keys across
// datacenters"). The leader datacenter's store holds one reservation per (namespace, name,
// key): the actor that may hold the key. Every datacenter may hold fences: an actor id
// fenced there can no longer be created, so a reservation whose actor never appeared can be
// handed to another one.
var keyResSub = subspace.Sub(tagRivet, tagKeyRes)

// KeyReservation is the actor a key is reserved for, and when it was reserved (unix ms).
type KeyReservation struct {
	ActorID      id.ID
	ReservedAtMs int64
}

// keyReservationVersion is the version of the KeyReservation encoding: struct { actor_id:
// data; reserved_at_ms: uint }.
const keyReservationVersion = 1

// KeyReservationKey is (KEY_RES, RESERVATION, namespace_id, name, key) → KeyReservation,
// versioned BARE. Only the leader datacenter's store has these.
type KeyReservationKey struct {
	Namespace id.ID
	Name, Key string
}

func (k KeyReservationKey) Pack() []byte {
	return keyResSub.Pack(tuple.Tuple{tagKeyReservation, k.Namespace, k.Name, k.Key})
}

// KeyReservationRange is the range holding every reservation.
func KeyReservationRange() (begin, end []byte) {
	return keyResSub.Sub(tagKeyReservation).FDBRangeKeys()
}

// UnpackKeyReservationKey parses a KeyReservationKey, checking every constant segment.
func UnpackKeyReservationKey(b []byte) (KeyReservationKey, error) {
	t, err := unpack("KeyReservationKey", keyResSub, b, tagKeyReservation, anyID, anyString, anyString)
	if err != nil {
		return KeyReservationKey{}, err
	}
	return KeyReservationKey{Namespace: t[1].(id.ID), Name: t[2].(string), Key: t[3].(string)}, nil
}

func (KeyReservationKey) Encode(v KeyReservation) []byte {
	b := appendVersion(make([]byte, 0, 2+1+id.Size+10), keyReservationVersion)
	b = appendBareID(b, v.ActorID)
	return binary.AppendUvarint(b, uint64(v.ReservedAtMs))
}

func (KeyReservationKey) Decode(b []byte) (KeyReservation, error) {
	r := bareReader{name: "KeyReservationKey", b: b}
	if v := r.version(); r.err == nil && v != keyReservationVersion {
		r.fail("unknown version %d", v)
	}
	out := KeyReservation{ActorID: r.id("actor_id")}
	at := r.uvarint("reserved_at_ms")
	if r.err == nil && at > 1<<62 {
		r.fail("reserved_at_ms %d out of range", at)
	}
	out.ReservedAtMs = int64(at)
	if err := r.done(); err != nil {
		return KeyReservation{}, err
	}
	return out, nil
}

// KeyFenceKey is (KEY_RES, FENCE, actor_id) → big-endian i64, when the id was fenced (unix
// ms): an actor with this id was absent when another datacenter took over its reservation,
// and must never be created (ops/actor.Create checks it for reserved keys).
type KeyFenceKey struct{ ActorID id.ID }

func (k KeyFenceKey) Pack() []byte { return keyResSub.Pack(tuple.Tuple{tagKeyFence, k.ActorID}) }

// UnpackKeyFenceKey parses a KeyFenceKey, checking every constant segment.
func UnpackKeyFenceKey(b []byte) (KeyFenceKey, error) {
	t, err := unpack("KeyFenceKey", keyResSub, b, tagKeyFence, anyID)
	if err != nil {
		return KeyFenceKey{}, err
	}
	return KeyFenceKey{ActorID: t[1].(id.ID)}, nil
}

func (KeyFenceKey) Encode(v int64) []byte          { return encodeI64(v) }
func (KeyFenceKey) Decode(b []byte) (int64, error) { return decodeI64("KeyFenceKey", b) }

// NamespaceScopesRange is the range of pegboard's per-namespace keys, (NAMESPACE, …): the
// indexes of each namespace, (NAMESPACE, namespace_id, …), among the pool-wide ones.
func NamespaceScopesRange() (begin, end []byte) {
	return pegboard.Sub(tagNamespace).FDBRangeKeys()
}

// NamespaceScopeOf takes a key of NamespaceScopesRange and returns the range of the keys
// that share its element after NAMESPACE (so that a scan can skip it whole), and that
// element when it is a namespace id.
func NamespaceScopeOf(b []byte) (ns id.ID, isNamespace bool, end []byte, err error) {
	t, err := pegboard.Unpack(b)
	if err != nil || len(t) < 2 || t[0] != int64(tagNamespace) {
		return id.ID{}, false, nil, badKey("NamespaceScope", b, "not a per-namespace key of pegboard")
	}
	_, end = pegboard.Sub(tagNamespace, t[1]).FDBRangeKeys()
	ns, isNamespace = t[1].(id.ID)
	return ns, isNamespace, end, nil
}

// ActorByKeyNamespaceRange is the range of every entry of ActorByKeyKey in namespace ns.
func ActorByKeyNamespaceRange(ns id.ID) (begin, end []byte) {
	return pegboard.Sub(tagNamespace, ns, tagActor, tagByNameAndKey).FDBRangeKeys()
}
