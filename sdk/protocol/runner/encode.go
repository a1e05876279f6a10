package runner

import (
	"fmt"
	"unicode/utf8"

	"github.com/berthhq/berth/sdk/bare"
)

// EncodeError describes a value the schema cannot carry: a nil union member, an unknown enum
// value, a duplicate map key, a string that is not UTF-8, or a member the version lacks.
type EncodeError struct{ Msg string }

func (e *EncodeError) Error() string { return "runner protocol: cannot encode: " + e.Msg }

// UnsupportedVersionError reports a protocol version outside MinVersion..LatestVersion.
type UnsupportedVersionError struct{ Version int }

func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("runner protocol: unsupported version %d (want %d to %d)", e.Version, MinVersion, LatestVersion)
}

func checkVersion(v int) error {
	if v < MinVersion || v > LatestVersion {
		return &UnsupportedVersionError{v}
	}
	return nil
}

// encoder writes one message at one protocol version, keeping the first schema error.
type encoder struct {
	w       *bare.Writer
	version int
	err     error
}

func (e *encoder) fail(format string, args ...any) {
	if e.err == nil {
		e.err = &EncodeError{fmt.Sprintf(format, args...)}
	}
}

func (e *encoder) finish() error {
	if e.err != nil {
		return e.err
	}
	return e.w.Err()
}

// EncodeToServer encodes one ToServer frame at the given protocol version.
func EncodeToServer(m ToServer, version int) ([]byte, error) {
	var w bare.Writer
	if err := AppendToServer(&w, m, version); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

// EncodeToClient encodes one ToClient frame at the given protocol version.
func EncodeToClient(m ToClient, version int) ([]byte, error) {
	var w bare.Writer
	if err := AppendToClient(&w, m, version); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

// AppendToServer writes m to w at the given protocol version. On error w may hold a partial
// message; Reset it before reuse.
func AppendToServer(w *bare.Writer, m ToServer, version int) error {
	if err := checkVersion(version); err != nil {
		return err
	}
	e := &encoder{w: w, version: version}
	if m == nil {
		e.fail("nil ToServer")
	} else {
		w.UnionTag(m.toServerTag())
		m.encode(e)
	}
	return e.finish()
}

// AppendToClient writes m to w at the given protocol version. On error w may hold a partial
// message; Reset it before reuse.
func AppendToClient(w *bare.Writer, m ToClient, version int) error {
	if err := checkVersion(version); err != nil {
		return err
	}
	e := &encoder{w: w, version: version}
	if m == nil {
		e.fail("nil ToClient")
	} else {
		w.UnionTag(m.toClientTag())
		m.encode(e)
	}
	return e.finish()
}

// EncodeServerlessInit encodes the serverless SSE init payload: the protocol version as a u16
// little-endian prefix, then the ToServerlessServer union (tag 0, ToServerlessServerInit). The
// caller base64-encodes it for the SSE data line.
func EncodeServerlessInit(m ToServerlessServerInit, version int) ([]byte, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	var w bare.Writer
	e := &encoder{w: &w, version: version}
	w.U16(uint16(version))
	w.UnionTag(0)
	e.str(m.RunnerID)
	w.U16(m.RunnerProtocolVersion)
	if err := e.finish(); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

// Primitive helpers.

func (e *encoder) str(s string) {
	if !utf8.ValidString(s) {
		e.fail("string %q is not valid UTF-8", s)
	}
	e.w.String(s)
}

func (e *encoder) optStr(s *string) {
	e.w.Optional(s != nil)
	if s != nil {
		e.str(*s)
	}
}

func (e *encoder) headers(h []Header) {
	e.w.MapLen(len(h))
	seen := make(map[string]struct{}, len(h))
	for _, kv := range h {
		if _, dup := seen[kv.Name]; dup {
			e.fail("duplicate header %q", kv.Name)
		}
		seen[kv.Name] = struct{}{}
		e.str(kv.Name)
		e.str(kv.Value)
	}
}

func (e *encoder) checkpoint(c ActorCheckpoint) {
	e.str(c.ActorID)
	e.w.U32(c.Generation)
	e.w.I64(c.Index)
}

func (e *encoder) checkpoints(l []ActorCheckpoint) {
	e.w.ListLen(len(l))
	for _, c := range l {
		e.checkpoint(c)
	}
}

func (e *encoder) messageID(id MessageID) {
	e.w.FixedData(id.GatewayID[:])
	e.w.FixedData(id.RequestID[:])
	e.w.U16(id.MessageIndex)
}

func (e *encoder) kvMetadata(l []KvMetadata) {
	e.w.ListLen(len(l))
	for _, m := range l {
		e.w.Data(m.Version)
		e.w.I64(m.UpdateTs)
	}
}

// ToServer members.

func (m ToServerInit) encode(e *encoder) {
	e.str(m.Name)
	e.w.U32(m.Version)
	e.w.U32(m.TotalSlots)
	e.w.Optional(m.PrepopulateActorNames != nil)
	if m.PrepopulateActorNames != nil {
		e.w.MapLen(len(m.PrepopulateActorNames))
		seen := make(map[string]struct{}, len(m.PrepopulateActorNames))
		for _, n := range m.PrepopulateActorNames {
			if _, dup := seen[n.Name]; dup {
				e.fail("duplicate actor name %q", n.Name)
			}
			seen[n.Name] = struct{}{}
			e.str(n.Name)
			e.str(n.Metadata)
		}
	}
	e.optStr(m.Metadata)
}

func (m ToServerEvents) encode(e *encoder) {
	e.w.ListLen(len(m))
	for _, ev := range m {
		e.checkpoint(ev.Checkpoint)
		if ev.Inner == nil {
			e.fail("nil Event")
			return
		}
		e.w.UnionTag(ev.Inner.eventTag())
		ev.Inner.encode(e)
	}
}

func (m ToServerAckCommands) encode(e *encoder) { e.checkpoints(m.LastCommandCheckpoints) }
func (ToServerStopping) encode(*encoder)        {}
func (m ToServerPong) encode(e *encoder)        { e.w.I64(m.Ts) }

func (m ToServerKvRequest) encode(e *encoder) {
	e.str(m.ActorID)
	e.w.U32(m.RequestID)
	if m.Data == nil {
		e.fail("nil KvRequestData")
		return
	}
	tag := m.Data.kvRequestTag()
	if e.version < Version7 {
		switch tag {
		case 4:
			e.fail("KvDeleteRangeRequest needs protocol v7, not v%d", e.version)
			return
		case 5:
			tag = 4 // KvDropRequest before v7
		}
	}
	e.w.UnionTag(tag)
	m.Data.encode(e)
}

func (m ToServerTunnelMessage) encode(e *encoder) {
	e.messageID(m.MessageID)
	if m.MessageKind == nil {
		e.fail("nil ToServerTunnelMessageKind")
		return
	}
	e.w.UnionTag(m.MessageKind.toServerKindTag())
	m.MessageKind.encode(e)
}

// ToClient members.

func (m ToClientInit) encode(e *encoder) {
	e.str(m.RunnerID)
	e.w.I64(m.Metadata.RunnerLostThreshold)
	if e.version >= Version6 {
		e.w.I64(m.Metadata.ActorStopThreshold)
		bare.WriteOptional(e.w, m.Metadata.ServerlessDrainGracePeriod, (*bare.Writer).I64)
	}
}

func (m ToClientCommands) encode(e *encoder) {
	e.w.ListLen(len(m))
	for _, c := range m {
		e.checkpoint(c.Checkpoint)
		if c.Inner == nil {
			e.fail("nil Command")
			return
		}
		e.w.UnionTag(c.Inner.commandTag())
		c.Inner.encode(e)
	}
}

func (m ToClientAckEvents) encode(e *encoder) { e.checkpoints(m.LastEventCheckpoints) }

func (m ToClientKvResponse) encode(e *encoder) {
	e.w.U32(m.RequestID)
	if m.Data == nil {
		e.fail("nil KvResponseData")
		return
	}
	e.w.UnionTag(m.Data.kvResponseTag())
	m.Data.encode(e)
}

func (m ToClientTunnelMessage) encode(e *encoder) {
	e.messageID(m.MessageID)
	if m.MessageKind == nil {
		e.fail("nil ToClientTunnelMessageKind")
		return
	}
	e.w.UnionTag(m.MessageKind.toClientKindTag())
	m.MessageKind.encode(e)
}

func (m ToClientPing) encode(e *encoder) { e.w.I64(m.Ts) }

// Lifecycle members.

func (m CommandStartActor) encode(e *encoder) {
	c := m.Config
	e.str(c.Name)
	e.optStr(c.Key)
	e.w.I64(c.CreateTs)
	e.w.OptData(c.Input)
	e.w.ListLen(len(m.HibernatingRequests))
	for _, h := range m.HibernatingRequests {
		e.w.FixedData(h.GatewayID[:])
		e.w.FixedData(h.RequestID[:])
	}
}

func (CommandStopActor) encode(*encoder) {}

func (m EventActorIntent) encode(e *encoder) {
	if m.Intent == nil {
		e.fail("nil ActorIntent")
		return
	}
	e.w.UnionTag(m.Intent.intentTag())
}

func (m EventActorStateUpdate) encode(e *encoder) {
	if m.State == nil {
		e.fail("nil ActorState")
		return
	}
	e.w.UnionTag(m.State.stateTag())
	m.State.encode(e)
}

func (m EventActorSetAlarm) encode(e *encoder) {
	bare.WriteOptional(e.w, m.AlarmTs, (*bare.Writer).I64)
}

func (ActorStateRunning) encode(*encoder) {}

func (m ActorStateStopped) encode(e *encoder) {
	if m.Code > StopCodeError {
		e.fail("unknown StopCode %d", m.Code)
	}
	e.w.Uint(uint64(m.Code))
	e.optStr(m.Message)
}

// KV members.

func (KvListAllQuery) encode(*encoder) {}
func (m KvListRangeQuery) encode(e *encoder) {
	e.w.Data(m.Start)
	e.w.Data(m.End)
	e.w.Bool(m.Exclusive)
}
func (m KvListPrefixQuery) encode(e *encoder) { e.w.Data(m.Key) }

func (m KvGetRequest) encode(e *encoder) { bare.WriteList(e.w, m.Keys, (*bare.Writer).Data) }

func (m KvListRequest) encode(e *encoder) {
	if m.Query == nil {
		e.fail("nil KvListQuery")
		return
	}
	e.w.UnionTag(m.Query.listQueryTag())
	m.Query.encode(e)
	e.w.Optional(m.Reverse != nil)
	if m.Reverse != nil {
		e.w.Bool(*m.Reverse)
	}
	e.w.Optional(m.Limit != nil)
	if m.Limit != nil {
		e.w.U64(*m.Limit)
	}
}

func (m KvPutRequest) encode(e *encoder) {
	bare.WriteList(e.w, m.Keys, (*bare.Writer).Data)
	bare.WriteList(e.w, m.Values, (*bare.Writer).Data)
}

func (m KvDeleteRequest) encode(e *encoder) { bare.WriteList(e.w, m.Keys, (*bare.Writer).Data) }

func (m KvDeleteRangeRequest) encode(e *encoder) {
	e.w.Data(m.Start)
	e.w.Data(m.End)
}

func (KvDropRequest) encode(*encoder) {}

func (m KvErrorResponse) encode(e *encoder) { e.str(m.Message) }

func (m KvGetResponse) encode(e *encoder) {
	bare.WriteList(e.w, m.Keys, (*bare.Writer).Data)
	bare.WriteList(e.w, m.Values, (*bare.Writer).Data)
	e.kvMetadata(m.Metadata)
}

func (m KvListResponse) encode(e *encoder) {
	bare.WriteList(e.w, m.Keys, (*bare.Writer).Data)
	bare.WriteList(e.w, m.Values, (*bare.Writer).Data)
	e.kvMetadata(m.Metadata)
}

func (KvPutResponse) encode(*encoder)    {}
func (KvDeleteResponse) encode(*encoder) {}
func (KvDropResponse) encode(*encoder)   {}

// Tunnel members.

func (m ToClientRequestStart) encode(e *encoder) {
	e.str(m.ActorID)
	e.str(m.Method)
	e.str(m.Path)
	e.headers(m.Headers)
	e.w.OptData(m.Body)
	e.w.Bool(m.Stream)
}

func (m ToClientRequestChunk) encode(e *encoder) {
	e.w.Data(m.Body)
	e.w.Bool(m.Finish)
}

func (ToClientRequestAbort) encode(*encoder) {}

func (m ToClientWebSocketOpen) encode(e *encoder) {
	e.str(m.ActorID)
	e.str(m.Path)
	e.headers(m.Headers)
}

func (m ToClientWebSocketMessage) encode(e *encoder) {
	e.w.Data(m.Data)
	e.w.Bool(m.Binary)
}

func (m ToClientWebSocketClose) encode(e *encoder) {
	bare.WriteOptional(e.w, m.Code, (*bare.Writer).U16)
	e.optStr(m.Reason)
}

func (m ToServerResponseStart) encode(e *encoder) {
	e.w.U16(m.Status)
	e.headers(m.Headers)
	e.w.OptData(m.Body)
	e.w.Bool(m.Stream)
}

func (m ToServerResponseChunk) encode(e *encoder) {
	e.w.Data(m.Body)
	e.w.Bool(m.Finish)
}

func (ToServerResponseAbort) encode(*encoder) {}

func (m ToServerWebSocketOpen) encode(e *encoder) { e.w.Bool(m.CanHibernate) }

func (m ToServerWebSocketMessage) encode(e *encoder) {
	e.w.Data(m.Data)
	e.w.Bool(m.Binary)
}

func (m ToServerWebSocketMessageAck) encode(e *encoder) { e.w.U16(m.Index) }

func (m ToServerWebSocketClose) encode(e *encoder) {
	bare.WriteOptional(e.w, m.Code, (*bare.Writer).U16)
	e.optStr(m.Reason)
	e.w.Bool(m.Hibernate)
}
