package keys

import "github.com/berthhq/berth/pkg/id"

// Schema versions of the struct values, embedded in each stored value. They
// are Rivet's (engine/sdks/schemas/data/*.bare); add a version, never change
// one.
const (
	runnerByKeyVersion       = 1 // pegboard.namespace.runner_by_key.v1
	actorByKeyVersion        = 1 // pegboard.namespace.actor_by_key.v1
	actorNameVersion         = 1 // pegboard.namespace.actor_name.v1
	runnerAllocIdxVersionV1  = 1 // pegboard.namespace.runner_alloc_idx.v1 (read only)
	runnerAllocIdxVersion    = 2 // pegboard.namespace.runner_alloc_idx.v2
	metadataVersion          = 1 // pegboard.runner.metadata.v1 (runners and envoys)
	defaultAllocIdxProtoVers = 3 // protocol version given to v1 alloc-index values (Rivet's PROTOCOL_MK1_VERSION)
)

// RunnerByKeyValue is the value of [RunnerByKeyKey]:
// struct { runner_id: data; workflow_id: data } (version 1).
// berth has no workflow engine: WorkflowID may be zero or the runner's own id.
type RunnerByKeyValue struct {
	RunnerID   id.ID
	WorkflowID id.ID
}

func encodeRunnerByKey(v RunnerByKeyValue) []byte {
	b := appendVersion(make([]byte, 0, 2+2*(1+id.Size)), runnerByKeyVersion)
	b = appendBareID(b, v.RunnerID)
	return appendBareID(b, v.WorkflowID)
}

func decodeRunnerByKey(name string, b []byte) (RunnerByKeyValue, error) {
	r := bareReader{name: name, b: b}
	if v := r.version(); r.err == nil && v != runnerByKeyVersion {
		r.fail("unknown version %d", v)
	}
	out := RunnerByKeyValue{RunnerID: r.id("runner_id"), WorkflowID: r.id("workflow_id")}
	if err := r.done(); err != nil {
		return RunnerByKeyValue{}, err
	}
	return out, nil
}

// ActorByKeyValue is the value of [ActorByKeyKey]:
// struct { workflow_id: data; is_destroyed: bool } (version 1).
// berth has no workflow engine: WorkflowID may be zero or the actor's own id.
type ActorByKeyValue struct {
	WorkflowID  id.ID
	IsDestroyed bool
}

func encodeActorByKey(v ActorByKeyValue) []byte {
	b := appendVersion(make([]byte, 0, 2+1+id.Size+1), actorByKeyVersion)
	b = appendBareID(b, v.WorkflowID)
	return appendBool(b, v.IsDestroyed)
}

func decodeActorByKey(name string, b []byte) (ActorByKeyValue, error) {
	r := bareReader{name: name, b: b}
	if v := r.version(); r.err == nil && v != actorByKeyVersion {
		r.fail("unknown version %d", v)
	}
	out := ActorByKeyValue{WorkflowID: r.id("workflow_id"), IsDestroyed: r.bool("is_destroyed")}
	if err := r.done(); err != nil {
		return ActorByKeyValue{}, err
	}
	return out, nil
}

// RunnerAllocIdxValue is the value of [RunnerAllocIdxKey]: struct {
// workflow_id: data; remaining_slots: u32; total_slots: u32;
// protocol_version: u16 } (version 2). Version 1 values, which lack
// protocol_version, decode with ProtocolVersion 3, as in Rivet.
// berth has no workflow engine: WorkflowID may be zero or the runner's own id.
// RemainingSlots is the count when the entry was last written: the entry moves
// only when the key's RemainingMillislots changes, so the exact count is the
// runner's RunnerRemainingSlotsKey.
type RunnerAllocIdxValue struct {
	WorkflowID      id.ID
	RemainingSlots  uint32
	TotalSlots      uint32
	ProtocolVersion uint16
}

func encodeRunnerAllocIdx(v RunnerAllocIdxValue) []byte {
	b := appendVersion(make([]byte, 0, 2+1+id.Size+10), runnerAllocIdxVersion)
	b = appendBareID(b, v.WorkflowID)
	b = appendU32LE(b, v.RemainingSlots)
	b = appendU32LE(b, v.TotalSlots)
	return appendU16LE(b, v.ProtocolVersion)
}

func decodeRunnerAllocIdx(name string, b []byte) (RunnerAllocIdxValue, error) {
	r := bareReader{name: name, b: b}
	ver := r.version()
	if r.err == nil && ver != runnerAllocIdxVersion && ver != runnerAllocIdxVersionV1 {
		r.fail("unknown version %d", ver)
	}
	out := RunnerAllocIdxValue{
		WorkflowID:     r.id("workflow_id"),
		RemainingSlots: r.u32("remaining_slots"),
		TotalSlots:     r.u32("total_slots"),
	}
	if ver == runnerAllocIdxVersionV1 {
		out.ProtocolVersion = defaultAllocIdxProtoVers
	} else {
		out.ProtocolVersion = r.u16("protocol_version")
	}
	if err := r.done(); err != nil {
		return RunnerAllocIdxValue{}, err
	}
	return out, nil
}

// ActorNameValue is the value of [ActorNameKey]: struct { metadata: str }
// (version 1), the metadata being a JSON object as text. It is stored as
// given; this layer does not parse it.
type ActorNameValue struct {
	Metadata string
}

func encodeActorName(v ActorNameValue) []byte {
	return appendStr(appendVersion(make([]byte, 0, 2+binaryUvarintLen(len(v.Metadata))+len(v.Metadata)), actorNameVersion), v.Metadata)
}

func decodeActorName(name string, b []byte) (ActorNameValue, error) {
	r := bareReader{name: name, b: b}
	if v := r.version(); r.err == nil && v != actorNameVersion {
		r.fail("unknown version %d", v)
	}
	out := ActorNameValue{Metadata: r.str("metadata")}
	if err := r.done(); err != nil {
		return ActorNameValue{}, err
	}
	return out, nil
}

// encodeMetadata is the whole value of a runner's or envoy's chunked
// metadata, before it is split: struct { metadata: str } (version 1), the
// metadata being JSON text.
func encodeMetadata(json string) []byte {
	return appendStr(appendVersion(make([]byte, 0, 2+binaryUvarintLen(len(json))+len(json)), metadataVersion), json)
}

func decodeMetadata(name string, b []byte) (string, error) {
	r := bareReader{name: name, b: b}
	if v := r.version(); r.err == nil && v != metadataVersion {
		r.fail("unknown version %d", v)
	}
	s := r.str("metadata")
	if err := r.done(); err != nil {
		return "", err
	}
	return s, nil
}
