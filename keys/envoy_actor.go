package keys

import (
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// Keys of the actors placed on envoys (docs/design.md, "Key space"), in the
// pegboard subspace: the envoy's actors, its stored commands and its hash-ring entries.

// EnvoyActorKey is (NAMESPACE, ENVOY, ACTOR, namespace_id, envoy_key, actor_id) →
// generation (big-endian u32): the actors placed on an envoy and not yet stopped. Rivet
// writes it when the actor becomes connectable; berth at placement, so that an eviction or
// a loss finds the actors still starting too.
type EnvoyActorKey struct {
	Namespace id.ID
	EnvoyKey  string
	ActorID   id.ID
}

func (k EnvoyActorKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, tagEnvoy, tagActor, k.Namespace, k.EnvoyKey, k.ActorID})
}

// UnpackEnvoyActorKey parses an EnvoyActorKey, checking every constant segment.
func UnpackEnvoyActorKey(b []byte) (EnvoyActorKey, error) {
	t, err := unpack("EnvoyActorKey", pegboard, b, tagNamespace, tagEnvoy, tagActor, anyID, anyString, anyID)
	if err != nil {
		return EnvoyActorKey{}, err
	}
	return EnvoyActorKey{Namespace: t[3].(id.ID), EnvoyKey: t[4].(string), ActorID: t[5].(id.ID)}, nil
}

func (EnvoyActorKey) Encode(generation uint32) []byte { return encodeU32(generation) }
func (EnvoyActorKey) Decode(b []byte) (uint32, error) {
	if len(b) == 0 {
		return 0, nil
	}
	return decodeU32("EnvoyActorKey", b)
}

// EnvoyActorKeyRange is the EnvoyActorKey entries of envoy (ns, envoyKey).
func EnvoyActorKeyRange(ns id.ID, envoyKey string) (begin, end []byte) {
	return prefixRange(pegboard.Pack(tuple.Tuple{tagNamespace, tagEnvoy, tagActor, ns, envoyKey}))
}

// EnvoyCommandKey is (NAMESPACE, ENVOY, DATA, namespace_id, envoy_key, ACTOR, COMMAND,
// actor_id, generation, index) → a stored command (the same bytes as RunnerCommandKey's,
// see ops/actor): kept until the envoy acknowledges it, replayed when it reconnects.
type EnvoyCommandKey struct {
	Namespace  id.ID
	EnvoyKey   string
	ActorID    id.ID
	Generation uint32
	Index      int64
}

func envoyCommandPrefix(ns id.ID, envoyKey string) tuple.Tuple {
	return tuple.Tuple{tagNamespace, tagEnvoy, tagData, ns, envoyKey, tagActor, tagCommand}
}

func (k EnvoyCommandKey) Pack() []byte {
	return pegboard.Pack(append(envoyCommandPrefix(k.Namespace, k.EnvoyKey), k.ActorID, int64(k.Generation), k.Index))
}

// UnpackEnvoyCommandKey parses an EnvoyCommandKey, checking every constant segment.
func UnpackEnvoyCommandKey(b []byte) (EnvoyCommandKey, error) {
	t, err := unpack("EnvoyCommandKey", pegboard, b, tagNamespace, tagEnvoy, tagData, anyID, anyString, tagActor, tagCommand, anyID, anyInt, anyInt)
	if err != nil {
		return EnvoyCommandKey{}, err
	}
	gen := t[8].(int64)
	if gen < 0 || gen > 1<<32-1 {
		return EnvoyCommandKey{}, badKey("EnvoyCommandKey", b, "generation %d out of range", gen)
	}
	return EnvoyCommandKey{Namespace: t[3].(id.ID), EnvoyKey: t[4].(string), ActorID: t[7].(id.ID), Generation: uint32(gen), Index: t[9].(int64)}, nil
}

func (EnvoyCommandKey) Encode(v []byte) []byte          { return v }
func (EnvoyCommandKey) Decode(b []byte) ([]byte, error) { return b, nil }

// EnvoyCommandRange is every stored command of envoy (ns, envoyKey).
func EnvoyCommandRange(ns id.ID, envoyKey string) (begin, end []byte) {
	return prefixRange(pegboard.Pack(envoyCommandPrefix(ns, envoyKey)))
}

// EnvoyActorCommandRange is the stored commands of actor aid on envoy (ns, envoyKey).
func EnvoyActorCommandRange(ns id.ID, envoyKey string, aid id.ID) (begin, end []byte) {
	return prefixRange(pegboard.Pack(append(envoyCommandPrefix(ns, envoyKey), aid)))
}

// EnvoyCommandsUpTo is the stored commands of (actor aid, generation) on the envoy with
// index ≤ index: what an acknowledgement of that index clears.
func EnvoyCommandsUpTo(ns id.ID, envoyKey string, aid id.ID, generation uint32, index int64) (begin, end []byte) {
	prefix := pegboard.Pack(append(envoyCommandPrefix(ns, envoyKey), aid, int64(generation)))
	begin, _ = prefixRange(prefix)
	_, end = prefixRange(tuple.Tuple{index}.AppendPack(prefix))
	return begin, end
}

// EnvoyHashIdxKey is one of an envoy's virtual nodes on its pool's hash ring:
// (NAMESPACE, ENVOY_HASH_IDX, namespace_id, pool_name, -version, position, envoy_key) →
// empty. position is 16 bytes derived from the envoy key and the node's number (see
// ops/envoy). The version is negated as in EnvoyLoadBalancerIdxKey, so that each version
// has a ring of its own and the newest comes first. The entries are written at
// registration and cleared (with a read conflict on each) when the envoy drains or expires.
type EnvoyHashIdxKey struct {
	Namespace id.ID
	PoolName  string
	Version   uint32
	Position  []byte
	EnvoyKey  string
}

func (k EnvoyHashIdxKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, tagEnvoyHashIdx, k.Namespace, k.PoolName, -int64(k.Version), k.Position, k.EnvoyKey})
}

// UnpackEnvoyHashIdxKey parses an EnvoyHashIdxKey, checking every constant segment.
func UnpackEnvoyHashIdxKey(b []byte) (EnvoyHashIdxKey, error) {
	const name = "EnvoyHashIdxKey"
	t, err := unpack(name, pegboard, b, tagNamespace, tagEnvoyHashIdx, anyID, anyString, anyInt, anyBytes, anyString)
	if err != nil {
		return EnvoyHashIdxKey{}, err
	}
	version, err := unnegate(name, b, "version", t[4].(int64))
	if err != nil {
		return EnvoyHashIdxKey{}, err
	}
	return EnvoyHashIdxKey{Namespace: t[2].(id.ID), PoolName: t[3].(string), Version: version,
		Position: t[5].([]byte), EnvoyKey: t[6].(string)}, nil
}

func (EnvoyHashIdxKey) Encode(Empty) []byte            { return encodeEmpty() }
func (EnvoyHashIdxKey) Decode(b []byte) (Empty, error) { return decodeEmpty("EnvoyHashIdxKey", b) }

// EnvoyHashRing is the ring of one version of pool poolName in namespace ns: All is the
// whole ring, From the part at or after a position.
type EnvoyHashRing struct{ prefix []byte }

// EnvoyHashRingOf returns the ring of (ns, poolName, version).
func EnvoyHashRingOf(ns id.ID, poolName string, version uint32) EnvoyHashRing {
	return EnvoyHashRing{prefix: pegboard.Pack(tuple.Tuple{tagNamespace, tagEnvoyHashIdx, ns, poolName, -int64(version)})}
}

func (r EnvoyHashRing) All() (begin, end []byte) { return prefixRange(r.prefix) }

// From is the ring's entries at or after position pos, up to the ring's end.
func (r EnvoyHashRing) From(pos []byte) (begin, end []byte) {
	_, end = prefixRange(r.prefix)
	return tuple.Tuple{pos}.AppendPack(append([]byte(nil), r.prefix...)), end
}
