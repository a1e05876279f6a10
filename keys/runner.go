package keys

import (
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// Runner data keys (docs/design.md, "Key space"): one value
// per field under (RUNNER, DATA, runner_id), in the pegboard subspace.

func runnerDataKey(rid id.ID, tag int) []byte {
	return pegboard.Pack(tuple.Tuple{tagRunner, tagData, rid, tag})
}

func unpackRunnerData(name string, b []byte, tag int) (id.ID, error) {
	t, err := unpack(name, pegboard, b, tagRunner, tagData, anyID, tag)
	if err != nil {
		return id.ID{}, err
	}
	return t[2].(id.ID), nil
}

// RunnerCreateTsKey is (RUNNER, DATA, runner_id, CREATE_TS) → int64 big-endian: unix ms when the
// runner was created.
type RunnerCreateTsKey struct{ RunnerID id.ID }

func (k RunnerCreateTsKey) Pack() []byte { return runnerDataKey(k.RunnerID, tagCreateTs) }

// UnpackRunnerCreateTsKey parses a RunnerCreateTsKey, checking every constant segment.
func UnpackRunnerCreateTsKey(b []byte) (RunnerCreateTsKey, error) {
	rid, err := unpackRunnerData("RunnerCreateTsKey", b, tagCreateTs)
	return RunnerCreateTsKey{RunnerID: rid}, err
}

func (RunnerCreateTsKey) Encode(v int64) []byte          { return encodeI64(v) }
func (RunnerCreateTsKey) Decode(b []byte) (int64, error) { return decodeI64("RunnerCreateTsKey", b) }

// RunnerLastPingTsKey is (RUNNER, DATA, runner_id, LAST_PING_TS) → int64 big-endian: unix ms of
// the last ping.
type RunnerLastPingTsKey struct{ RunnerID id.ID }

func (k RunnerLastPingTsKey) Pack() []byte { return runnerDataKey(k.RunnerID, tagLastPingTs) }

// UnpackRunnerLastPingTsKey parses a RunnerLastPingTsKey, checking every constant segment.
func UnpackRunnerLastPingTsKey(b []byte) (RunnerLastPingTsKey, error) {
	rid, err := unpackRunnerData("RunnerLastPingTsKey", b, tagLastPingTs)
	return RunnerLastPingTsKey{RunnerID: rid}, err
}

func (RunnerLastPingTsKey) Encode(v int64) []byte { return encodeI64(v) }
func (RunnerLastPingTsKey) Decode(b []byte) (int64, error) {
	return decodeI64("RunnerLastPingTsKey", b)
}

// RunnerStopTsKey is (RUNNER, DATA, runner_id, STOP_TS) → int64 big-endian: unix ms when it
// stopped; present ⇔ stopped.
type RunnerStopTsKey struct{ RunnerID id.ID }

func (k RunnerStopTsKey) Pack() []byte { return runnerDataKey(k.RunnerID, tagStopTs) }

// UnpackRunnerStopTsKey parses a RunnerStopTsKey, checking every constant segment.
func UnpackRunnerStopTsKey(b []byte) (RunnerStopTsKey, error) {
	rid, err := unpackRunnerData("RunnerStopTsKey", b, tagStopTs)
	return RunnerStopTsKey{RunnerID: rid}, err
}

func (RunnerStopTsKey) Encode(v int64) []byte          { return encodeI64(v) }
func (RunnerStopTsKey) Decode(b []byte) (int64, error) { return decodeI64("RunnerStopTsKey", b) }

// RunnerDrainTsKey is (RUNNER, DATA, runner_id, DRAIN_TS) → int64 big-endian: unix ms when
// draining began; present ⇔ draining.
type RunnerDrainTsKey struct{ RunnerID id.ID }

func (k RunnerDrainTsKey) Pack() []byte { return runnerDataKey(k.RunnerID, tagDrainTs) }

// UnpackRunnerDrainTsKey parses a RunnerDrainTsKey, checking every constant segment.
func UnpackRunnerDrainTsKey(b []byte) (RunnerDrainTsKey, error) {
	rid, err := unpackRunnerData("RunnerDrainTsKey", b, tagDrainTs)
	return RunnerDrainTsKey{RunnerID: rid}, err
}

func (RunnerDrainTsKey) Encode(v int64) []byte          { return encodeI64(v) }
func (RunnerDrainTsKey) Decode(b []byte) (int64, error) { return decodeI64("RunnerDrainTsKey", b) }

// RunnerConnectedTsKey is (RUNNER, DATA, runner_id, CONNECTED_TS) → int64 big-endian: unix ms of
// the current connection.
type RunnerConnectedTsKey struct{ RunnerID id.ID }

func (k RunnerConnectedTsKey) Pack() []byte { return runnerDataKey(k.RunnerID, tagConnectedTs) }

// UnpackRunnerConnectedTsKey parses a RunnerConnectedTsKey, checking every constant segment.
func UnpackRunnerConnectedTsKey(b []byte) (RunnerConnectedTsKey, error) {
	rid, err := unpackRunnerData("RunnerConnectedTsKey", b, tagConnectedTs)
	return RunnerConnectedTsKey{RunnerID: rid}, err
}

func (RunnerConnectedTsKey) Encode(v int64) []byte { return encodeI64(v) }
func (RunnerConnectedTsKey) Decode(b []byte) (int64, error) {
	return decodeI64("RunnerConnectedTsKey", b)
}

// RunnerExpiredTsKey is (RUNNER, DATA, runner_id, EXPIRED_TS) → int64 big-endian: unix ms when it
// was declared lost; present ⇔ expired.
type RunnerExpiredTsKey struct{ RunnerID id.ID }

func (k RunnerExpiredTsKey) Pack() []byte { return runnerDataKey(k.RunnerID, tagExpiredTs) }

// UnpackRunnerExpiredTsKey parses a RunnerExpiredTsKey, checking every constant segment.
func UnpackRunnerExpiredTsKey(b []byte) (RunnerExpiredTsKey, error) {
	rid, err := unpackRunnerData("RunnerExpiredTsKey", b, tagExpiredTs)
	return RunnerExpiredTsKey{RunnerID: rid}, err
}

func (RunnerExpiredTsKey) Encode(v int64) []byte          { return encodeI64(v) }
func (RunnerExpiredTsKey) Decode(b []byte) (int64, error) { return decodeI64("RunnerExpiredTsKey", b) }

// RunnerRemainingSlotsKey is (RUNNER, DATA, runner_id, REMAINING_SLOTS) → uint32 big-endian: free
// actor slots.
type RunnerRemainingSlotsKey struct{ RunnerID id.ID }

func (k RunnerRemainingSlotsKey) Pack() []byte { return runnerDataKey(k.RunnerID, tagRemainingSlots) }

// UnpackRunnerRemainingSlotsKey parses a RunnerRemainingSlotsKey, checking every constant segment.
func UnpackRunnerRemainingSlotsKey(b []byte) (RunnerRemainingSlotsKey, error) {
	rid, err := unpackRunnerData("RunnerRemainingSlotsKey", b, tagRemainingSlots)
	return RunnerRemainingSlotsKey{RunnerID: rid}, err
}

func (RunnerRemainingSlotsKey) Encode(v uint32) []byte { return encodeU32(v) }
func (RunnerRemainingSlotsKey) Decode(b []byte) (uint32, error) {
	return decodeU32("RunnerRemainingSlotsKey", b)
}

// RunnerTotalSlotsKey is (RUNNER, DATA, runner_id, TOTAL_SLOTS) → uint32 big-endian: actor slots.
type RunnerTotalSlotsKey struct{ RunnerID id.ID }

func (k RunnerTotalSlotsKey) Pack() []byte { return runnerDataKey(k.RunnerID, tagTotalSlots) }

// UnpackRunnerTotalSlotsKey parses a RunnerTotalSlotsKey, checking every constant segment.
func UnpackRunnerTotalSlotsKey(b []byte) (RunnerTotalSlotsKey, error) {
	rid, err := unpackRunnerData("RunnerTotalSlotsKey", b, tagTotalSlots)
	return RunnerTotalSlotsKey{RunnerID: rid}, err
}

func (RunnerTotalSlotsKey) Encode(v uint32) []byte { return encodeU32(v) }
func (RunnerTotalSlotsKey) Decode(b []byte) (uint32, error) {
	return decodeU32("RunnerTotalSlotsKey", b)
}

// RunnerVersionKey is (RUNNER, DATA, runner_id, VERSION) → uint32 big-endian: the runner version
// (newer versions get actors first).
type RunnerVersionKey struct{ RunnerID id.ID }

func (k RunnerVersionKey) Pack() []byte { return runnerDataKey(k.RunnerID, tagVersion) }

// UnpackRunnerVersionKey parses a RunnerVersionKey, checking every constant segment.
func UnpackRunnerVersionKey(b []byte) (RunnerVersionKey, error) {
	rid, err := unpackRunnerData("RunnerVersionKey", b, tagVersion)
	return RunnerVersionKey{RunnerID: rid}, err
}

func (RunnerVersionKey) Encode(v uint32) []byte          { return encodeU32(v) }
func (RunnerVersionKey) Decode(b []byte) (uint32, error) { return decodeU32("RunnerVersionKey", b) }

// RunnerLastRttKey is (RUNNER, DATA, runner_id, LAST_RTT) → uint32 big-endian: round-trip time of
// the last ping, ms.
type RunnerLastRttKey struct{ RunnerID id.ID }

func (k RunnerLastRttKey) Pack() []byte { return runnerDataKey(k.RunnerID, tagLastRtt) }

// UnpackRunnerLastRttKey parses a RunnerLastRttKey, checking every constant segment.
func UnpackRunnerLastRttKey(b []byte) (RunnerLastRttKey, error) {
	rid, err := unpackRunnerData("RunnerLastRttKey", b, tagLastRtt)
	return RunnerLastRttKey{RunnerID: rid}, err
}

func (RunnerLastRttKey) Encode(v uint32) []byte          { return encodeU32(v) }
func (RunnerLastRttKey) Decode(b []byte) (uint32, error) { return decodeU32("RunnerLastRttKey", b) }

// RunnerProtocolVersionKey is (RUNNER, DATA, runner_id, PROTOCOL_VERSION) → uint16 big-endian:
// runner protocol version.
type RunnerProtocolVersionKey struct{ RunnerID id.ID }

func (k RunnerProtocolVersionKey) Pack() []byte { return runnerDataKey(k.RunnerID, tagProtocolVersion) }

// UnpackRunnerProtocolVersionKey parses a RunnerProtocolVersionKey, checking every constant
// segment.
func UnpackRunnerProtocolVersionKey(b []byte) (RunnerProtocolVersionKey, error) {
	rid, err := unpackRunnerData("RunnerProtocolVersionKey", b, tagProtocolVersion)
	return RunnerProtocolVersionKey{RunnerID: rid}, err
}

func (RunnerProtocolVersionKey) Encode(v uint16) []byte { return encodeU16(v) }
func (RunnerProtocolVersionKey) Decode(b []byte) (uint16, error) {
	return decodeU16("RunnerProtocolVersionKey", b)
}

// RunnerWorkflowIDKey is (RUNNER, DATA, runner_id, WORKFLOW_ID) → id.ID, 19 raw bytes.
// berth has no workflow engine: callers store the zero ID or the runner's own id.
type RunnerWorkflowIDKey struct{ RunnerID id.ID }

func (k RunnerWorkflowIDKey) Pack() []byte { return runnerDataKey(k.RunnerID, tagWorkflowID) }

// UnpackRunnerWorkflowIDKey parses a RunnerWorkflowIDKey, checking every constant segment.
func UnpackRunnerWorkflowIDKey(b []byte) (RunnerWorkflowIDKey, error) {
	rid, err := unpackRunnerData("RunnerWorkflowIDKey", b, tagWorkflowID)
	return RunnerWorkflowIDKey{RunnerID: rid}, err
}

func (RunnerWorkflowIDKey) Encode(v id.ID) []byte          { return encodeID(v) }
func (RunnerWorkflowIDKey) Decode(b []byte) (id.ID, error) { return decodeID("RunnerWorkflowIDKey", b) }

// RunnerNamespaceIDKey is (RUNNER, DATA, runner_id, NAMESPACE_ID) → id.ID, 19 raw bytes: the
// namespace.
type RunnerNamespaceIDKey struct{ RunnerID id.ID }

func (k RunnerNamespaceIDKey) Pack() []byte { return runnerDataKey(k.RunnerID, tagNamespaceID) }

// UnpackRunnerNamespaceIDKey parses a RunnerNamespaceIDKey, checking every constant segment.
func UnpackRunnerNamespaceIDKey(b []byte) (RunnerNamespaceIDKey, error) {
	rid, err := unpackRunnerData("RunnerNamespaceIDKey", b, tagNamespaceID)
	return RunnerNamespaceIDKey{RunnerID: rid}, err
}

func (RunnerNamespaceIDKey) Encode(v id.ID) []byte { return encodeID(v) }
func (RunnerNamespaceIDKey) Decode(b []byte) (id.ID, error) {
	return decodeID("RunnerNamespaceIDKey", b)
}

// RunnerDataNameKey is (RUNNER, DATA, runner_id, NAME) → string, raw UTF-8: the runner name (pool).
// (Rivet's runner::NameKey; RunnerNameKey is the namespace's index of names.)
type RunnerDataNameKey struct{ RunnerID id.ID }

func (k RunnerDataNameKey) Pack() []byte { return runnerDataKey(k.RunnerID, tagName) }

// UnpackRunnerDataNameKey parses a RunnerDataNameKey, checking every constant segment.
func UnpackRunnerDataNameKey(b []byte) (RunnerDataNameKey, error) {
	rid, err := unpackRunnerData("RunnerDataNameKey", b, tagName)
	return RunnerDataNameKey{RunnerID: rid}, err
}

func (RunnerDataNameKey) Encode(v string) []byte { return encodeString(v) }
func (RunnerDataNameKey) Decode(b []byte) (string, error) {
	return decodeString("RunnerDataNameKey", b)
}

// RunnerKeyKey is (RUNNER, DATA, runner_id, KEY) → string, raw UTF-8: the runner key.
type RunnerKeyKey struct{ RunnerID id.ID }

func (k RunnerKeyKey) Pack() []byte { return runnerDataKey(k.RunnerID, tagKey) }

// UnpackRunnerKeyKey parses a RunnerKeyKey, checking every constant segment.
func UnpackRunnerKeyKey(b []byte) (RunnerKeyKey, error) {
	rid, err := unpackRunnerData("RunnerKeyKey", b, tagKey)
	return RunnerKeyKey{RunnerID: rid}, err
}

func (RunnerKeyKey) Encode(v string) []byte          { return encodeString(v) }
func (RunnerKeyKey) Decode(b []byte) (string, error) { return decodeString("RunnerKeyKey", b) }

// RunnerConnIDKey is (RUNNER, DATA, runner_id, CONN_ID) → id.ID, 19 raw bytes: current connection
// id.
// berth's addition (Rivet has no such key): the id of the runner's current socket,
// replaced at each registration. Ops that act for a socket compare it first and refuse a
// stale socket, so an evicted connection can never overwrite a newer one's state.
type RunnerConnIDKey struct{ RunnerID id.ID }

func (k RunnerConnIDKey) Pack() []byte { return runnerDataKey(k.RunnerID, tagConnID) }

// UnpackRunnerConnIDKey parses a RunnerConnIDKey, checking every constant segment.
func UnpackRunnerConnIDKey(b []byte) (RunnerConnIDKey, error) {
	rid, err := unpackRunnerData("RunnerConnIDKey", b, tagConnID)
	return RunnerConnIDKey{RunnerID: rid}, err
}

func (RunnerConnIDKey) Encode(v id.ID) []byte          { return encodeID(v) }
func (RunnerConnIDKey) Decode(b []byte) (id.ID, error) { return decodeID("RunnerConnIDKey", b) }

// RunnerMetadataKey is (RUNNER, DATA, runner_id, METADATA) + (chunk) → the
// runner's metadata, JSON text, stored as versioned BARE struct
// { metadata: str } (version 1) split into chunks of ChunkSize bytes. Read and
// write it with GetChunked and SetChunked.
type RunnerMetadataKey struct{ RunnerID id.ID }

// Pack returns the base key; chunk i is stored at ChunkKey(i).
func (k RunnerMetadataKey) Pack() []byte          { return runnerDataKey(k.RunnerID, tagMetadata) }
func (k RunnerMetadataKey) ChunkKey(i int) []byte { return chunkKey(k.Pack(), i) }

// UnpackRunnerMetadataChunkKey parses the key of one metadata chunk.
func UnpackRunnerMetadataChunkKey(b []byte) (k RunnerMetadataKey, chunk int, err error) {
	t, err := unpack("RunnerMetadataKey chunk", pegboard, b, tagRunner, tagData, anyID, tagMetadata, anyInt)
	if err != nil {
		return RunnerMetadataKey{}, 0, err
	}
	if chunk, err = chunkIndex("RunnerMetadataKey chunk", b, t[4].(int64)); err != nil {
		return RunnerMetadataKey{}, 0, err
	}
	return RunnerMetadataKey{RunnerID: t[2].(id.ID)}, chunk, nil
}

func (RunnerMetadataKey) Encode(json string) []byte { return encodeMetadata(json) }
func (RunnerMetadataKey) Decode(b []byte) (string, error) {
	return decodeMetadata("RunnerMetadataKey", b)
}
