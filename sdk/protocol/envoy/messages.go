package envoy

import (
	"encoding/binary"
	"math"
)

// Protocol versions this package speaks. A WebSocket frame carries one bare ToRivet or ToEnvoy
// value with no version prefix: the version is negotiated in the connect URL
// (protocol_version=N). The schema is @rivetkit/engine-envoy-protocol 2.3.19 (VERSION = 8);
// earlier envoy versions are not implemented, so every function here refuses any other
// version with an *UnsupportedVersionError.
const (
	Version8 = 8

	MinVersion    = Version8
	LatestVersion = Version8
)

// Optional values: a pointer (nil = absent) for scalars, strings and structs; for optional<data>,
// the optional map of ToRivetMetadata and the optional parameter lists of SQLite statements, a
// nil slice is absent and a non-nil slice (even empty) is present. Decoders return non-nil
// empty slices for present empty values, so decode/encode round trips keep the difference.

// GatewayID identifies a gateway process (data[4]).
type GatewayID [4]byte

// RequestID identifies an in-flight request of a gateway (data[4]).
type RequestID [4]byte

// Header is one entry of a map<str><str>. Header lists keep the wire order; names must be
// unique (the encoder rejects duplicates, as bare-ts rejects them on decode).
type Header struct {
	Name, Value string
}

// MARK: top-level unions

// ToRivet is a message from the envoy to the engine: one of ToRivetMetadata, ToRivetEvents,
// ToRivetAckCommands, ToRivetStopping, ToRivetPong, ToRivetKvRequest, ToRivetTunnelMessage,
// ToRivetSqliteGetPagesRequest, ToRivetSqliteCommitRequest, ToRivetSqliteCommitStageBeginRequest,
// ToRivetSqliteCommitStageSegmentRequest, ToRivetSqliteCommitFinalizeRequest,
// ToRivetSqliteExecRequest, ToRivetSqliteExecuteRequest or ToRivetSqliteExecuteBatchRequest
// (tags 0 to 14).
type ToRivet interface {
	toRivetTag() uint64
	encode(e *encoder)
}

// ToEnvoy is a message from the engine to the envoy: one of ToEnvoyInit, ToEnvoyCommands,
// ToEnvoyAckEvents, ToEnvoyKvResponse, ToEnvoyTunnelMessage, ToEnvoyPing,
// ToEnvoySqliteGetPagesResponse, ToEnvoySqliteCommitResponse,
// ToEnvoySqliteCommitStageBeginResponse, ToEnvoySqliteCommitStageSegmentResponse,
// ToEnvoySqliteCommitFinalizeResponse, ToEnvoySqliteExecResponse, ToEnvoySqliteExecuteResponse
// or ToEnvoySqliteExecuteBatchResponse (tags 0 to 13).
type ToEnvoy interface {
	toEnvoyTag() uint64
	encode(e *encoder)
}

// ToEnvoyConn is what the engine sends, inside itself, to the node holding an envoy's socket:
// ToEnvoyConnPing (tag 0), ToEnvoyConnClose (1), ToEnvoyCommands (2), ToEnvoyAckEvents (3) or
// ToEnvoyTunnelMessage (4). It never crosses the envoy's WebSocket.
type ToEnvoyConn interface {
	toEnvoyConnTag() uint64
	encode(e *encoder)
}

// ToGateway is what the engine sends, inside itself, to a gateway: ToGatewayPong (tag 0) or
// ToRivetTunnelMessage (1).
type ToGateway interface {
	toGatewayTag() uint64
	encode(e *encoder)
}

// ToOutbound is the engine's outbound actor-start payload (for serverless pools, by its name and
// fields): ToOutboundActorStart (tag 0, the only member).
type ToOutbound interface {
	toOutboundTag() uint64
	encode(e *encoder)
}

// MARK: handshake and keepalive

// ProtocolMetadata is sent in ToEnvoyInit. Thresholds are milliseconds.
type ProtocolMetadata struct {
	EnvoyLostThreshold     int64
	ActorStopThreshold     int64
	MaxResponsePayloadSize uint64 // bytes
}

// ToEnvoyInit (ToEnvoy tag 0) is the engine's first frame; it carries no envoy id (the envoy
// named itself in the connect URL).
type ToEnvoyInit struct{ Metadata ProtocolMetadata }

// ActorName is a prepopulated actor name and its metadata (JSON text).
type ActorName struct {
	Name     string
	Metadata string
}

// ToRivetMetadata (ToRivet tag 0) is the envoy's answer to ToEnvoyInit.
type ToRivetMetadata struct {
	// PrepopulateActorNames is optional<map<str><ActorName>>: nil is absent.
	PrepopulateActorNames []ActorName
	Metadata              *string // JSON
}

// ToEnvoyPing (ToEnvoy tag 5) is the engine's keepalive; Ts is milliseconds.
type ToEnvoyPing struct{ Ts int64 }

// ToRivetPong (ToRivet tag 4) echoes the Ts of a ToEnvoyPing.
type ToRivetPong struct{ Ts int64 }

// ToRivetStopping (ToRivet tag 3, void) starts a graceful stop of the envoy.
type ToRivetStopping struct{}

// MARK: lifecycle

// ActorCheckpoint orders the events and commands of one actor generation.
type ActorCheckpoint struct {
	ActorID    string
	Generation uint32
	Index      int64
}

// StopCode is the enum of ActorStateStopped.
type StopCode uint8

const (
	StopCodeOK    StopCode = 0
	StopCodeError StopCode = 1
)

// ActorConfig is the configuration of an actor to start.
type ActorConfig struct {
	Name     string
	Key      *string
	CreateTs int64
	Input    []byte // optional<data>: nil is absent
}

// HibernatingRequest names a hibernated WebSocket to restore on start.
type HibernatingRequest struct {
	GatewayID GatewayID
	RequestID RequestID
}

// PreloadedKvEntry is one KV pair sent with a start command.
type PreloadedKvEntry struct {
	Key, Value []byte
	Metadata   KvMetadata
}

// PreloadedKv is the part of an actor's KV the engine sends with CommandStartActor, so that the
// actor starts without a round trip: the entries found, and the exact keys and prefixes that
// were looked up (a key asked for and absent from Entries does not exist).
type PreloadedKv struct {
	Entries           []PreloadedKvEntry
	RequestedGetKeys  [][]byte
	RequestedPrefixes [][]byte
}

// Command is CommandStartActor (tag 0) or CommandStopActor (tag 1). Encoded alone it is also
// the schema's ActorCommandKeyData (EncodeActorCommandKeyData).
type Command interface {
	commandTag() uint64
	encode(e *encoder)
}

// CommandStartActor starts an actor on the envoy.
type CommandStartActor struct {
	Config              ActorConfig
	HibernatingRequests []HibernatingRequest
	PreloadedKv         *PreloadedKv
}

// StopActorReason is the enum of CommandStopActor: why the engine stops the actor.
type StopActorReason uint8

const (
	StopActorReasonSleepIntent StopActorReason = 0 // the actor asked to sleep
	StopActorReasonStopIntent  StopActorReason = 1 // the actor asked to stop
	StopActorReasonDestroy     StopActorReason = 2 // destroyed through the API
	StopActorReasonGoingAway   StopActorReason = 3 // the envoy is stopping; the actor moves
	StopActorReasonLost        StopActorReason = 4 // the engine considers the actor lost
)

// CommandStopActor stops an actor.
type CommandStopActor struct{ Reason StopActorReason }

// CommandWrapper is one command of ToEnvoyCommands.
type CommandWrapper struct {
	Checkpoint ActorCheckpoint
	Inner      Command
}

// ToEnvoyCommands (ToEnvoy tag 1, ToEnvoyConn tag 2) carries commands.
type ToEnvoyCommands []CommandWrapper

// ActorIntent is ActorIntentSleep (tag 0) or ActorIntentStop (tag 1), both void.
type ActorIntent interface {
	intentTag() uint64
}

// ActorIntentSleep asks the engine to put the actor to sleep.
type ActorIntentSleep struct{}

// ActorIntentStop asks the engine to destroy the actor.
type ActorIntentStop struct{}

// ActorState is ActorStateRunning (tag 0, void) or ActorStateStopped (tag 1).
type ActorState interface {
	stateTag() uint64
	encode(e *encoder)
}

// ActorStateRunning reports that the actor is running.
type ActorStateRunning struct{}

// ActorStateStopped reports that the actor stopped.
type ActorStateStopped struct {
	Code    StopCode
	Message *string
}

// Event is EventActorIntent (tag 0), EventActorStateUpdate (1) or EventActorSetAlarm (2).
type Event interface {
	eventTag() uint64
	encode(e *encoder)
}

// EventActorIntent reports what the actor wants next.
type EventActorIntent struct{ Intent ActorIntent }

// EventActorStateUpdate reports a state change.
type EventActorStateUpdate struct{ State ActorState }

// EventActorSetAlarm sets (or, with nil, clears) the actor's alarm, in milliseconds.
type EventActorSetAlarm struct{ AlarmTs *int64 }

// EventWrapper is one event of ToRivetEvents.
type EventWrapper struct {
	Checkpoint ActorCheckpoint
	Inner      Event
}

// ToRivetEvents (ToRivet tag 1) carries events.
type ToRivetEvents []EventWrapper

// ToRivetAckCommands (ToRivet tag 2) acknowledges commands up to each checkpoint.
type ToRivetAckCommands struct {
	LastCommandCheckpoints []ActorCheckpoint
}

// ToEnvoyAckEvents (ToEnvoy tag 2, ToEnvoyConn tag 3) acknowledges events up to each checkpoint.
type ToEnvoyAckEvents struct {
	LastEventCheckpoints []ActorCheckpoint
}

// MARK: KV

// KvMetadata describes a stored KV value.
type KvMetadata struct {
	Version  []byte
	UpdateTs int64
}

// KvListQuery is KvListAllQuery (tag 0), KvListRangeQuery (1) or KvListPrefixQuery (2).
type KvListQuery interface {
	listQueryTag() uint64
	encode(e *encoder)
}

// KvListAllQuery (void) lists every key.
type KvListAllQuery struct{}

// KvListRangeQuery lists keys from Start to End (End excluded if Exclusive).
type KvListRangeQuery struct {
	Start, End []byte
	Exclusive  bool
}

// KvListPrefixQuery lists keys starting with Key.
type KvListPrefixQuery struct{ Key []byte }

// KvRequestData is the body of a ToRivetKvRequest: KvGetRequest (tag 0), KvListRequest (1),
// KvPutRequest (2), KvDeleteRequest (3), KvDeleteRangeRequest (4) or KvDropRequest (5).
type KvRequestData interface {
	kvRequestTag() uint64
	encode(e *encoder)
}

// KvGetRequest reads keys.
type KvGetRequest struct{ Keys [][]byte }

// KvListRequest lists keys.
type KvListRequest struct {
	Query   KvListQuery
	Reverse *bool
	Limit   *uint64
}

// KvPutRequest writes Keys[i] = Values[i].
type KvPutRequest struct {
	Keys, Values [][]byte
}

// KvDeleteRequest deletes keys.
type KvDeleteRequest struct{ Keys [][]byte }

// KvDeleteRangeRequest deletes the keys in [Start, End).
type KvDeleteRangeRequest struct {
	Start, End []byte
}

// KvDropRequest (void) deletes every key of the actor.
type KvDropRequest struct{}

// ToRivetKvRequest (ToRivet tag 5) is a KV operation of an actor.
type ToRivetKvRequest struct {
	ActorID   string
	RequestID uint32
	Data      KvRequestData
}

// KvResponseData is the body of a ToEnvoyKvResponse: KvErrorResponse (tag 0), KvGetResponse (1),
// KvListResponse (2), KvPutResponse (3), KvDeleteResponse (4) or KvDropResponse (5).
type KvResponseData interface {
	kvResponseTag() uint64
	encode(e *encoder)
}

// KvErrorResponse reports a failed KV request.
type KvErrorResponse struct{ Message string }

// KvGetResponse lists the keys found, their values and metadata.
type KvGetResponse struct {
	Keys, Values [][]byte
	Metadata     []KvMetadata
}

// KvListResponse lists the keys in a query, their values and metadata.
type KvListResponse struct {
	Keys, Values [][]byte
	Metadata     []KvMetadata
}

// KvPutResponse (void) acknowledges a put.
type KvPutResponse struct{}

// KvDeleteResponse (void) acknowledges a delete (also a delete-range).
type KvDeleteResponse struct{}

// KvDropResponse (void) acknowledges a drop.
type KvDropResponse struct{}

// ToEnvoyKvResponse (ToEnvoy tag 3) answers the ToRivetKvRequest with the same RequestID.
type ToEnvoyKvResponse struct {
	RequestID uint32
	Data      KvResponseData
}

// MARK: SQLite page store

// Each SQLite request of the envoy travels in a ToRivetSqlite…Request{RequestID, Data} and is
// answered by the ToEnvoySqlite…Response with the same RequestID, whose Data is either the
// request's …Ok value (tag 0) or a SqliteErrorResponse (tag 1). Page numbers (pgno) are u32,
// generations and transaction ids u64.

// SqliteDirtyPage is a page written by a commit.
type SqliteDirtyPage struct {
	Pgno  uint32
	Bytes []byte
}

// SqliteFetchedPage is a page read by SqliteGetPagesRequest; Bytes is optional<data>: nil if the
// page does not exist.
type SqliteFetchedPage struct {
	Pgno  uint32
	Bytes []byte
}

// SqliteErrorResponse is the error member (tag 1) of every SQLite response union, in the
// engine's error shape.
type SqliteErrorResponse struct {
	Group, Code, Message string
}

// SqliteGetPagesRequest reads pages of an actor's database, fenced on the expected generation
// and head transaction when given.
type SqliteGetPagesRequest struct {
	ActorID            string
	Pgnos              []uint32
	ExpectedGeneration *uint64
	ExpectedHeadTxid   *uint64
}

// ToRivetSqliteGetPagesRequest (ToRivet tag 7).
type ToRivetSqliteGetPagesRequest struct {
	RequestID uint32
	Data      SqliteGetPagesRequest
}

// SqliteGetPagesResponse is SqliteGetPagesOk (tag 0) or SqliteErrorResponse (tag 1).
type SqliteGetPagesResponse interface {
	sqliteGetPagesResponse()
	sqliteResponseTag() uint64
	encode(e *encoder)
}

// SqliteGetPagesOk returns the pages asked for and the head transaction.
type SqliteGetPagesOk struct {
	Pages    []SqliteFetchedPage
	HeadTxid *uint64
}

// ToEnvoySqliteGetPagesResponse (ToEnvoy tag 6).
type ToEnvoySqliteGetPagesResponse struct {
	RequestID uint32
	Data      SqliteGetPagesResponse
}

// SqliteCommitRequest writes pages in one transaction (the path for small commits).
type SqliteCommitRequest struct {
	ActorID            string
	DirtyPages         []SqliteDirtyPage
	DbSizePages        uint32
	NowMs              int64
	ExpectedGeneration *uint64
	ExpectedHeadTxid   *uint64
}

// ToRivetSqliteCommitRequest (ToRivet tag 8).
type ToRivetSqliteCommitRequest struct {
	RequestID uint32
	Data      SqliteCommitRequest
}

// SqliteCommitResponse is SqliteCommitOk (tag 0) or SqliteErrorResponse (tag 1).
type SqliteCommitResponse interface {
	sqliteCommitResponse()
	sqliteResponseTag() uint64
	encode(e *encoder)
}

// SqliteCommitOk reports the new head transaction.
type SqliteCommitOk struct{ HeadTxid *uint64 }

// ToEnvoySqliteCommitResponse (ToEnvoy tag 7).
type ToEnvoySqliteCommitResponse struct {
	RequestID uint32
	Data      SqliteCommitResponse
}

// A staged commit writes a commit too large for one transaction as shard-aligned segments
// (begin, segments, finalize); nothing staged is visible until finalize.

// SqliteCommitStageBeginRequest opens a staged commit, fenced before any bytes are sent.
type SqliteCommitStageBeginRequest struct {
	ActorID            string
	ExpectedGeneration *uint64
	ExpectedHeadTxid   *uint64
}

// ToRivetSqliteCommitStageBeginRequest (ToRivet tag 9).
type ToRivetSqliteCommitStageBeginRequest struct {
	RequestID uint32
	Data      SqliteCommitStageBeginRequest
}

// SqliteCommitStageBeginResponse is SqliteCommitStageBeginOk (tag 0) or SqliteErrorResponse (1).
type SqliteCommitStageBeginResponse interface {
	sqliteCommitStageBeginResponse()
	sqliteResponseTag() uint64
	encode(e *encoder)
}

// SqliteCommitStageBeginOk gives the transaction id the engine allocated (head + 1).
type SqliteCommitStageBeginOk struct{ Txid uint64 }

// ToEnvoySqliteCommitStageBeginResponse (ToEnvoy tag 8).
type ToEnvoySqliteCommitStageBeginResponse struct {
	RequestID uint32
	Data      SqliteCommitStageBeginResponse
}

// SqliteCommitStageSegmentRequest stages one segment; FirstPgno is shard-aligned and strictly
// ascending across a commit's segments.
type SqliteCommitStageSegmentRequest struct {
	ActorID            string
	ExpectedGeneration *uint64
	Txid               uint64
	FirstPgno          uint32
	DirtyPages         []SqliteDirtyPage
}

// ToRivetSqliteCommitStageSegmentRequest (ToRivet tag 10).
type ToRivetSqliteCommitStageSegmentRequest struct {
	RequestID uint32
	Data      SqliteCommitStageSegmentRequest
}

// SqliteCommitStageSegmentResponse is SqliteCommitStageSegmentOk (tag 0) or SqliteErrorResponse (1).
type SqliteCommitStageSegmentResponse interface {
	sqliteCommitStageSegmentResponse()
	sqliteResponseTag() uint64
	encode(e *encoder)
}

// SqliteCommitStageSegmentOk reports the bytes staged so far.
type SqliteCommitStageSegmentOk struct{ StagedBytes uint64 }

// ToEnvoySqliteCommitStageSegmentResponse (ToEnvoy tag 9).
type ToEnvoySqliteCommitStageSegmentResponse struct {
	RequestID uint32
	Data      SqliteCommitStageSegmentResponse
}

// SqliteCommitFinalizeRequest publishes a staged commit; Txid must still be head + 1 and
// SegmentFirstPgnos lists exactly the segments staged.
type SqliteCommitFinalizeRequest struct {
	ActorID            string
	ExpectedGeneration *uint64
	Txid               uint64
	NewDbSizePages     uint32
	NowMs              int64
	SegmentFirstPgnos  []uint32
}

// ToRivetSqliteCommitFinalizeRequest (ToRivet tag 11).
type ToRivetSqliteCommitFinalizeRequest struct {
	RequestID uint32
	Data      SqliteCommitFinalizeRequest
}

// SqliteCommitFinalizeResponse is SqliteCommitFinalizeOk (tag 0) or SqliteErrorResponse (1).
type SqliteCommitFinalizeResponse interface {
	sqliteCommitFinalizeResponse()
	sqliteResponseTag() uint64
	encode(e *encoder)
}

// SqliteCommitFinalizeOk reports the new head transaction.
type SqliteCommitFinalizeOk struct{ HeadTxid *uint64 }

// ToEnvoySqliteCommitFinalizeResponse (ToEnvoy tag 10).
type ToEnvoySqliteCommitFinalizeResponse struct {
	RequestID uint32
	Data      SqliteCommitFinalizeResponse
}

// MARK: SQLite statements

// SqliteValue is a bound parameter or a result column: SqliteValueNull (tag 0),
// SqliteValueInteger (1), SqliteValueFloat (2), SqliteValueText (3) or SqliteValueBlob (4). The
// schema declares SqliteBindParam and SqliteColumnValue as two unions with these same members
// and tags; one Go type serves both.
type SqliteValue interface {
	sqliteValueTag() uint64
	encode(e *encoder)
}

// SqliteValueNull (void) is SQL NULL.
type SqliteValueNull struct{}

// SqliteValueInteger is a 64-bit integer.
type SqliteValueInteger struct{ Value int64 }

// SqliteValueFloat is a REAL, carried as data[8]: the IEEE 754 binary64 bits in big-endian
// order, as the Rivet engine writes them (unlike BARE's f64, which is little-endian). The
// bytes are kept as sent, so any bit pattern (a NaN payload too) round-trips; see
// SqliteFloat and Float64.
type SqliteValueFloat struct{ Value [8]byte }

// SqliteFloat returns the SqliteValueFloat of f.
func SqliteFloat(f float64) SqliteValueFloat {
	var v SqliteValueFloat
	binary.BigEndian.PutUint64(v.Value[:], math.Float64bits(f))
	return v
}

// Float64 returns the number v holds.
func (v SqliteValueFloat) Float64() float64 {
	return math.Float64frombits(binary.BigEndian.Uint64(v.Value[:]))
}

// SqliteValueText is TEXT.
type SqliteValueText struct{ Value string }

// SqliteValueBlob is a BLOB.
type SqliteValueBlob struct{ Value []byte }

// SqliteQueryResult is the result of SqliteExecRequest.
type SqliteQueryResult struct {
	Columns []string
	Rows    [][]SqliteValue
}

// SqliteExecuteResult is the result of one parameterized statement.
type SqliteExecuteResult struct {
	Columns         []string
	Rows            [][]SqliteValue
	Changes         int64
	LastInsertRowID *int64
}

// SqliteExecRequest runs SQL text (possibly several statements) without parameters.
type SqliteExecRequest struct {
	NamespaceID string
	ActorID     string
	Generation  uint64
	SQL         string
}

// ToRivetSqliteExecRequest (ToRivet tag 12).
type ToRivetSqliteExecRequest struct {
	RequestID uint32
	Data      SqliteExecRequest
}

// SqliteExecuteRequest runs one statement. Params is optional<list<SqliteBindParam>>: nil is
// absent.
type SqliteExecuteRequest struct {
	NamespaceID string
	ActorID     string
	Generation  uint64
	SQL         string
	Params      []SqliteValue
}

// ToRivetSqliteExecuteRequest (ToRivet tag 13).
type ToRivetSqliteExecuteRequest struct {
	RequestID uint32
	Data      SqliteExecuteRequest
}

// SqliteBatchStatement is one statement of a batch; Params as in SqliteExecuteRequest.
type SqliteBatchStatement struct {
	SQL    string
	Params []SqliteValue
}

// SqliteExecuteBatchRequest runs statements in order.
type SqliteExecuteBatchRequest struct {
	NamespaceID string
	ActorID     string
	Generation  uint64
	Statements  []SqliteBatchStatement
}

// ToRivetSqliteExecuteBatchRequest (ToRivet tag 14).
type ToRivetSqliteExecuteBatchRequest struct {
	RequestID uint32
	Data      SqliteExecuteBatchRequest
}

// SqliteExecResponse is SqliteExecOk (tag 0) or SqliteErrorResponse (1).
type SqliteExecResponse interface {
	sqliteExecResponse()
	sqliteResponseTag() uint64
	encode(e *encoder)
}

// SqliteExecOk carries the rows of an exec.
type SqliteExecOk struct{ Result SqliteQueryResult }

// ToEnvoySqliteExecResponse (ToEnvoy tag 11).
type ToEnvoySqliteExecResponse struct {
	RequestID uint32
	Data      SqliteExecResponse
}

// SqliteExecuteResponse is SqliteExecuteOk (tag 0) or SqliteErrorResponse (1).
type SqliteExecuteResponse interface {
	sqliteExecuteResponse()
	sqliteResponseTag() uint64
	encode(e *encoder)
}

// SqliteExecuteOk carries the result of a statement.
type SqliteExecuteOk struct{ Result SqliteExecuteResult }

// ToEnvoySqliteExecuteResponse (ToEnvoy tag 12).
type ToEnvoySqliteExecuteResponse struct {
	RequestID uint32
	Data      SqliteExecuteResponse
}

// SqliteExecuteBatchResponse is SqliteExecuteBatchOk (tag 0) or SqliteErrorResponse (1).
type SqliteExecuteBatchResponse interface {
	sqliteExecuteBatchResponse()
	sqliteResponseTag() uint64
	encode(e *encoder)
}

// SqliteExecuteBatchOk carries one result per statement.
type SqliteExecuteBatchOk struct{ Results []SqliteExecuteResult }

// ToEnvoySqliteExecuteBatchResponse (ToEnvoy tag 13).
type ToEnvoySqliteExecuteBatchResponse struct {
	RequestID uint32
	Data      SqliteExecuteBatchResponse
}

// MARK: tunnel

// MessageID identifies one tunnel message of a request.
type MessageID struct {
	GatewayID    GatewayID
	RequestID    RequestID
	MessageIndex uint16
}

// HttpStreamAbortReasonKind is the enum of HttpStreamAbortReason.
type HttpStreamAbortReasonKind uint8

const (
	HttpStreamAbortUnknown       HttpStreamAbortReasonKind = 0
	HttpStreamAbortCancelled     HttpStreamAbortReasonKind = 1
	HttpStreamAbortHandlerError  HttpStreamAbortReasonKind = 2
	HttpStreamAbortInternalError HttpStreamAbortReasonKind = 3
)

// HttpStreamAbortReason says why an HTTP request or response stream was aborted.
type HttpStreamAbortReason struct {
	Kind   HttpStreamAbortReasonKind
	Detail *string
}

// ToEnvoyTunnelMessageKind is ToEnvoyRequestStart (tag 0), ToEnvoyRequestChunk (1),
// ToEnvoyRequestAbort (2), ToEnvoyRequestBodyCancel (3), ToEnvoyResponseBodyWindowUpdate (4),
// ToEnvoyWebSocketOpen (5), ToEnvoyWebSocketMessage (6) or ToEnvoyWebSocketClose (7).
type ToEnvoyTunnelMessageKind interface {
	toEnvoyKindTag() uint64
	encode(e *encoder)
}

// ToEnvoyRequestStart opens an HTTP request to an actor. Path includes the query string.
type ToEnvoyRequestStart struct {
	ActorID string
	// ActorGeneration is the exact generation the gateway chose; nil routes to the highest
	// live generation (older gateways).
	ActorGeneration *uint32
	Method          string
	Path            string
	Headers         []Header
	Body            []byte // optional<data>: nil is absent
	Stream          bool
	ResponseStream  bool // the gateway accepts a streamed response body
}

// ToEnvoyRequestChunk is a piece of a streamed request body.
type ToEnvoyRequestChunk struct {
	Body   []byte
	Finish bool
}

// ToEnvoyRequestAbort aborts a request. The gateway sets ActorID and ActorGeneration so that
// the envoy can drop a RequestStart that arrives late.
type ToEnvoyRequestAbort struct {
	ActorID         *string
	ActorGeneration *uint32
	Reason          HttpStreamAbortReason
}

// ToEnvoyRequestBodyCancel (void) stops the request body without cancelling the response.
type ToEnvoyRequestBodyCancel struct{}

// ToEnvoyResponseBodyWindowUpdate returns response-body credit: the cumulative bytes the
// gateway's client consumed.
type ToEnvoyResponseBodyWindowUpdate struct{ ConsumedBytes uint64 }

// ToEnvoyWebSocketOpen opens a WebSocket to an actor.
type ToEnvoyWebSocketOpen struct {
	ActorID         string
	ActorGeneration *uint32 // as in ToEnvoyRequestStart
	Path            string
	Headers         []Header
}

// ToEnvoyWebSocketMessage is a WebSocket message to the actor.
type ToEnvoyWebSocketMessage struct {
	Data   []byte
	Binary bool
}

// ToEnvoyWebSocketClose closes a WebSocket to the actor.
type ToEnvoyWebSocketClose struct {
	Code   *uint16
	Reason *string
}

// ToEnvoyTunnelMessage (ToEnvoy tag 4, ToEnvoyConn tag 4) is gateway traffic to an actor.
type ToEnvoyTunnelMessage struct {
	MessageID   MessageID
	MessageKind ToEnvoyTunnelMessageKind
}

// ToRivetTunnelMessageKind is ToRivetResponseStart (tag 0), ToRivetResponseChunk (1),
// ToRivetResponseAbort (2), ToRivetRequestBodyWindowUpdate (3), ToRivetRequestBodyCancel (4),
// ToRivetWebSocketOpen (5), ToRivetWebSocketMessage (6), ToRivetWebSocketMessageAck (7) or
// ToRivetWebSocketClose (8).
type ToRivetTunnelMessageKind interface {
	toRivetKindTag() uint64
	encode(e *encoder)
}

// ToRivetResponseStart is the actor's HTTP response.
type ToRivetResponseStart struct {
	Status  uint16
	Headers []Header
	Body    []byte // optional<data>: nil is absent
	Stream  bool
}

// ToRivetResponseChunk is a piece of a streamed response body.
type ToRivetResponseChunk struct {
	Body   []byte
	Finish bool
}

// ToRivetResponseAbort aborts a response.
type ToRivetResponseAbort struct{ Reason HttpStreamAbortReason }

// ToRivetRequestBodyWindowUpdate returns request-body credit: the cumulative bytes the actor's
// handler consumed.
type ToRivetRequestBodyWindowUpdate struct{ ConsumedBytes uint64 }

// ToRivetRequestBodyCancel (void): the actor wants no more request body; the response may go on.
type ToRivetRequestBodyCancel struct{}

// ToRivetWebSocketOpen accepts a WebSocket.
type ToRivetWebSocketOpen struct{ CanHibernate bool }

// ToRivetWebSocketMessage is a WebSocket message from the actor.
type ToRivetWebSocketMessage struct {
	Data   []byte
	Binary bool
}

// ToRivetWebSocketMessageAck acknowledges gateway messages up to Index (hibernation).
type ToRivetWebSocketMessageAck struct{ Index uint16 }

// ToRivetWebSocketClose closes a WebSocket from the actor side.
type ToRivetWebSocketClose struct {
	Code      *uint16
	Reason    *string
	Hibernate bool
}

// ToRivetTunnelMessage (ToRivet tag 6, ToGateway tag 1) is actor traffic back to the gateway.
type ToRivetTunnelMessage struct {
	MessageID   MessageID
	MessageKind ToRivetTunnelMessageKind
}

// MARK: engine-internal

// ToEnvoyConnPing (ToEnvoyConn tag 0) is a gateway's ping of a tunnelled request, sent to the
// node holding the envoy's socket and answered with ToGatewayPong.
type ToEnvoyConnPing struct {
	GatewayID GatewayID
	RequestID RequestID
	Ts        int64
}

// ToEnvoyConnClose (ToEnvoyConn tag 1, void) asks the node holding the envoy's socket to
// close it.
type ToEnvoyConnClose struct{}

// ToGatewayPong (ToGateway tag 0) answers a ToEnvoyConnPing.
type ToGatewayPong struct {
	RequestID RequestID
	Ts        int64
}

// ToOutboundActorStart (ToOutbound tag 0) names the actor to start and the pool to start it on.
type ToOutboundActorStart struct {
	NamespaceID string
	PoolName    string
	Checkpoint  ActorCheckpoint
	ActorConfig ActorConfig
}

// Union tags (declaration order in the schema).

func (ToRivetMetadata) toRivetTag() uint64                        { return 0 }
func (ToRivetEvents) toRivetTag() uint64                          { return 1 }
func (ToRivetAckCommands) toRivetTag() uint64                     { return 2 }
func (ToRivetStopping) toRivetTag() uint64                        { return 3 }
func (ToRivetPong) toRivetTag() uint64                            { return 4 }
func (ToRivetKvRequest) toRivetTag() uint64                       { return 5 }
func (ToRivetTunnelMessage) toRivetTag() uint64                   { return 6 }
func (ToRivetSqliteGetPagesRequest) toRivetTag() uint64           { return 7 }
func (ToRivetSqliteCommitRequest) toRivetTag() uint64             { return 8 }
func (ToRivetSqliteCommitStageBeginRequest) toRivetTag() uint64   { return 9 }
func (ToRivetSqliteCommitStageSegmentRequest) toRivetTag() uint64 { return 10 }
func (ToRivetSqliteCommitFinalizeRequest) toRivetTag() uint64     { return 11 }
func (ToRivetSqliteExecRequest) toRivetTag() uint64               { return 12 }
func (ToRivetSqliteExecuteRequest) toRivetTag() uint64            { return 13 }
func (ToRivetSqliteExecuteBatchRequest) toRivetTag() uint64       { return 14 }

func (ToEnvoyInit) toEnvoyTag() uint64                             { return 0 }
func (ToEnvoyCommands) toEnvoyTag() uint64                         { return 1 }
func (ToEnvoyAckEvents) toEnvoyTag() uint64                        { return 2 }
func (ToEnvoyKvResponse) toEnvoyTag() uint64                       { return 3 }
func (ToEnvoyTunnelMessage) toEnvoyTag() uint64                    { return 4 }
func (ToEnvoyPing) toEnvoyTag() uint64                             { return 5 }
func (ToEnvoySqliteGetPagesResponse) toEnvoyTag() uint64           { return 6 }
func (ToEnvoySqliteCommitResponse) toEnvoyTag() uint64             { return 7 }
func (ToEnvoySqliteCommitStageBeginResponse) toEnvoyTag() uint64   { return 8 }
func (ToEnvoySqliteCommitStageSegmentResponse) toEnvoyTag() uint64 { return 9 }
func (ToEnvoySqliteCommitFinalizeResponse) toEnvoyTag() uint64     { return 10 }
func (ToEnvoySqliteExecResponse) toEnvoyTag() uint64               { return 11 }
func (ToEnvoySqliteExecuteResponse) toEnvoyTag() uint64            { return 12 }
func (ToEnvoySqliteExecuteBatchResponse) toEnvoyTag() uint64       { return 13 }

func (ToEnvoyConnPing) toEnvoyConnTag() uint64      { return 0 }
func (ToEnvoyConnClose) toEnvoyConnTag() uint64     { return 1 }
func (ToEnvoyCommands) toEnvoyConnTag() uint64      { return 2 }
func (ToEnvoyAckEvents) toEnvoyConnTag() uint64     { return 3 }
func (ToEnvoyTunnelMessage) toEnvoyConnTag() uint64 { return 4 }

func (ToGatewayPong) toGatewayTag() uint64        { return 0 }
func (ToRivetTunnelMessage) toGatewayTag() uint64 { return 1 }

func (ToOutboundActorStart) toOutboundTag() uint64 { return 0 }

func (CommandStartActor) commandTag() uint64 { return 0 }
func (CommandStopActor) commandTag() uint64  { return 1 }

func (ActorIntentSleep) intentTag() uint64 { return 0 }
func (ActorIntentStop) intentTag() uint64  { return 1 }

func (ActorStateRunning) stateTag() uint64 { return 0 }
func (ActorStateStopped) stateTag() uint64 { return 1 }

func (EventActorIntent) eventTag() uint64      { return 0 }
func (EventActorStateUpdate) eventTag() uint64 { return 1 }
func (EventActorSetAlarm) eventTag() uint64    { return 2 }

func (KvListAllQuery) listQueryTag() uint64    { return 0 }
func (KvListRangeQuery) listQueryTag() uint64  { return 1 }
func (KvListPrefixQuery) listQueryTag() uint64 { return 2 }

func (KvGetRequest) kvRequestTag() uint64         { return 0 }
func (KvListRequest) kvRequestTag() uint64        { return 1 }
func (KvPutRequest) kvRequestTag() uint64         { return 2 }
func (KvDeleteRequest) kvRequestTag() uint64      { return 3 }
func (KvDeleteRangeRequest) kvRequestTag() uint64 { return 4 }
func (KvDropRequest) kvRequestTag() uint64        { return 5 }

func (KvErrorResponse) kvResponseTag() uint64  { return 0 }
func (KvGetResponse) kvResponseTag() uint64    { return 1 }
func (KvListResponse) kvResponseTag() uint64   { return 2 }
func (KvPutResponse) kvResponseTag() uint64    { return 3 }
func (KvDeleteResponse) kvResponseTag() uint64 { return 4 }
func (KvDropResponse) kvResponseTag() uint64   { return 5 }

// Every SQLite response union is {…Ok = 0, SqliteErrorResponse = 1}; the marker methods keep
// one request's Ok out of another's response.

func (SqliteGetPagesOk) sqliteResponseTag() uint64           { return 0 }
func (SqliteCommitOk) sqliteResponseTag() uint64             { return 0 }
func (SqliteCommitStageBeginOk) sqliteResponseTag() uint64   { return 0 }
func (SqliteCommitStageSegmentOk) sqliteResponseTag() uint64 { return 0 }
func (SqliteCommitFinalizeOk) sqliteResponseTag() uint64     { return 0 }
func (SqliteExecOk) sqliteResponseTag() uint64               { return 0 }
func (SqliteExecuteOk) sqliteResponseTag() uint64            { return 0 }
func (SqliteExecuteBatchOk) sqliteResponseTag() uint64       { return 0 }
func (SqliteErrorResponse) sqliteResponseTag() uint64        { return 1 }

func (SqliteGetPagesOk) sqliteGetPagesResponse()                     {}
func (SqliteCommitOk) sqliteCommitResponse()                         {}
func (SqliteCommitStageBeginOk) sqliteCommitStageBeginResponse()     {}
func (SqliteCommitStageSegmentOk) sqliteCommitStageSegmentResponse() {}
func (SqliteCommitFinalizeOk) sqliteCommitFinalizeResponse()         {}
func (SqliteExecOk) sqliteExecResponse()                             {}
func (SqliteExecuteOk) sqliteExecuteResponse()                       {}
func (SqliteExecuteBatchOk) sqliteExecuteBatchResponse()             {}
func (SqliteErrorResponse) sqliteGetPagesResponse()                  {}
func (SqliteErrorResponse) sqliteCommitResponse()                    {}
func (SqliteErrorResponse) sqliteCommitStageBeginResponse()          {}
func (SqliteErrorResponse) sqliteCommitStageSegmentResponse()        {}
func (SqliteErrorResponse) sqliteCommitFinalizeResponse()            {}
func (SqliteErrorResponse) sqliteExecResponse()                      {}
func (SqliteErrorResponse) sqliteExecuteResponse()                   {}
func (SqliteErrorResponse) sqliteExecuteBatchResponse()              {}

func (SqliteValueNull) sqliteValueTag() uint64    { return 0 }
func (SqliteValueInteger) sqliteValueTag() uint64 { return 1 }
func (SqliteValueFloat) sqliteValueTag() uint64   { return 2 }
func (SqliteValueText) sqliteValueTag() uint64    { return 3 }
func (SqliteValueBlob) sqliteValueTag() uint64    { return 4 }

func (ToEnvoyRequestStart) toEnvoyKindTag() uint64             { return 0 }
func (ToEnvoyRequestChunk) toEnvoyKindTag() uint64             { return 1 }
func (ToEnvoyRequestAbort) toEnvoyKindTag() uint64             { return 2 }
func (ToEnvoyRequestBodyCancel) toEnvoyKindTag() uint64        { return 3 }
func (ToEnvoyResponseBodyWindowUpdate) toEnvoyKindTag() uint64 { return 4 }
func (ToEnvoyWebSocketOpen) toEnvoyKindTag() uint64            { return 5 }
func (ToEnvoyWebSocketMessage) toEnvoyKindTag() uint64         { return 6 }
func (ToEnvoyWebSocketClose) toEnvoyKindTag() uint64           { return 7 }

func (ToRivetResponseStart) toRivetKindTag() uint64           { return 0 }
func (ToRivetResponseChunk) toRivetKindTag() uint64           { return 1 }
func (ToRivetResponseAbort) toRivetKindTag() uint64           { return 2 }
func (ToRivetRequestBodyWindowUpdate) toRivetKindTag() uint64 { return 3 }
func (ToRivetRequestBodyCancel) toRivetKindTag() uint64       { return 4 }
func (ToRivetWebSocketOpen) toRivetKindTag() uint64           { return 5 }
func (ToRivetWebSocketMessage) toRivetKindTag() uint64        { return 6 }
func (ToRivetWebSocketMessageAck) toRivetKindTag() uint64     { return 7 }
func (ToRivetWebSocketClose) toRivetKindTag() uint64          { return 8 }
