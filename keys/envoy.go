package keys

import (
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// Envoy data keys (docs/design.md, "Key space"): one value per field under
// (NAMESPACE, ENVOY, DATA, namespace_id, envoy_key), in the pegboard subspace.
// Envoys are named by their key (a string chosen by the envoy), unique within
// a namespace.

func envoyDataKey(ns id.ID, envoyKey string, tag int) []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, tagEnvoy, tagData, ns, envoyKey, tag})
}

func unpackEnvoyData(name string, b []byte, tag int) (id.ID, string, error) {
	t, err := unpack(name, pegboard, b, tagNamespace, tagEnvoy, tagData, anyID, anyString, tag)
	if err != nil {
		return id.ID{}, "", err
	}
	return t[3].(id.ID), t[4].(string), nil
}

// EnvoyCreateTsKey is (NAMESPACE, ENVOY, DATA, namespace_id, envoy_key, CREATE_TS) → int64
// big-endian: unix ms when the envoy was created.
type EnvoyCreateTsKey struct {
	Namespace id.ID
	EnvoyKey  string
}

func (k EnvoyCreateTsKey) Pack() []byte { return envoyDataKey(k.Namespace, k.EnvoyKey, tagCreateTs) }

// UnpackEnvoyCreateTsKey parses a EnvoyCreateTsKey, checking every constant segment.
func UnpackEnvoyCreateTsKey(b []byte) (EnvoyCreateTsKey, error) {
	ns, ek, err := unpackEnvoyData("EnvoyCreateTsKey", b, tagCreateTs)
	return EnvoyCreateTsKey{Namespace: ns, EnvoyKey: ek}, err
}

func (EnvoyCreateTsKey) Encode(v int64) []byte          { return encodeI64(v) }
func (EnvoyCreateTsKey) Decode(b []byte) (int64, error) { return decodeI64("EnvoyCreateTsKey", b) }

// EnvoyExpiredTsKey is (NAMESPACE, ENVOY, DATA, namespace_id, envoy_key, EXPIRED_TS) → int64
// big-endian: unix ms when it was declared lost; present ⇔ expired.
type EnvoyExpiredTsKey struct {
	Namespace id.ID
	EnvoyKey  string
}

func (k EnvoyExpiredTsKey) Pack() []byte { return envoyDataKey(k.Namespace, k.EnvoyKey, tagExpiredTs) }

// UnpackEnvoyExpiredTsKey parses a EnvoyExpiredTsKey, checking every constant segment.
func UnpackEnvoyExpiredTsKey(b []byte) (EnvoyExpiredTsKey, error) {
	ns, ek, err := unpackEnvoyData("EnvoyExpiredTsKey", b, tagExpiredTs)
	return EnvoyExpiredTsKey{Namespace: ns, EnvoyKey: ek}, err
}

func (EnvoyExpiredTsKey) Encode(v int64) []byte          { return encodeI64(v) }
func (EnvoyExpiredTsKey) Decode(b []byte) (int64, error) { return decodeI64("EnvoyExpiredTsKey", b) }

// EnvoyStopTsKey is (NAMESPACE, ENVOY, DATA, namespace_id, envoy_key, STOP_TS) → int64 big-endian:
// unix ms when it stopped; present ⇔ stopped.
type EnvoyStopTsKey struct {
	Namespace id.ID
	EnvoyKey  string
}

func (k EnvoyStopTsKey) Pack() []byte { return envoyDataKey(k.Namespace, k.EnvoyKey, tagStopTs) }

// UnpackEnvoyStopTsKey parses a EnvoyStopTsKey, checking every constant segment.
func UnpackEnvoyStopTsKey(b []byte) (EnvoyStopTsKey, error) {
	ns, ek, err := unpackEnvoyData("EnvoyStopTsKey", b, tagStopTs)
	return EnvoyStopTsKey{Namespace: ns, EnvoyKey: ek}, err
}

func (EnvoyStopTsKey) Encode(v int64) []byte          { return encodeI64(v) }
func (EnvoyStopTsKey) Decode(b []byte) (int64, error) { return decodeI64("EnvoyStopTsKey", b) }

// EnvoyConnectedTsKey is (NAMESPACE, ENVOY, DATA, namespace_id, envoy_key, CONNECTED_TS) → int64
// big-endian: unix ms of the current connection.
type EnvoyConnectedTsKey struct {
	Namespace id.ID
	EnvoyKey  string
}

func (k EnvoyConnectedTsKey) Pack() []byte {
	return envoyDataKey(k.Namespace, k.EnvoyKey, tagConnectedTs)
}

// UnpackEnvoyConnectedTsKey parses a EnvoyConnectedTsKey, checking every constant segment.
func UnpackEnvoyConnectedTsKey(b []byte) (EnvoyConnectedTsKey, error) {
	ns, ek, err := unpackEnvoyData("EnvoyConnectedTsKey", b, tagConnectedTs)
	return EnvoyConnectedTsKey{Namespace: ns, EnvoyKey: ek}, err
}

func (EnvoyConnectedTsKey) Encode(v int64) []byte { return encodeI64(v) }
func (EnvoyConnectedTsKey) Decode(b []byte) (int64, error) {
	return decodeI64("EnvoyConnectedTsKey", b)
}

// EnvoyLastPingTsKey is (NAMESPACE, ENVOY, DATA, namespace_id, envoy_key, LAST_PING_TS) → int64
// big-endian: unix ms of the last ping.
type EnvoyLastPingTsKey struct {
	Namespace id.ID
	EnvoyKey  string
}

func (k EnvoyLastPingTsKey) Pack() []byte {
	return envoyDataKey(k.Namespace, k.EnvoyKey, tagLastPingTs)
}

// UnpackEnvoyLastPingTsKey parses a EnvoyLastPingTsKey, checking every constant segment.
func UnpackEnvoyLastPingTsKey(b []byte) (EnvoyLastPingTsKey, error) {
	ns, ek, err := unpackEnvoyData("EnvoyLastPingTsKey", b, tagLastPingTs)
	return EnvoyLastPingTsKey{Namespace: ns, EnvoyKey: ek}, err
}

func (EnvoyLastPingTsKey) Encode(v int64) []byte          { return encodeI64(v) }
func (EnvoyLastPingTsKey) Decode(b []byte) (int64, error) { return decodeI64("EnvoyLastPingTsKey", b) }

// EnvoyPoolNameKey is (NAMESPACE, ENVOY, DATA, namespace_id, envoy_key, POOL_NAME) → string, raw
// UTF-8: the pool (runner name) it serves.
type EnvoyPoolNameKey struct {
	Namespace id.ID
	EnvoyKey  string
}

func (k EnvoyPoolNameKey) Pack() []byte { return envoyDataKey(k.Namespace, k.EnvoyKey, tagPoolName) }

// UnpackEnvoyPoolNameKey parses a EnvoyPoolNameKey, checking every constant segment.
func UnpackEnvoyPoolNameKey(b []byte) (EnvoyPoolNameKey, error) {
	ns, ek, err := unpackEnvoyData("EnvoyPoolNameKey", b, tagPoolName)
	return EnvoyPoolNameKey{Namespace: ns, EnvoyKey: ek}, err
}

func (EnvoyPoolNameKey) Encode(v string) []byte          { return encodeString(v) }
func (EnvoyPoolNameKey) Decode(b []byte) (string, error) { return decodeString("EnvoyPoolNameKey", b) }

// EnvoyVersionKey is (NAMESPACE, ENVOY, DATA, namespace_id, envoy_key, VERSION) → uint32
// big-endian: the envoy version (newer versions get actors first).
type EnvoyVersionKey struct {
	Namespace id.ID
	EnvoyKey  string
}

func (k EnvoyVersionKey) Pack() []byte { return envoyDataKey(k.Namespace, k.EnvoyKey, tagVersion) }

// UnpackEnvoyVersionKey parses a EnvoyVersionKey, checking every constant segment.
func UnpackEnvoyVersionKey(b []byte) (EnvoyVersionKey, error) {
	ns, ek, err := unpackEnvoyData("EnvoyVersionKey", b, tagVersion)
	return EnvoyVersionKey{Namespace: ns, EnvoyKey: ek}, err
}

func (EnvoyVersionKey) Encode(v uint32) []byte          { return encodeU32(v) }
func (EnvoyVersionKey) Decode(b []byte) (uint32, error) { return decodeU32("EnvoyVersionKey", b) }

// EnvoyVirtualNodesKey is (NAMESPACE, ENVOY, DATA, namespace_id, envoy_key, VIRTUAL_NODES) →
// uint8: hash-ring entries used at registration.
type EnvoyVirtualNodesKey struct {
	Namespace id.ID
	EnvoyKey  string
}

func (k EnvoyVirtualNodesKey) Pack() []byte {
	return envoyDataKey(k.Namespace, k.EnvoyKey, tagVirtualNodes)
}

// UnpackEnvoyVirtualNodesKey parses a EnvoyVirtualNodesKey, checking every constant segment.
func UnpackEnvoyVirtualNodesKey(b []byte) (EnvoyVirtualNodesKey, error) {
	ns, ek, err := unpackEnvoyData("EnvoyVirtualNodesKey", b, tagVirtualNodes)
	return EnvoyVirtualNodesKey{Namespace: ns, EnvoyKey: ek}, err
}

func (EnvoyVirtualNodesKey) Encode(v uint8) []byte { return encodeU8(v) }
func (EnvoyVirtualNodesKey) Decode(b []byte) (uint8, error) {
	return decodeU8("EnvoyVirtualNodesKey", b)
}

// EnvoyProtocolVersionKey is (NAMESPACE, ENVOY, DATA, namespace_id, envoy_key, PROTOCOL_VERSION) →
// uint16 big-endian: envoy protocol version.
type EnvoyProtocolVersionKey struct {
	Namespace id.ID
	EnvoyKey  string
}

func (k EnvoyProtocolVersionKey) Pack() []byte {
	return envoyDataKey(k.Namespace, k.EnvoyKey, tagProtocolVersion)
}

// UnpackEnvoyProtocolVersionKey parses a EnvoyProtocolVersionKey, checking every constant segment.
func UnpackEnvoyProtocolVersionKey(b []byte) (EnvoyProtocolVersionKey, error) {
	ns, ek, err := unpackEnvoyData("EnvoyProtocolVersionKey", b, tagProtocolVersion)
	return EnvoyProtocolVersionKey{Namespace: ns, EnvoyKey: ek}, err
}

func (EnvoyProtocolVersionKey) Encode(v uint16) []byte { return encodeU16(v) }
func (EnvoyProtocolVersionKey) Decode(b []byte) (uint16, error) {
	return decodeU16("EnvoyProtocolVersionKey", b)
}

// EnvoyLastRttKey is (NAMESPACE, ENVOY, DATA, namespace_id, envoy_key, LAST_RTT) → uint32
// big-endian: round-trip time of the last ping, ms.
type EnvoyLastRttKey struct {
	Namespace id.ID
	EnvoyKey  string
}

func (k EnvoyLastRttKey) Pack() []byte { return envoyDataKey(k.Namespace, k.EnvoyKey, tagLastRtt) }

// UnpackEnvoyLastRttKey parses a EnvoyLastRttKey, checking every constant segment.
func UnpackEnvoyLastRttKey(b []byte) (EnvoyLastRttKey, error) {
	ns, ek, err := unpackEnvoyData("EnvoyLastRttKey", b, tagLastRtt)
	return EnvoyLastRttKey{Namespace: ns, EnvoyKey: ek}, err
}

func (EnvoyLastRttKey) Encode(v uint32) []byte          { return encodeU32(v) }
func (EnvoyLastRttKey) Decode(b []byte) (uint32, error) { return decodeU32("EnvoyLastRttKey", b) }

// EnvoySlotsKey is (NAMESPACE, ENVOY, DATA, namespace_id, envoy_key, SLOTS) → int64 little-endian,
// changed only by atomic add (see Add): actors allocated to the envoy.
// Rivet adds 0 at connect (so the key exists), +1 when an actor becomes connectable,
// -1 when it is deallocated.
type EnvoySlotsKey struct {
	Namespace id.ID
	EnvoyKey  string
}

func (k EnvoySlotsKey) Pack() []byte { return envoyDataKey(k.Namespace, k.EnvoyKey, tagSlots) }

// UnpackEnvoySlotsKey parses a EnvoySlotsKey, checking every constant segment.
func UnpackEnvoySlotsKey(b []byte) (EnvoySlotsKey, error) {
	ns, ek, err := unpackEnvoyData("EnvoySlotsKey", b, tagSlots)
	return EnvoySlotsKey{Namespace: ns, EnvoyKey: ek}, err
}

func (EnvoySlotsKey) Encode(v int64) []byte          { return encodeCounter(v) }
func (EnvoySlotsKey) Decode(b []byte) (int64, error) { return decodeCounter("EnvoySlotsKey", b) }
func (EnvoySlotsKey) isCounter()                     {}

// EnvoyConnIDKey is (NAMESPACE, ENVOY, DATA, namespace_id, envoy_key, CONN_ID) → id.ID, 19 raw
// bytes: current connection id.
// berth's addition (Rivet has no such key): the id of the envoy's current socket,
// replaced at each registration (a new connection id replaces the old). Ops that act for
// a socket compare it first and refuse a stale socket, so an evicted connection can
// never overwrite a newer one's state.
type EnvoyConnIDKey struct {
	Namespace id.ID
	EnvoyKey  string
}

func (k EnvoyConnIDKey) Pack() []byte { return envoyDataKey(k.Namespace, k.EnvoyKey, tagConnID) }

// UnpackEnvoyConnIDKey parses a EnvoyConnIDKey, checking every constant segment.
func UnpackEnvoyConnIDKey(b []byte) (EnvoyConnIDKey, error) {
	ns, ek, err := unpackEnvoyData("EnvoyConnIDKey", b, tagConnID)
	return EnvoyConnIDKey{Namespace: ns, EnvoyKey: ek}, err
}

func (EnvoyConnIDKey) Encode(v id.ID) []byte          { return encodeID(v) }
func (EnvoyConnIDKey) Decode(b []byte) (id.ID, error) { return decodeID("EnvoyConnIDKey", b) }

// EnvoyMetadataKey is (NAMESPACE, ENVOY, DATA, namespace_id, envoy_key,
// METADATA) + (chunk) → the envoy's metadata, JSON text, stored as versioned
// BARE struct { metadata: str } (version 1) split into chunks of ChunkSize
// bytes. Read and write it with GetChunked and SetChunked.
type EnvoyMetadataKey struct {
	Namespace id.ID
	EnvoyKey  string
}

// Pack returns the base key; chunk i is stored at ChunkKey(i).
func (k EnvoyMetadataKey) Pack() []byte          { return envoyDataKey(k.Namespace, k.EnvoyKey, tagMetadata) }
func (k EnvoyMetadataKey) ChunkKey(i int) []byte { return chunkKey(k.Pack(), i) }

// UnpackEnvoyMetadataChunkKey parses the key of one metadata chunk.
func UnpackEnvoyMetadataChunkKey(b []byte) (k EnvoyMetadataKey, chunk int, err error) {
	t, err := unpack("EnvoyMetadataKey chunk", pegboard, b, tagNamespace, tagEnvoy, tagData, anyID, anyString, tagMetadata, anyInt)
	if err != nil {
		return EnvoyMetadataKey{}, 0, err
	}
	if chunk, err = chunkIndex("EnvoyMetadataKey chunk", b, t[6].(int64)); err != nil {
		return EnvoyMetadataKey{}, 0, err
	}
	return EnvoyMetadataKey{Namespace: t[3].(id.ID), EnvoyKey: t[4].(string)}, chunk, nil
}

func (EnvoyMetadataKey) Encode(json string) []byte { return encodeMetadata(json) }
func (EnvoyMetadataKey) Decode(b []byte) (string, error) {
	return decodeMetadata("EnvoyMetadataKey", b)
}
