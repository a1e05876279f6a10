package envoy

import (
	"github.com/berthhq/berth/sdk/bare"
)

// DecodeToRivet decodes one ToRivet frame (envoy to engine) of the given protocol version. The
// frame must hold exactly one message. Every malformed input gives a *bare.DecodeError naming
// the offset (an unknown union tag or enum value names the offset where it starts); an
// unsupported version gives an *UnsupportedVersionError. Byte fields of the result alias b.
func DecodeToRivet(b []byte, version int) (ToRivet, error) {
	return decode(b, version, ReadToRivet)
}

// DecodeToEnvoy decodes one ToEnvoy frame (engine to envoy), as DecodeToRivet.
func DecodeToEnvoy(b []byte, version int) (ToEnvoy, error) {
	return decode(b, version, ReadToEnvoy)
}

// DecodeToEnvoyConn decodes one engine-internal ToEnvoyConn message, as DecodeToRivet.
func DecodeToEnvoyConn(b []byte, version int) (ToEnvoyConn, error) {
	return decode(b, version, readToEnvoyConn)
}

// DecodeToGateway decodes one engine-internal ToGateway message, as DecodeToRivet.
func DecodeToGateway(b []byte, version int) (ToGateway, error) {
	return decode(b, version, readToGateway)
}

// DecodeToOutbound decodes one ToOutbound message, as DecodeToRivet.
func DecodeToOutbound(b []byte, version int) (ToOutbound, error) {
	return decode(b, version, readToOutbound)
}

// DecodeActorCommandKeyData decodes a stored command (the schema's ActorCommandKeyData), as
// DecodeToRivet.
func DecodeActorCommandKeyData(b []byte, version int) (Command, error) {
	return decode(b, version, func(r *bare.Reader, _ int) Command { return readCommand(r) })
}

func decode[T any](b []byte, version int, read func(*bare.Reader, int) T) (T, error) {
	var zero T
	if err := checkVersion(version); err != nil {
		return zero, err
	}
	r := bare.NewReader(b)
	m := read(r, version)
	if err := r.Done(); err != nil {
		return zero, err
	}
	return m, nil
}

// tag reads the tag of a union of n members. An unknown tag is an error at the tag's offset,
// naming the union; ok is false after any error.
func tag(r *bare.Reader, union string, n uint64) (t uint64, ok bool) {
	start := r.Offset()
	t = r.UnionTag()
	if r.Err() != nil {
		return 0, false
	}
	if t >= n {
		r.FailAt(start, "unknown %s tag %d", union, t)
		return 0, false
	}
	return t, true
}

// enum reads an enum of n values; a value outside them is an error at its offset.
func enum(r *bare.Reader, name string, n uint8) uint8 {
	start := r.Offset()
	v := r.Uint()
	if r.Err() == nil && v >= uint64(n) {
		r.FailAt(start, "unknown %s %d", name, v)
		return 0
	}
	return uint8(v)
}

// ReadToRivet reads one ToRivet message of the given version from r (which must be a supported
// version; DecodeToRivet checks it). On error it returns nil and r.Err() is set.
func ReadToRivet(r *bare.Reader, _ int) ToRivet {
	t, ok := tag(r, "ToRivet", 15)
	if !ok {
		return nil
	}
	var m ToRivet
	switch t {
	case 0:
		m = readToRivetMetadata(r)
	case 1:
		m = ToRivetEvents(bare.ReadList(r, readEventWrapper))
	case 2:
		m = ToRivetAckCommands{LastCommandCheckpoints: readCheckpoints(r)}
	case 3:
		m = ToRivetStopping{}
	case 4:
		m = ToRivetPong{Ts: r.I64()}
	case 5:
		m = ToRivetKvRequest{ActorID: r.Str(), RequestID: r.U32(), Data: readKvRequest(r)}
	case 6:
		m = readToRivetTunnelMessage(r)
	case 7:
		m = ToRivetSqliteGetPagesRequest{RequestID: r.U32(), Data: SqliteGetPagesRequest{
			ActorID: r.Str(), Pgnos: bare.ReadList(r, (*bare.Reader).U32),
			ExpectedGeneration: readOptU64(r), ExpectedHeadTxid: readOptU64(r)}}
	case 8:
		m = ToRivetSqliteCommitRequest{RequestID: r.U32(), Data: SqliteCommitRequest{
			ActorID: r.Str(), DirtyPages: readDirtyPages(r), DbSizePages: r.U32(), NowMs: r.I64(),
			ExpectedGeneration: readOptU64(r), ExpectedHeadTxid: readOptU64(r)}}
	case 9:
		m = ToRivetSqliteCommitStageBeginRequest{RequestID: r.U32(), Data: SqliteCommitStageBeginRequest{
			ActorID: r.Str(), ExpectedGeneration: readOptU64(r), ExpectedHeadTxid: readOptU64(r)}}
	case 10:
		m = ToRivetSqliteCommitStageSegmentRequest{RequestID: r.U32(), Data: SqliteCommitStageSegmentRequest{
			ActorID: r.Str(), ExpectedGeneration: readOptU64(r), Txid: r.U64(), FirstPgno: r.U32(),
			DirtyPages: readDirtyPages(r)}}
	case 11:
		m = ToRivetSqliteCommitFinalizeRequest{RequestID: r.U32(), Data: SqliteCommitFinalizeRequest{
			ActorID: r.Str(), ExpectedGeneration: readOptU64(r), Txid: r.U64(), NewDbSizePages: r.U32(),
			NowMs: r.I64(), SegmentFirstPgnos: bare.ReadList(r, (*bare.Reader).U32)}}
	case 12:
		m = ToRivetSqliteExecRequest{RequestID: r.U32(), Data: SqliteExecRequest{
			NamespaceID: r.Str(), ActorID: r.Str(), Generation: r.U64(), SQL: r.Str()}}
	case 13:
		m = ToRivetSqliteExecuteRequest{RequestID: r.U32(), Data: SqliteExecuteRequest{
			NamespaceID: r.Str(), ActorID: r.Str(), Generation: r.U64(), SQL: r.Str(), Params: readOptParams(r)}}
	case 14:
		m = ToRivetSqliteExecuteBatchRequest{RequestID: r.U32(), Data: SqliteExecuteBatchRequest{
			NamespaceID: r.Str(), ActorID: r.Str(), Generation: r.U64(),
			Statements: bare.ReadList(r, func(r *bare.Reader) SqliteBatchStatement {
				return SqliteBatchStatement{SQL: r.Str(), Params: readOptParams(r)}
			})}}
	}
	if r.Err() != nil {
		return nil
	}
	return m
}

// ReadToEnvoy reads one ToEnvoy message of the given version from r, as ReadToRivet.
func ReadToEnvoy(r *bare.Reader, _ int) ToEnvoy {
	t, ok := tag(r, "ToEnvoy", 14)
	if !ok {
		return nil
	}
	var m ToEnvoy
	switch t {
	case 0:
		m = ToEnvoyInit{Metadata: ProtocolMetadata{EnvoyLostThreshold: r.I64(), ActorStopThreshold: r.I64(), MaxResponsePayloadSize: r.U64()}}
	case 1:
		m = readToEnvoyCommands(r)
	case 2:
		m = ToEnvoyAckEvents{LastEventCheckpoints: readCheckpoints(r)}
	case 3:
		m = ToEnvoyKvResponse{RequestID: r.U32(), Data: readKvResponse(r)}
	case 4:
		m = readToEnvoyTunnelMessage(r)
	case 5:
		m = ToEnvoyPing{Ts: r.I64()}
	case 6:
		m = ToEnvoySqliteGetPagesResponse{RequestID: r.U32(), Data: readSqliteGetPagesResponse(r)}
	case 7:
		m = ToEnvoySqliteCommitResponse{RequestID: r.U32(), Data: readSqliteCommitResponse(r)}
	case 8:
		m = ToEnvoySqliteCommitStageBeginResponse{RequestID: r.U32(), Data: readSqliteCommitStageBeginResponse(r)}
	case 9:
		m = ToEnvoySqliteCommitStageSegmentResponse{RequestID: r.U32(), Data: readSqliteCommitStageSegmentResponse(r)}
	case 10:
		m = ToEnvoySqliteCommitFinalizeResponse{RequestID: r.U32(), Data: readSqliteCommitFinalizeResponse(r)}
	case 11:
		m = ToEnvoySqliteExecResponse{RequestID: r.U32(), Data: readSqliteExecResponse(r)}
	case 12:
		m = ToEnvoySqliteExecuteResponse{RequestID: r.U32(), Data: readSqliteExecuteResponse(r)}
	case 13:
		m = ToEnvoySqliteExecuteBatchResponse{RequestID: r.U32(), Data: readSqliteExecuteBatchResponse(r)}
	}
	if r.Err() != nil {
		return nil
	}
	return m
}

func readToEnvoyConn(r *bare.Reader, _ int) ToEnvoyConn {
	t, ok := tag(r, "ToEnvoyConn", 5)
	if !ok {
		return nil
	}
	var m ToEnvoyConn
	switch t {
	case 0:
		var p ToEnvoyConnPing
		r.FixedDataInto(p.GatewayID[:])
		r.FixedDataInto(p.RequestID[:])
		p.Ts = r.I64()
		m = p
	case 1:
		m = ToEnvoyConnClose{}
	case 2:
		m = readToEnvoyCommands(r)
	case 3:
		m = ToEnvoyAckEvents{LastEventCheckpoints: readCheckpoints(r)}
	case 4:
		m = readToEnvoyTunnelMessage(r)
	}
	if r.Err() != nil {
		return nil
	}
	return m
}

func readToGateway(r *bare.Reader, _ int) ToGateway {
	t, ok := tag(r, "ToGateway", 2)
	if !ok {
		return nil
	}
	var m ToGateway
	switch t {
	case 0:
		var p ToGatewayPong
		r.FixedDataInto(p.RequestID[:])
		p.Ts = r.I64()
		m = p
	case 1:
		m = readToRivetTunnelMessage(r)
	}
	if r.Err() != nil {
		return nil
	}
	return m
}

func readToOutbound(r *bare.Reader, _ int) ToOutbound {
	if _, ok := tag(r, "ToOutbound", 1); !ok {
		return nil
	}
	m := ToOutboundActorStart{NamespaceID: r.Str(), PoolName: r.Str(), Checkpoint: readCheckpoint(r), ActorConfig: readActorConfig(r)}
	if r.Err() != nil {
		return nil
	}
	return m
}

// Primitive helpers.

func readOptStr(r *bare.Reader) *string { return bare.ReadOptional(r, (*bare.Reader).Str) }
func readOptU64(r *bare.Reader) *uint64 { return bare.ReadOptional(r, (*bare.Reader).U64) }
func readOptU32(r *bare.Reader) *uint32 { return bare.ReadOptional(r, (*bare.Reader).U32) }
func readOptU16(r *bare.Reader) *uint16 { return bare.ReadOptional(r, (*bare.Reader).U16) }
func readOptI64(r *bare.Reader) *int64  { return bare.ReadOptional(r, (*bare.Reader).I64) }

func readDataList(r *bare.Reader) [][]byte { return bare.ReadList(r, (*bare.Reader).Data) }

func readHeaders(r *bare.Reader) []Header {
	h := []Header{}
	bare.ReadMap(r, func(r *bare.Reader) string {
		kv := Header{Name: r.Str(), Value: r.Str()}
		h = append(h, kv)
		return kv.Name
	})
	return h
}

func readCheckpoint(r *bare.Reader) ActorCheckpoint {
	return ActorCheckpoint{ActorID: r.Str(), Generation: r.U32(), Index: r.I64()}
}

func readCheckpoints(r *bare.Reader) []ActorCheckpoint { return bare.ReadList(r, readCheckpoint) }

func readMessageID(r *bare.Reader) (m MessageID) {
	r.FixedDataInto(m.GatewayID[:])
	r.FixedDataInto(m.RequestID[:])
	m.MessageIndex = r.U16()
	return m
}

func readKvMetadata(r *bare.Reader) KvMetadata {
	return KvMetadata{Version: r.Data(), UpdateTs: r.I64()}
}

func readActorConfig(r *bare.Reader) ActorConfig {
	return ActorConfig{Name: r.Str(), Key: readOptStr(r), CreateTs: r.I64(), Input: r.OptData()}
}

// ToRivet members.

func readToRivetMetadata(r *bare.Reader) ToRivetMetadata {
	var m ToRivetMetadata
	if r.Optional() {
		names := []ActorName{}
		bare.ReadMap(r, func(r *bare.Reader) string {
			n := ActorName{Name: r.Str(), Metadata: r.Str()}
			names = append(names, n)
			return n.Name
		})
		m.PrepopulateActorNames = names
	}
	m.Metadata = readOptStr(r)
	return m
}

func readEventWrapper(r *bare.Reader) EventWrapper {
	return EventWrapper{Checkpoint: readCheckpoint(r), Inner: readEvent(r)}
}

func readEvent(r *bare.Reader) Event {
	t, ok := tag(r, "Event", 3)
	if !ok {
		return nil
	}
	switch t {
	case 0:
		it, ok := tag(r, "ActorIntent", 2)
		if !ok {
			return nil
		}
		if it == 0 {
			return EventActorIntent{Intent: ActorIntentSleep{}}
		}
		return EventActorIntent{Intent: ActorIntentStop{}}
	case 1:
		st, ok := tag(r, "ActorState", 2)
		if !ok {
			return nil
		}
		if st == 0 {
			return EventActorStateUpdate{State: ActorStateRunning{}}
		}
		code := StopCode(enum(r, "StopCode", 2))
		return EventActorStateUpdate{State: ActorStateStopped{Code: code, Message: readOptStr(r)}}
	default:
		return EventActorSetAlarm{AlarmTs: readOptI64(r)}
	}
}

func readKvRequest(r *bare.Reader) KvRequestData {
	t, ok := tag(r, "KvRequestData", 6)
	if !ok {
		return nil
	}
	switch t {
	case 0:
		return KvGetRequest{Keys: readDataList(r)}
	case 1:
		return KvListRequest{Query: readListQuery(r), Reverse: bare.ReadOptional(r, (*bare.Reader).Bool), Limit: readOptU64(r)}
	case 2:
		return KvPutRequest{Keys: readDataList(r), Values: readDataList(r)}
	case 3:
		return KvDeleteRequest{Keys: readDataList(r)}
	case 4:
		return KvDeleteRangeRequest{Start: r.Data(), End: r.Data()}
	default:
		return KvDropRequest{}
	}
}

func readListQuery(r *bare.Reader) KvListQuery {
	t, ok := tag(r, "KvListQuery", 3)
	if !ok {
		return nil
	}
	switch t {
	case 0:
		return KvListAllQuery{}
	case 1:
		return KvListRangeQuery{Start: r.Data(), End: r.Data(), Exclusive: r.Bool()}
	default:
		return KvListPrefixQuery{Key: r.Data()}
	}
}

func readAbortReason(r *bare.Reader) HttpStreamAbortReason {
	kind := HttpStreamAbortReasonKind(enum(r, "HttpStreamAbortReasonKind", 4))
	return HttpStreamAbortReason{Kind: kind, Detail: readOptStr(r)}
}

func readToRivetTunnelMessage(r *bare.Reader) ToRivetTunnelMessage {
	return ToRivetTunnelMessage{MessageID: readMessageID(r), MessageKind: readToRivetKind(r)}
}

func readToRivetKind(r *bare.Reader) ToRivetTunnelMessageKind {
	t, ok := tag(r, "ToRivetTunnelMessageKind", 9)
	if !ok {
		return nil
	}
	switch t {
	case 0:
		return ToRivetResponseStart{Status: r.U16(), Headers: readHeaders(r), Body: r.OptData(), Stream: r.Bool()}
	case 1:
		return ToRivetResponseChunk{Body: r.Data(), Finish: r.Bool()}
	case 2:
		return ToRivetResponseAbort{Reason: readAbortReason(r)}
	case 3:
		return ToRivetRequestBodyWindowUpdate{ConsumedBytes: r.U64()}
	case 4:
		return ToRivetRequestBodyCancel{}
	case 5:
		return ToRivetWebSocketOpen{CanHibernate: r.Bool()}
	case 6:
		return ToRivetWebSocketMessage{Data: r.Data(), Binary: r.Bool()}
	case 7:
		return ToRivetWebSocketMessageAck{Index: r.U16()}
	default:
		return ToRivetWebSocketClose{Code: readOptU16(r), Reason: readOptStr(r), Hibernate: r.Bool()}
	}
}

func readDirtyPages(r *bare.Reader) []SqliteDirtyPage {
	return bare.ReadList(r, func(r *bare.Reader) SqliteDirtyPage {
		return SqliteDirtyPage{Pgno: r.U32(), Bytes: r.Data()}
	})
}

func readSqliteValue(r *bare.Reader) SqliteValue {
	t, ok := tag(r, "SqliteValue", 5)
	if !ok {
		return nil
	}
	switch t {
	case 0:
		return SqliteValueNull{}
	case 1:
		return SqliteValueInteger{Value: r.I64()}
	case 2:
		var v SqliteValueFloat
		r.FixedDataInto(v.Value[:])
		return v
	case 3:
		return SqliteValueText{Value: r.Str()}
	default:
		return SqliteValueBlob{Value: r.Data()}
	}
}

func readSqliteValues(r *bare.Reader) []SqliteValue { return bare.ReadList(r, readSqliteValue) }

func readOptParams(r *bare.Reader) []SqliteValue {
	if !r.Optional() {
		return nil
	}
	return readSqliteValues(r)
}

// ToEnvoy members.

func readToEnvoyCommands(r *bare.Reader) ToEnvoyCommands {
	return bare.ReadList(r, func(r *bare.Reader) CommandWrapper {
		return CommandWrapper{Checkpoint: readCheckpoint(r), Inner: readCommand(r)}
	})
}

func readCommand(r *bare.Reader) Command {
	t, ok := tag(r, "Command", 2)
	if !ok {
		return nil
	}
	if t == 1 {
		return CommandStopActor{Reason: StopActorReason(enum(r, "StopActorReason", 5))}
	}
	m := CommandStartActor{Config: readActorConfig(r)}
	m.HibernatingRequests = bare.ReadList(r, func(r *bare.Reader) (h HibernatingRequest) {
		r.FixedDataInto(h.GatewayID[:])
		r.FixedDataInto(h.RequestID[:])
		return h
	})
	m.PreloadedKv = bare.ReadOptional(r, func(r *bare.Reader) PreloadedKv {
		return PreloadedKv{
			Entries: bare.ReadList(r, func(r *bare.Reader) PreloadedKvEntry {
				return PreloadedKvEntry{Key: r.Data(), Value: r.Data(), Metadata: readKvMetadata(r)}
			}),
			RequestedGetKeys:  readDataList(r),
			RequestedPrefixes: readDataList(r),
		}
	})
	return m
}

func readKvResponse(r *bare.Reader) KvResponseData {
	t, ok := tag(r, "KvResponseData", 6)
	if !ok {
		return nil
	}
	switch t {
	case 0:
		return KvErrorResponse{Message: r.Str()}
	case 1:
		return KvGetResponse{Keys: readDataList(r), Values: readDataList(r), Metadata: bare.ReadList(r, readKvMetadata)}
	case 2:
		return KvListResponse{Keys: readDataList(r), Values: readDataList(r), Metadata: bare.ReadList(r, readKvMetadata)}
	case 3:
		return KvPutResponse{}
	case 4:
		return KvDeleteResponse{}
	default:
		return KvDropResponse{}
	}
}

func readToEnvoyTunnelMessage(r *bare.Reader) ToEnvoyTunnelMessage {
	return ToEnvoyTunnelMessage{MessageID: readMessageID(r), MessageKind: readToEnvoyKind(r)}
}

func readToEnvoyKind(r *bare.Reader) ToEnvoyTunnelMessageKind {
	t, ok := tag(r, "ToEnvoyTunnelMessageKind", 8)
	if !ok {
		return nil
	}
	switch t {
	case 0:
		return ToEnvoyRequestStart{ActorID: r.Str(), ActorGeneration: readOptU32(r), Method: r.Str(), Path: r.Str(),
			Headers: readHeaders(r), Body: r.OptData(), Stream: r.Bool(), ResponseStream: r.Bool()}
	case 1:
		return ToEnvoyRequestChunk{Body: r.Data(), Finish: r.Bool()}
	case 2:
		return ToEnvoyRequestAbort{ActorID: readOptStr(r), ActorGeneration: readOptU32(r), Reason: readAbortReason(r)}
	case 3:
		return ToEnvoyRequestBodyCancel{}
	case 4:
		return ToEnvoyResponseBodyWindowUpdate{ConsumedBytes: r.U64()}
	case 5:
		return ToEnvoyWebSocketOpen{ActorID: r.Str(), ActorGeneration: readOptU32(r), Path: r.Str(), Headers: readHeaders(r)}
	case 6:
		return ToEnvoyWebSocketMessage{Data: r.Data(), Binary: r.Bool()}
	default:
		return ToEnvoyWebSocketClose{Code: readOptU16(r), Reason: readOptStr(r)}
	}
}

// SQLite responses: tag 0 is the request's Ok value, tag 1 a SqliteErrorResponse.

func readSqliteError(r *bare.Reader) SqliteErrorResponse {
	return SqliteErrorResponse{Group: r.Str(), Code: r.Str(), Message: r.Str()}
}

// sqliteResponse reads the tag of a SQLite response union: ok is false after an error; isErr
// says that a SqliteErrorResponse follows.
func sqliteResponse(r *bare.Reader, union string) (isErr, ok bool) {
	t, ok := tag(r, union, 2)
	return t == 1, ok
}

func readSqliteGetPagesResponse(r *bare.Reader) SqliteGetPagesResponse {
	isErr, ok := sqliteResponse(r, "SqliteGetPagesResponse")
	switch {
	case !ok:
		return nil
	case isErr:
		return readSqliteError(r)
	}
	return SqliteGetPagesOk{
		Pages: bare.ReadList(r, func(r *bare.Reader) SqliteFetchedPage {
			return SqliteFetchedPage{Pgno: r.U32(), Bytes: r.OptData()}
		}),
		HeadTxid: readOptU64(r),
	}
}

func readSqliteCommitResponse(r *bare.Reader) SqliteCommitResponse {
	isErr, ok := sqliteResponse(r, "SqliteCommitResponse")
	switch {
	case !ok:
		return nil
	case isErr:
		return readSqliteError(r)
	}
	return SqliteCommitOk{HeadTxid: readOptU64(r)}
}

func readSqliteCommitStageBeginResponse(r *bare.Reader) SqliteCommitStageBeginResponse {
	isErr, ok := sqliteResponse(r, "SqliteCommitStageBeginResponse")
	switch {
	case !ok:
		return nil
	case isErr:
		return readSqliteError(r)
	}
	return SqliteCommitStageBeginOk{Txid: r.U64()}
}

func readSqliteCommitStageSegmentResponse(r *bare.Reader) SqliteCommitStageSegmentResponse {
	isErr, ok := sqliteResponse(r, "SqliteCommitStageSegmentResponse")
	switch {
	case !ok:
		return nil
	case isErr:
		return readSqliteError(r)
	}
	return SqliteCommitStageSegmentOk{StagedBytes: r.U64()}
}

func readSqliteCommitFinalizeResponse(r *bare.Reader) SqliteCommitFinalizeResponse {
	isErr, ok := sqliteResponse(r, "SqliteCommitFinalizeResponse")
	switch {
	case !ok:
		return nil
	case isErr:
		return readSqliteError(r)
	}
	return SqliteCommitFinalizeOk{HeadTxid: readOptU64(r)}
}

func readRows(r *bare.Reader) [][]SqliteValue { return bare.ReadList(r, readSqliteValues) }

func readExecuteResult(r *bare.Reader) SqliteExecuteResult {
	return SqliteExecuteResult{Columns: bare.ReadList(r, (*bare.Reader).Str), Rows: readRows(r), Changes: r.I64(), LastInsertRowID: readOptI64(r)}
}

func readSqliteExecResponse(r *bare.Reader) SqliteExecResponse {
	isErr, ok := sqliteResponse(r, "SqliteExecResponse")
	switch {
	case !ok:
		return nil
	case isErr:
		return readSqliteError(r)
	}
	return SqliteExecOk{Result: SqliteQueryResult{Columns: bare.ReadList(r, (*bare.Reader).Str), Rows: readRows(r)}}
}

func readSqliteExecuteResponse(r *bare.Reader) SqliteExecuteResponse {
	isErr, ok := sqliteResponse(r, "SqliteExecuteResponse")
	switch {
	case !ok:
		return nil
	case isErr:
		return readSqliteError(r)
	}
	return SqliteExecuteOk{Result: readExecuteResult(r)}
}

func readSqliteExecuteBatchResponse(r *bare.Reader) SqliteExecuteBatchResponse {
	isErr, ok := sqliteResponse(r, "SqliteExecuteBatchResponse")
	switch {
	case !ok:
		return nil
	case isErr:
		return readSqliteError(r)
	}
	return SqliteExecuteBatchOk{Results: bare.ReadList(r, readExecuteResult)}
}
