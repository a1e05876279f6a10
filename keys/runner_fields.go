package keys

import (
	"bytes"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
	"github.com/berthhq/berth/pkg/udb"
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

// NotChunk is the chunk ParseRunnerDataKey reports for a key that is not a chunk key.
const NotChunk = -1

// RunnerDataPrefix is the packed (RUNNER, DATA, runner_id) that begins every data key of
// runner rid, for ParseRunnerDataKey. A new slice.
func RunnerDataPrefix(rid id.ID) []byte {
	return pegboard.Pack(tuple.Tuple{tagRunner, tagData, rid})
}

// RunnerFieldsRange is [begin, end): runner rid's data keys from CREATE_TS through CONN_ID,
// which holds every field and metadata chunk of the runner, and between them the actor
// command subspace. RunnerFieldsAfterActors is the part after that subspace. New slices.
func RunnerFieldsRange(rid id.ID) (begin, end []byte) {
	return runnerDataKey(rid, tagCreateTs), udb.KeyAfter(runnerDataKey(rid, tagConnID))
}

// RunnerFieldsAfterActors is where the fields after the actor command subspace begin
// (METADATA's key): a read of RunnerFieldsRange cut short in or before that subspace may
// resume here. A new slice.
func RunnerFieldsAfterActors(rid id.ID) []byte { return runnerDataKey(rid, tagMetadata) }

// ParseRunnerDataKey says what key, which must begin with prefix (RunnerDataPrefix of its
// runner), is: a field's own key (field, NotChunk), a chunk of a chunked field (field,
// chunk number), or any key of the actor command subspace (RunnerFieldActor, NotChunk).
// Anything else is an error wrapping ErrBadKey. Fields it does not list (tags added later)
// parse too, as their tag.
func ParseRunnerDataKey(prefix, key []byte) (field RunnerField, chunk int, err error) {
	if !bytes.HasPrefix(key, prefix) {
		return 0, NotChunk, badKey("runner data key", key, "not under %s", shown(prefix))
	}
	rest := key[len(prefix):]
	tag, rest, ok := parseUint(rest)
	if !ok || tag > 1<<16 {
		return 0, NotChunk, badKey("runner data key", key, "no field tag after the runner id")
	}
	field = RunnerField(tag)
	switch {
	case len(rest) == 0:
		return field, NotChunk, nil
	case field == RunnerFieldActor:
		return field, NotChunk, nil
	}
	n, rest, ok := parseUint(rest)
	if !ok || len(rest) != 0 {
		return 0, NotChunk, badKey("runner data key", key, "field %d is followed by more than a chunk number", tag)
	}
	c, err := chunkIndex("runner data key", key, int64(min(n, maxChunks+1)))
	return field, c, err
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
