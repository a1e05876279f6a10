package keys

import (
	"bytes"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// Reading a runner's data keys with one range read, for lists.
//
// A runner's data keys (RUNNER, DATA, runner_id, tag[, chunk]) sort by tag: CREATE_TS (15)
// to LAST_PING_TS (24), then the actor command subspace (RUNNER, DATA, runner_id, ACTOR, …)
// (32; Rivet's ActorLastCommandIdxKey and ActorCommandKey, which berth does not write yet),
// then METADATA (44) and its chunks through berth's CONN_ID (1000). RunnerFieldsRange covers
// all of them; ParseRunnerDataKey says which field a row of it holds without unpacking the
// whole tuple, so that a list decodes a page of runners without packing or unpacking a key
// per field.

// RunnerField is the tag of a runner data key: which field a row of RunnerFieldsRange holds.
type RunnerField int

// The runner data fields, by tag. RunnerFieldActor is the actor command subspace: keys
// below it are not fields.
const (
	RunnerFieldCreateTs        RunnerField = tagCreateTs
	RunnerFieldName            RunnerField = tagName
	RunnerFieldWorkflowID      RunnerField = tagWorkflowID
	RunnerFieldLastPingTs      RunnerField = tagLastPingTs
	RunnerFieldActor           RunnerField = tagActor
	RunnerFieldMetadata        RunnerField = tagMetadata
	RunnerFieldRemainingSlots  RunnerField = tagRemainingSlots
	RunnerFieldTotalSlots      RunnerField = tagTotalSlots
	RunnerFieldNamespaceID     RunnerField = tagNamespaceID
	RunnerFieldVersion         RunnerField = tagVersion
	RunnerFieldStopTs          RunnerField = tagStopTs
	RunnerFieldDrainTs         RunnerField = tagDrainTs
	RunnerFieldLastRtt         RunnerField = tagLastRtt
	RunnerFieldConnectedTs     RunnerField = tagConnectedTs
	RunnerFieldExpiredTs       RunnerField = tagExpiredTs
	RunnerFieldKey             RunnerField = tagKey
	RunnerFieldProtocolVersion RunnerField = tagProtocolVersion
	RunnerFieldConnID          RunnerField = tagConnID
)

// What ParseRunnerDataKey reports in place of a chunk number for a key that is not a chunk.
const (
	// NotChunk is a field's own key (RUNNER, DATA, runner_id, tag).
	NotChunk = -1
	// Nested is any other key below a field: (RUNNER, DATA, runner_id, tag, …) with more
	// than one chunk number after the tag, such as every key of the actor command subspace.
	Nested = -2
)

// RunnerFieldsRange is [begin, end): runner rid's data keys from CREATE_TS through CONN_ID,
// which holds every field and metadata chunk of the runner, and between them the actor
// command subspace. prefix is the packed (RUNNER, DATA, runner_id) that begins each of them,
// for ParseRunnerDataKey. The three share one new array and must not be appended to.
func RunnerFieldsRange(rid id.ID) (prefix, begin, end []byte) {
	n := len(pegboardPrefix) + 2 + 2 + 1 + id.Size // + RUNNER, DATA, runner_id
	buf := make([]byte, 0, 3*n+2+4)                // + CREATE_TS; + CONN_ID and 0x00
	buf = tuple.Tuple{tagRunner, tagData}.AppendPack(append(buf, pegboardPrefix...))
	buf = append(append(buf, id.TupleCode), rid[:]...) // rid as tuple.Tuple{rid} packs it, without boxing it
	n = len(buf)
	prefix = buf[:n:n]
	buf = tuple.Tuple{tagCreateTs}.AppendPack(append(buf, prefix...))
	begin = buf[n:len(buf):len(buf)]
	m := len(buf)
	buf = append(tuple.Tuple{tagConnID}.AppendPack(append(buf, prefix...)), 0x00) // udb.KeyAfter
	end = buf[m:len(buf):len(buf)]
	return prefix, begin, end
}

// pegboardPrefix is the packed pegboard subspace.
var pegboardPrefix = pegboard.Bytes()

// RunnerFieldsAfterActors is where the fields after the actor command subspace begin
// (METADATA's key): a read of RunnerFieldsRange cut short in or before that subspace may
// resume here. A new slice.
func RunnerFieldsAfterActors(rid id.ID) []byte { return runnerDataKey(rid, tagMetadata) }

// ParseRunnerDataKey says what key, which must begin with prefix (from RunnerFieldsRange of
// its runner), is: a field's own key (field, NotChunk), a chunk of a field (field, chunk
// number; only chunked fields such as METADATA have them), or another key below a field
// (field, Nested), such as a key of the actor command subspace (RunnerFieldActor, Nested).
// ok is false when key does not begin with prefix and a field tag. Fields it does not list
// (tags added later) parse too, as their tag. Chunk numbers past the largest a value can
// have are Nested.
func ParseRunnerDataKey(prefix, key []byte) (field RunnerField, chunk int, ok bool) {
	if !bytes.HasPrefix(key, prefix) {
		return 0, NotChunk, false
	}
	tag, rest, ok := parseUint(key[len(prefix):])
	if !ok || tag > 1<<16 {
		return 0, NotChunk, false
	}
	field = RunnerField(tag)
	if len(rest) == 0 {
		return field, NotChunk, true
	}
	n, rest, ok := parseUint(rest)
	if !ok || len(rest) != 0 || n > maxChunks {
		return field, Nested, true
	}
	return field, int(n), true
}

// parseUint reads one tuple-packed integer of 0 to 2^64-1 at the start of b (the canonical
// encodings, 0x14 to 0x1c) and returns it and the bytes after it. ok is false for anything
// else.
func parseUint(b []byte) (v uint64, rest []byte, ok bool) {
	if len(b) == 0 || b[0] < 0x14 || b[0] > 0x1c {
		return 0, b, false
	}
	n := int(b[0] - 0x14)
	if len(b) < 1+n {
		return 0, b, false
	}
	for _, c := range b[1 : 1+n] {
		v = v<<8 | uint64(c)
	}
	return v, b[1+n:], true
}
