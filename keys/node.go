package keys

import (
	"encoding/binary"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/subspace"
	"github.com/berthhq/berth/pkg/tuple"
)

// Engine nodes (berth's own; Rivet keeps node membership outside the store). Several nodes
// of one datacenter share the store: each registers a lease, and the node holding a
// runner's or an envoy's socket records it in an ownership record fenced by an epoch, so that a gateway
// or a command on any node finds the socket, and a node leaving releases what it holds.
var nodeSub = subspace.Sub(tagRivet, tagNode)

// NodeLease is a node's registration: where other nodes reach it and until when it is
// alive unless renewed.
type NodeLease struct {
	// ExpiresMs is unix ms after which the node counts as gone.
	ExpiresMs int64
	// Address is the node's internal URL (its api-peer listener), e.g. http://10.0.0.5:6421.
	Address string
}

// NodeLeaseKey is (NODE, NODE_LEASE, node_id) → NodeLease: big-endian i64 expiry, then
// the address as UTF-8.
type NodeLeaseKey struct{ NodeID string }

func (k NodeLeaseKey) Pack() []byte { return nodeSub.Pack(tuple.Tuple{tagNodeLease, k.NodeID}) }

// NodeLeaseRange is the range holding every node's lease.
func NodeLeaseRange() (begin, end []byte) {
	return nodeSub.Sub(tagNodeLease).FDBRangeKeys()
}

// UnpackNodeLeaseKey parses a NodeLeaseKey, checking every constant segment.
func UnpackNodeLeaseKey(b []byte) (NodeLeaseKey, error) {
	t, err := unpack("NodeLeaseKey", nodeSub, b, tagNodeLease, anyString)
	if err != nil {
		return NodeLeaseKey{}, err
	}
	return NodeLeaseKey{NodeID: t[1].(string)}, nil
}

func (NodeLeaseKey) Encode(v NodeLease) []byte {
	return append(encodeI64(v.ExpiresMs), v.Address...)
}

func (NodeLeaseKey) Decode(b []byte) (NodeLease, error) {
	if len(b) < 8 {
		return NodeLease{}, badValue("NodeLeaseKey", "value is %d bytes, want at least 8", len(b))
	}
	addr, err := decodeString("NodeLeaseKey", b[8:])
	if err != nil {
		return NodeLease{}, err
	}
	return NodeLease{ExpiresMs: int64(binary.BigEndian.Uint64(b)), Address: addr}, nil
}

// Socket names the peer of an ownership record: a runner (RunnerID) or an envoy (Namespace
// and EnvoyKey; envoy keys are unique within a namespace). Its key segments are runner_id
// for a runner and ENVOY, namespace_id, envoy_key for an envoy, so the two never collide.
type Socket struct {
	RunnerID  id.ID // zero for an envoy
	Namespace id.ID // zero for a runner
	EnvoyKey  string
}

// RunnerSocket is runner rid's socket.
func RunnerSocket(rid id.ID) Socket { return Socket{RunnerID: rid} }

// EnvoySocket is the socket of envoy key in namespace ns.
func EnvoySocket(ns id.ID, key string) Socket { return Socket{Namespace: ns, EnvoyKey: key} }

// IsEnvoy reports whether s is an envoy's socket.
func (s Socket) IsEnvoy() bool { return s.EnvoyKey != "" }

// String names the socket for logs.
func (s Socket) String() string {
	if s.IsEnvoy() {
		return "envoy " + s.Namespace.String() + "/" + s.EnvoyKey
	}
	return "runner " + s.RunnerID.String()
}

// append adds the socket's segments to t.
func (s Socket) append(t tuple.Tuple) tuple.Tuple {
	if s.IsEnvoy() {
		return append(t, tagEnvoy, s.Namespace, s.EnvoyKey)
	}
	return append(t, s.RunnerID)
}

// unpackSocket parses a key of sub whose segments are prefix (constants and holes) then a
// Socket's, trying the runner shape and then the envoy shape; it returns the prefix's
// segments too.
func unpackSocket(name string, sub subspace.Subspace, b []byte, prefix ...any) (tuple.Tuple, Socket, error) {
	t, err := unpack(name, sub, b, append(prefix, anyID)...)
	if err == nil {
		return t, RunnerSocket(t[len(prefix)].(id.ID)), nil
	}
	t, err2 := unpack(name, sub, b, append(prefix, tagEnvoy, anyID, anyString)...)
	if err2 != nil {
		return nil, Socket{}, err
	}
	n := len(prefix)
	return t, EnvoySocket(t[n+1].(id.ID), t[n+2].(string)), nil
}

// SocketOwner names the node holding a runner's or an envoy's socket. Epoch grows by one at
// every claim of the socket by any node: a release or a renewal carrying an older epoch is
// refused, so a node that lost the socket can never clear its successor's record.
type SocketOwner struct {
	Epoch  int64
	NodeID string
}

// SocketOwnerKey is (NODE, SOCKET_OWNER, runner_id) for a runner and (NODE, SOCKET_OWNER,
// ENVOY, namespace_id, envoy_key) for an envoy → SocketOwner: big-endian i64 epoch, then
// the node id as UTF-8. An empty node id is a released record (the epoch is kept, so epochs
// never go back).
type SocketOwnerKey struct{ Socket Socket }

func (k SocketOwnerKey) Pack() []byte {
	return nodeSub.Pack(k.Socket.append(tuple.Tuple{tagSocketOwner}))
}

// UnpackSocketOwnerKey parses a SocketOwnerKey, checking every constant segment.
func UnpackSocketOwnerKey(b []byte) (SocketOwnerKey, error) {
	_, s, err := unpackSocket("SocketOwnerKey", nodeSub, b, tagSocketOwner)
	if err != nil {
		return SocketOwnerKey{}, err
	}
	return SocketOwnerKey{Socket: s}, nil
}

func (SocketOwnerKey) Encode(v SocketOwner) []byte { return append(encodeI64(v.Epoch), v.NodeID...) }

func (SocketOwnerKey) Decode(b []byte) (SocketOwner, error) {
	if len(b) < 8 {
		return SocketOwner{}, badValue("SocketOwnerKey", "value is %d bytes, want at least 8", len(b))
	}
	node, err := decodeString("SocketOwnerKey", b[8:])
	if err != nil {
		return SocketOwner{}, err
	}
	return SocketOwner{Epoch: int64(binary.BigEndian.Uint64(b)), NodeID: node}, nil
}

// NodeSocketKey is (NODE, NODE_SOCKET_IDX, node_id, <socket>) → i64 big-endian epoch, the
// socket's segments as in SocketOwnerKey: the ownership records a node holds, so that it can
// release them all when it leaves. It is written and cleared in the same transactions as
// the SocketOwnerKey it mirrors.
type NodeSocketKey struct {
	NodeID string
	Socket Socket
}

func (k NodeSocketKey) Pack() []byte {
	return nodeSub.Pack(k.Socket.append(tuple.Tuple{tagNodeSocketIx, k.NodeID}))
}

// NodeSocketRange is the range of node's ownership index.
func NodeSocketRange(node string) (begin, end []byte) {
	return nodeSub.Sub(tagNodeSocketIx, node).FDBRangeKeys()
}

// UnpackNodeSocketKey parses a NodeSocketKey, checking every constant segment.
func UnpackNodeSocketKey(b []byte) (NodeSocketKey, error) {
	t, s, err := unpackSocket("NodeSocketKey", nodeSub, b, tagNodeSocketIx, anyString)
	if err != nil {
		return NodeSocketKey{}, err
	}
	return NodeSocketKey{NodeID: t[1].(string), Socket: s}, nil
}

func (NodeSocketKey) Encode(v int64) []byte          { return encodeI64(v) }
func (NodeSocketKey) Decode(b []byte) (int64, error) { return decodeI64("NodeSocketKey", b) }
