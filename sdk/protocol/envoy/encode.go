package envoy

import (
	"fmt"
	"unicode/utf8"

	"github.com/berthhq/berth/sdk/bare"
)

// EncodeError describes a value the schema cannot carry: a nil union member, an unknown enum
// value, a duplicate map key or a string that is not UTF-8.
type EncodeError struct{ Msg string }

func (e *EncodeError) Error() string { return "envoy protocol: cannot encode: " + e.Msg }

// UnsupportedVersionError reports a protocol version outside MinVersion..LatestVersion.
type UnsupportedVersionError struct{ Version int }

func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("envoy protocol: unsupported version %d (want %d to %d)", e.Version, MinVersion, LatestVersion)
}

func checkVersion(v int) error {
	if v < MinVersion || v > LatestVersion {
		return &UnsupportedVersionError{v}
	}
	return nil
}

// encoder writes one message, keeping the first schema error.
type encoder struct {
	w   *bare.Writer
	err error
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

// message is what every top-level union has in common; each union's own tag method keeps its
// members apart.
type message interface{ encode(e *encoder) }

// appendMessage writes one top-level value: its union tag, then its body. A nil m (a nil value
// of the union, converted) is an error naming the union. On error w may hold a partial message.
func appendMessage(w *bare.Writer, version int, union string, m message, tag uint64) error {
	if err := checkVersion(version); err != nil {
		return err
	}
	e := &encoder{w: w}
	if m == nil {
		e.fail("nil %s", union)
	} else {
		w.UnionTag(tag)
		m.encode(e)
	}
	return e.finish()
}

func encodeMessage(version int, union string, m message, tag uint64) ([]byte, error) {
	var w bare.Writer
	if err := appendMessage(&w, version, union, m, tag); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

// EncodeToRivet encodes one ToRivet frame (envoy to engine) at the given protocol version.
func EncodeToRivet(m ToRivet, version int) ([]byte, error) {
	var w bare.Writer
	if err := AppendToRivet(&w, m, version); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

// AppendToRivet writes m to w at the given protocol version. On error w may hold a partial
// message; Reset it before reuse.
func AppendToRivet(w *bare.Writer, m ToRivet, version int) error {
	var tag uint64
	if m != nil {
		tag = m.toRivetTag()
	}
	return appendMessage(w, version, "ToRivet", m, tag)
}

// EncodeToEnvoy encodes one ToEnvoy frame (engine to envoy) at the given protocol version.
func EncodeToEnvoy(m ToEnvoy, version int) ([]byte, error) {
	var w bare.Writer
	if err := AppendToEnvoy(&w, m, version); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

// AppendToEnvoy writes m to w at the given protocol version, as AppendToRivet.
func AppendToEnvoy(w *bare.Writer, m ToEnvoy, version int) error {
	var tag uint64
	if m != nil {
		tag = m.toEnvoyTag()
	}
	return appendMessage(w, version, "ToEnvoy", m, tag)
}

// EncodeToEnvoyConn encodes one engine-internal ToEnvoyConn message.
func EncodeToEnvoyConn(m ToEnvoyConn, version int) ([]byte, error) {
	var tag uint64
	if m != nil {
		tag = m.toEnvoyConnTag()
	}
	return encodeMessage(version, "ToEnvoyConn", m, tag)
}

// EncodeToGateway encodes one engine-internal ToGateway message.
func EncodeToGateway(m ToGateway, version int) ([]byte, error) {
	var tag uint64
	if m != nil {
		tag = m.toGatewayTag()
	}
	return encodeMessage(version, "ToGateway", m, tag)
}

// EncodeToOutbound encodes one ToOutbound message.
func EncodeToOutbound(m ToOutbound, version int) ([]byte, error) {
	var tag uint64
	if m != nil {
		tag = m.toOutboundTag()
	}
	return encodeMessage(version, "ToOutbound", m, tag)
}

// EncodeActorCommandKeyData encodes a command as the schema's top-level ActorCommandKeyData
// (the Command union alone), the form in which the engine stores an actor's commands.
func EncodeActorCommandKeyData(c Command, version int) ([]byte, error) {
	var tag uint64
	if c != nil {
		tag = c.commandTag()
	}
	return encodeMessage(version, "Command", c, tag)
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

// list writes a list<T> whose items need the encoder (strings, unions, checked enums).
func list[T any](e *encoder, l []T, item func(*encoder, T)) {
	e.w.ListLen(len(l))
	for _, v := range l {
		item(e, v)
	}
}

func (e *encoder) strs(l []string) { list(e, l, (*encoder).str) }

func (e *encoder) dataList(l [][]byte) { bare.WriteList(e.w, l, (*bare.Writer).Data) }

func (e *encoder) optU64(v *uint64) { bare.WriteOptional(e.w, v, (*bare.Writer).U64) }

func (e *encoder) optU32(v *uint32) { bare.WriteOptional(e.w, v, (*bare.Writer).U32) }

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

func (e *encoder) messageID(id MessageID) {
	e.w.FixedData(id.GatewayID[:])
	e.w.FixedData(id.RequestID[:])
	e.w.U16(id.MessageIndex)
}

func (e *encoder) kvMetadata(m KvMetadata) {
	e.w.Data(m.Version)
	e.w.I64(m.UpdateTs)
}

// enum writes an enum value, failing for one outside the schema's n values.
func (e *encoder) enum(name string, v uint8, n uint8) {
	if v >= n {
		e.fail("unknown %s %d", name, v)
	}
	e.w.Uint(uint64(v))
}

func (e *encoder) actorConfig(c ActorConfig) {
	e.str(c.Name)
	e.optStr(c.Key)
	e.w.I64(c.CreateTs)
	e.w.OptData(c.Input)
}

// Union members that appear inside other messages. Each checks for nil, then writes the tag
// and the body.

func (e *encoder) command(c Command) {
	if c == nil {
		e.fail("nil Command")
		return
	}
	e.w.UnionTag(c.commandTag())
	c.encode(e)
}

func (e *encoder) event(ev Event) {
	if ev == nil {
		e.fail("nil Event")
		return
	}
	e.w.UnionTag(ev.eventTag())
	ev.encode(e)
}

func (e *encoder) sqliteValue(v SqliteValue) {
	if v == nil {
		e.fail("nil SqliteValue")
		return
	}
	e.w.UnionTag(v.sqliteValueTag())
	v.encode(e)
}

func (e *encoder) sqliteValues(l []SqliteValue) { list(e, l, (*encoder).sqliteValue) }

// optParams writes an optional<list<SqliteBindParam>>: absent for nil.
func (e *encoder) optParams(l []SqliteValue) {
	e.w.Optional(l != nil)
	if l != nil {
		e.sqliteValues(l)
	}
}

// sqliteResponse writes a SQLite response union; union names it for the nil error.
func (e *encoder) sqliteResponse(union string, m interface {
	sqliteResponseTag() uint64
	encode(*encoder)
}) {
	if m == nil {
		e.fail("nil %s", union)
		return
	}
	e.w.UnionTag(m.sqliteResponseTag())
	m.encode(e)
}

// ToRivet members.

func (m ToRivetMetadata) encode(e *encoder) {
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

func (m ToRivetEvents) encode(e *encoder) {
	list(e, m, func(e *encoder, ev EventWrapper) {
		e.checkpoint(ev.Checkpoint)
		e.event(ev.Inner)
	})
}

func (m ToRivetAckCommands) encode(e *encoder) {
	list(e, m.LastCommandCheckpoints, (*encoder).checkpoint)
}

func (ToRivetStopping) encode(*encoder) {}

func (m ToRivetPong) encode(e *encoder) { e.w.I64(m.Ts) }

func (m ToRivetKvRequest) encode(e *encoder) {
	e.str(m.ActorID)
	e.w.U32(m.RequestID)
	if m.Data == nil {
		e.fail("nil KvRequestData")
		return
	}
	e.w.UnionTag(m.Data.kvRequestTag())
	m.Data.encode(e)
}

func (m ToRivetTunnelMessage) encode(e *encoder) {
	e.messageID(m.MessageID)
	if m.MessageKind == nil {
		e.fail("nil ToRivetTunnelMessageKind")
		return
	}
	e.w.UnionTag(m.MessageKind.toRivetKindTag())
	m.MessageKind.encode(e)
}

func (m ToRivetSqliteGetPagesRequest) encode(e *encoder) {
	e.w.U32(m.RequestID)
	d := m.Data
	e.str(d.ActorID)
	bare.WriteList(e.w, d.Pgnos, (*bare.Writer).U32)
	e.optU64(d.ExpectedGeneration)
	e.optU64(d.ExpectedHeadTxid)
}

func (e *encoder) dirtyPage(p SqliteDirtyPage) {
	e.w.U32(p.Pgno)
	e.w.Data(p.Bytes)
}

func (m ToRivetSqliteCommitRequest) encode(e *encoder) {
	e.w.U32(m.RequestID)
	d := m.Data
	e.str(d.ActorID)
	list(e, d.DirtyPages, (*encoder).dirtyPage)
	e.w.U32(d.DbSizePages)
	e.w.I64(d.NowMs)
	e.optU64(d.ExpectedGeneration)
	e.optU64(d.ExpectedHeadTxid)
}

func (m ToRivetSqliteCommitStageBeginRequest) encode(e *encoder) {
	e.w.U32(m.RequestID)
	d := m.Data
	e.str(d.ActorID)
	e.optU64(d.ExpectedGeneration)
	e.optU64(d.ExpectedHeadTxid)
}

func (m ToRivetSqliteCommitStageSegmentRequest) encode(e *encoder) {
	e.w.U32(m.RequestID)
	d := m.Data
	e.str(d.ActorID)
	e.optU64(d.ExpectedGeneration)
	e.w.U64(d.Txid)
	e.w.U32(d.FirstPgno)
	list(e, d.DirtyPages, (*encoder).dirtyPage)
}

func (m ToRivetSqliteCommitFinalizeRequest) encode(e *encoder) {
	e.w.U32(m.RequestID)
	d := m.Data
	e.str(d.ActorID)
	e.optU64(d.ExpectedGeneration)
	e.w.U64(d.Txid)
	e.w.U32(d.NewDbSizePages)
	e.w.I64(d.NowMs)
	bare.WriteList(e.w, d.SegmentFirstPgnos, (*bare.Writer).U32)
}

func (m ToRivetSqliteExecRequest) encode(e *encoder) {
	e.w.U32(m.RequestID)
	d := m.Data
	e.str(d.NamespaceID)
	e.str(d.ActorID)
	e.w.U64(d.Generation)
	e.str(d.SQL)
}

func (m ToRivetSqliteExecuteRequest) encode(e *encoder) {
	e.w.U32(m.RequestID)
	d := m.Data
	e.str(d.NamespaceID)
	e.str(d.ActorID)
	e.w.U64(d.Generation)
	e.str(d.SQL)
	e.optParams(d.Params)
}

func (m ToRivetSqliteExecuteBatchRequest) encode(e *encoder) {
	e.w.U32(m.RequestID)
	d := m.Data
	e.str(d.NamespaceID)
	e.str(d.ActorID)
	e.w.U64(d.Generation)
	list(e, d.Statements, func(e *encoder, s SqliteBatchStatement) {
		e.str(s.SQL)
		e.optParams(s.Params)
	})
}

// ToEnvoy members.

func (m ToEnvoyInit) encode(e *encoder) {
	e.w.I64(m.Metadata.EnvoyLostThreshold)
	e.w.I64(m.Metadata.ActorStopThreshold)
	e.w.U64(m.Metadata.MaxResponsePayloadSize)
}

func (m ToEnvoyCommands) encode(e *encoder) {
	list(e, m, func(e *encoder, c CommandWrapper) {
		e.checkpoint(c.Checkpoint)
		e.command(c.Inner)
	})
}

func (m ToEnvoyAckEvents) encode(e *encoder) {
	list(e, m.LastEventCheckpoints, (*encoder).checkpoint)
}

func (m ToEnvoyKvResponse) encode(e *encoder) {
	e.w.U32(m.RequestID)
	if m.Data == nil {
		e.fail("nil KvResponseData")
		return
	}
	e.w.UnionTag(m.Data.kvResponseTag())
	m.Data.encode(e)
}

func (m ToEnvoyTunnelMessage) encode(e *encoder) {
	e.messageID(m.MessageID)
	if m.MessageKind == nil {
		e.fail("nil ToEnvoyTunnelMessageKind")
		return
	}
	e.w.UnionTag(m.MessageKind.toEnvoyKindTag())
	m.MessageKind.encode(e)
}

func (m ToEnvoyPing) encode(e *encoder) { e.w.I64(m.Ts) }

// A nil Data stays nil when converted to sqliteResponse's parameter, which reports it by name.

func (m ToEnvoySqliteGetPagesResponse) encode(e *encoder) {
	e.w.U32(m.RequestID)
	e.sqliteResponse("SqliteGetPagesResponse", m.Data)
}

func (m ToEnvoySqliteCommitResponse) encode(e *encoder) {
	e.w.U32(m.RequestID)
	e.sqliteResponse("SqliteCommitResponse", m.Data)
}

func (m ToEnvoySqliteCommitStageBeginResponse) encode(e *encoder) {
	e.w.U32(m.RequestID)
	e.sqliteResponse("SqliteCommitStageBeginResponse", m.Data)
}

func (m ToEnvoySqliteCommitStageSegmentResponse) encode(e *encoder) {
	e.w.U32(m.RequestID)
	e.sqliteResponse("SqliteCommitStageSegmentResponse", m.Data)
}

func (m ToEnvoySqliteCommitFinalizeResponse) encode(e *encoder) {
	e.w.U32(m.RequestID)
	e.sqliteResponse("SqliteCommitFinalizeResponse", m.Data)
}

func (m ToEnvoySqliteExecResponse) encode(e *encoder) {
	e.w.U32(m.RequestID)
	e.sqliteResponse("SqliteExecResponse", m.Data)
}

func (m ToEnvoySqliteExecuteResponse) encode(e *encoder) {
	e.w.U32(m.RequestID)
	e.sqliteResponse("SqliteExecuteResponse", m.Data)
}

func (m ToEnvoySqliteExecuteBatchResponse) encode(e *encoder) {
	e.w.U32(m.RequestID)
	e.sqliteResponse("SqliteExecuteBatchResponse", m.Data)
}

// Engine-internal members.

func (m ToEnvoyConnPing) encode(e *encoder) {
	e.w.FixedData(m.GatewayID[:])
	e.w.FixedData(m.RequestID[:])
	e.w.I64(m.Ts)
}

func (ToEnvoyConnClose) encode(*encoder) {}

func (m ToGatewayPong) encode(e *encoder) {
	e.w.FixedData(m.RequestID[:])
	e.w.I64(m.Ts)
}

func (m ToOutboundActorStart) encode(e *encoder) {
	e.str(m.NamespaceID)
	e.str(m.PoolName)
	e.checkpoint(m.Checkpoint)
	e.actorConfig(m.ActorConfig)
}

// Lifecycle members.

func (m CommandStartActor) encode(e *encoder) {
	e.actorConfig(m.Config)
	list(e, m.HibernatingRequests, func(e *encoder, h HibernatingRequest) {
		e.w.FixedData(h.GatewayID[:])
		e.w.FixedData(h.RequestID[:])
	})
	e.w.Optional(m.PreloadedKv != nil)
	if p := m.PreloadedKv; p != nil {
		list(e, p.Entries, func(e *encoder, kv PreloadedKvEntry) {
			e.w.Data(kv.Key)
			e.w.Data(kv.Value)
			e.kvMetadata(kv.Metadata)
		})
		e.dataList(p.RequestedGetKeys)
		e.dataList(p.RequestedPrefixes)
	}
}

func (m CommandStopActor) encode(e *encoder) {
	e.enum("StopActorReason", uint8(m.Reason), 5)
}

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
	e.enum("StopCode", uint8(m.Code), 2)
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

func (m KvGetRequest) encode(e *encoder) { e.dataList(m.Keys) }

func (m KvListRequest) encode(e *encoder) {
	if m.Query == nil {
		e.fail("nil KvListQuery")
		return
	}
	e.w.UnionTag(m.Query.listQueryTag())
	m.Query.encode(e)
	bare.WriteOptional(e.w, m.Reverse, (*bare.Writer).Bool)
	e.optU64(m.Limit)
}

func (m KvPutRequest) encode(e *encoder) {
	e.dataList(m.Keys)
	e.dataList(m.Values)
}

func (m KvDeleteRequest) encode(e *encoder) { e.dataList(m.Keys) }

func (m KvDeleteRangeRequest) encode(e *encoder) {
	e.w.Data(m.Start)
	e.w.Data(m.End)
}

func (KvDropRequest) encode(*encoder) {}

func (m KvErrorResponse) encode(e *encoder) { e.str(m.Message) }

func (m KvGetResponse) encode(e *encoder) {
	e.dataList(m.Keys)
	e.dataList(m.Values)
	list(e, m.Metadata, (*encoder).kvMetadata)
}

func (m KvListResponse) encode(e *encoder) {
	e.dataList(m.Keys)
	e.dataList(m.Values)
	list(e, m.Metadata, (*encoder).kvMetadata)
}

func (KvPutResponse) encode(*encoder)    {}
func (KvDeleteResponse) encode(*encoder) {}
func (KvDropResponse) encode(*encoder)   {}

// SQLite members.

func (m SqliteErrorResponse) encode(e *encoder) {
	e.str(m.Group)
	e.str(m.Code)
	e.str(m.Message)
}

func (m SqliteGetPagesOk) encode(e *encoder) {
	list(e, m.Pages, func(e *encoder, p SqliteFetchedPage) {
		e.w.U32(p.Pgno)
		e.w.OptData(p.Bytes)
	})
	e.optU64(m.HeadTxid)
}

func (m SqliteCommitOk) encode(e *encoder)             { e.optU64(m.HeadTxid) }
func (m SqliteCommitStageBeginOk) encode(e *encoder)   { e.w.U64(m.Txid) }
func (m SqliteCommitStageSegmentOk) encode(e *encoder) { e.w.U64(m.StagedBytes) }
func (m SqliteCommitFinalizeOk) encode(e *encoder)     { e.optU64(m.HeadTxid) }

func (e *encoder) rows(rows [][]SqliteValue) { list(e, rows, (*encoder).sqliteValues) }

func (e *encoder) executeResult(r SqliteExecuteResult) {
	e.strs(r.Columns)
	e.rows(r.Rows)
	e.w.I64(r.Changes)
	bare.WriteOptional(e.w, r.LastInsertRowID, (*bare.Writer).I64)
}

func (m SqliteExecOk) encode(e *encoder) {
	e.strs(m.Result.Columns)
	e.rows(m.Result.Rows)
}

func (m SqliteExecuteOk) encode(e *encoder) { e.executeResult(m.Result) }

func (m SqliteExecuteBatchOk) encode(e *encoder) { list(e, m.Results, (*encoder).executeResult) }

func (SqliteValueNull) encode(*encoder)        {}
func (m SqliteValueInteger) encode(e *encoder) { e.w.I64(m.Value) }
func (m SqliteValueFloat) encode(e *encoder)   { e.w.FixedData(m.Value[:]) }
func (m SqliteValueText) encode(e *encoder)    { e.str(m.Value) }
func (m SqliteValueBlob) encode(e *encoder)    { e.w.Data(m.Value) }

// Tunnel members.

func (e *encoder) abortReason(r HttpStreamAbortReason) {
	e.enum("HttpStreamAbortReasonKind", uint8(r.Kind), 4)
	e.optStr(r.Detail)
}

func (m ToEnvoyRequestStart) encode(e *encoder) {
	e.str(m.ActorID)
	e.optU32(m.ActorGeneration)
	e.str(m.Method)
	e.str(m.Path)
	e.headers(m.Headers)
	e.w.OptData(m.Body)
	e.w.Bool(m.Stream)
	e.w.Bool(m.ResponseStream)
}

func (m ToEnvoyRequestChunk) encode(e *encoder) {
	e.w.Data(m.Body)
	e.w.Bool(m.Finish)
}

func (m ToEnvoyRequestAbort) encode(e *encoder) {
	e.optStr(m.ActorID)
	e.optU32(m.ActorGeneration)
	e.abortReason(m.Reason)
}

func (ToEnvoyRequestBodyCancel) encode(*encoder) {}

func (m ToEnvoyResponseBodyWindowUpdate) encode(e *encoder) { e.w.U64(m.ConsumedBytes) }

func (m ToEnvoyWebSocketOpen) encode(e *encoder) {
	e.str(m.ActorID)
	e.optU32(m.ActorGeneration)
	e.str(m.Path)
	e.headers(m.Headers)
}

func (m ToEnvoyWebSocketMessage) encode(e *encoder) {
	e.w.Data(m.Data)
	e.w.Bool(m.Binary)
}

func (m ToEnvoyWebSocketClose) encode(e *encoder) {
	bare.WriteOptional(e.w, m.Code, (*bare.Writer).U16)
	e.optStr(m.Reason)
}

func (m ToRivetResponseStart) encode(e *encoder) {
	e.w.U16(m.Status)
	e.headers(m.Headers)
	e.w.OptData(m.Body)
	e.w.Bool(m.Stream)
}

func (m ToRivetResponseChunk) encode(e *encoder) {
	e.w.Data(m.Body)
	e.w.Bool(m.Finish)
}

func (m ToRivetResponseAbort) encode(e *encoder) { e.abortReason(m.Reason) }

func (m ToRivetRequestBodyWindowUpdate) encode(e *encoder) { e.w.U64(m.ConsumedBytes) }

func (ToRivetRequestBodyCancel) encode(*encoder) {}

func (m ToRivetWebSocketOpen) encode(e *encoder) { e.w.Bool(m.CanHibernate) }

func (m ToRivetWebSocketMessage) encode(e *encoder) {
	e.w.Data(m.Data)
	e.w.Bool(m.Binary)
}

func (m ToRivetWebSocketMessageAck) encode(e *encoder) { e.w.U16(m.Index) }

func (m ToRivetWebSocketClose) encode(e *encoder) {
	bare.WriteOptional(e.w, m.Code, (*bare.Writer).U16)
	e.optStr(m.Reason)
	e.w.Bool(m.Hibernate)
}
