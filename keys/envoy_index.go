package keys

import (
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// Envoy index keys of a namespace (docs/design.md, "Key space"), in the
// pegboard subspace. The active indexes sort by (create_ts, envoy_key): lists
// scan them in reverse, newest first, and page with CreateTsRange.Before.
// Their value is empty.

// ActiveEnvoyKey is (NAMESPACE, ENVOY, ACTIVE, namespace_id, create_ts,
// envoy_key) → empty: the namespace's envoys that have not expired or stopped.
type ActiveEnvoyKey struct {
	Namespace id.ID
	CreateTs  int64
	EnvoyKey  string
}

func (k ActiveEnvoyKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, tagEnvoy, tagActive, k.Namespace, k.CreateTs, k.EnvoyKey})
}

// UnpackActiveEnvoyKey parses an ActiveEnvoyKey, checking every constant segment.
func UnpackActiveEnvoyKey(b []byte) (ActiveEnvoyKey, error) {
	t, err := unpack("ActiveEnvoyKey", pegboard, b, tagNamespace, tagEnvoy, tagActive, anyID, anyInt, anyString)
	if err != nil {
		return ActiveEnvoyKey{}, err
	}
	return ActiveEnvoyKey{Namespace: t[3].(id.ID), CreateTs: t[4].(int64), EnvoyKey: t[5].(string)}, nil
}

func (ActiveEnvoyKey) Encode(Empty) []byte            { return encodeEmpty() }
func (ActiveEnvoyKey) Decode(b []byte) (Empty, error) { return decodeEmpty("ActiveEnvoyKey", b) }

// ActiveEnvoyKeyRange is the ActiveEnvoyKey entries of namespace ns.
func ActiveEnvoyKeyRange(ns id.ID) CreateTsRange[string] {
	return newCreateTsRange[string](pegboard, tuple.Tuple{tagNamespace, tagEnvoy, tagActive, ns})
}

// ActiveEnvoyByNameKey is (NAMESPACE, ENVOY, BY_NAME, ACTIVE, namespace_id,
// pool_name, create_ts, envoy_key) → empty: the active envoys of one pool.
type ActiveEnvoyByNameKey struct {
	Namespace id.ID
	PoolName  string
	CreateTs  int64
	EnvoyKey  string
}

func (k ActiveEnvoyByNameKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, tagEnvoy, tagByName, tagActive, k.Namespace, k.PoolName, k.CreateTs, k.EnvoyKey})
}

// UnpackActiveEnvoyByNameKey parses an ActiveEnvoyByNameKey, checking every constant segment.
func UnpackActiveEnvoyByNameKey(b []byte) (ActiveEnvoyByNameKey, error) {
	t, err := unpack("ActiveEnvoyByNameKey", pegboard, b, tagNamespace, tagEnvoy, tagByName, tagActive, anyID, anyString, anyInt, anyString)
	if err != nil {
		return ActiveEnvoyByNameKey{}, err
	}
	return ActiveEnvoyByNameKey{Namespace: t[4].(id.ID), PoolName: t[5].(string), CreateTs: t[6].(int64), EnvoyKey: t[7].(string)}, nil
}

func (ActiveEnvoyByNameKey) Encode(Empty) []byte { return encodeEmpty() }
func (ActiveEnvoyByNameKey) Decode(b []byte) (Empty, error) {
	return decodeEmpty("ActiveEnvoyByNameKey", b)
}

// ActiveEnvoyByNameKeyRange is the ActiveEnvoyByNameKey entries of pool
// poolName in namespace ns.
func ActiveEnvoyByNameKeyRange(ns id.ID, poolName string) CreateTsRange[string] {
	return newCreateTsRange[string](pegboard, tuple.Tuple{tagNamespace, tagEnvoy, tagByName, tagActive, ns, poolName})
}

// EnvoyLoadBalancerIdxKey orders a pool's envoys for serverful allocation:
// (NAMESPACE, ENVOY_LOAD_BALANCER_IDX, namespace_id, pool_name, -version,
// last_ping_ts, envoy_key) → empty.
//
// The version is stored negated so that a forward scan meets the newest
// version first; within a version entries sort by last ping, oldest first,
// then by envoy key. The entry is rewritten on every ping: whoever clears the
// old entry must add a read conflict on it in the same transaction.
//
// Rivet negates the version as an i32; berth negates it as an i64, which
// gives the same bytes for every version below 2^31 and keeps the order for
// larger ones.
type EnvoyLoadBalancerIdxKey struct {
	Namespace  id.ID
	PoolName   string
	Version    uint32
	LastPingTs int64
	EnvoyKey   string
}

func (k EnvoyLoadBalancerIdxKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, tagEnvoyLoadBalancerIdx, k.Namespace, k.PoolName,
		-int64(k.Version), k.LastPingTs, k.EnvoyKey})
}

// UnpackEnvoyLoadBalancerIdxKey parses an EnvoyLoadBalancerIdxKey, checking
// every constant segment and that the negated version is in range.
func UnpackEnvoyLoadBalancerIdxKey(b []byte) (EnvoyLoadBalancerIdxKey, error) {
	const name = "EnvoyLoadBalancerIdxKey"
	t, err := unpack(name, pegboard, b, tagNamespace, tagEnvoyLoadBalancerIdx, anyID, anyString, anyInt, anyInt, anyString)
	if err != nil {
		return EnvoyLoadBalancerIdxKey{}, err
	}
	version, err := unnegate(name, b, "version", t[4].(int64))
	if err != nil {
		return EnvoyLoadBalancerIdxKey{}, err
	}
	return EnvoyLoadBalancerIdxKey{Namespace: t[2].(id.ID), PoolName: t[3].(string), Version: version,
		LastPingTs: t[5].(int64), EnvoyKey: t[6].(string)}, nil
}

func (EnvoyLoadBalancerIdxKey) Encode(Empty) []byte { return encodeEmpty() }
func (EnvoyLoadBalancerIdxKey) Decode(b []byte) (Empty, error) {
	return decodeEmpty("EnvoyLoadBalancerIdxKey", b)
}

// EnvoyLoadBalancerIdxKeyRange is the load-balancer index of pool poolName in
// namespace ns, in allocation order.
func EnvoyLoadBalancerIdxKeyRange(ns id.ID, poolName string) (begin, end []byte) {
	return prefixRange(pegboard.Pack(tuple.Tuple{tagNamespace, tagEnvoyLoadBalancerIdx, ns, poolName}))
}
