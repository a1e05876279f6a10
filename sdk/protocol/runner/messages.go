package runner

// Protocol versions this package speaks. A WebSocket frame carries one bare ToServer or ToClient
// value with no version prefix: the version is negotiated in the connect URL
// (protocol_version=N), and both sides encode every frame in it.
//
// They differ in two places only:
//   - v5: ProtocolMetadata has only RunnerLostThreshold; v6 and v7 add ActorStopThreshold and
//     ServerlessDrainGracePeriod.
//   - v7 inserts KvDeleteRangeRequest at tag 4 of KvRequestData, moving KvDropRequest from 4 to 5;
//     v5 and v6 have no KvDeleteRangeRequest.
const (
	Version5 = 5
	Version6 = 6
	Version7 = 7

	MinVersion    = Version5
	LatestVersion = Version7
)

// Optional values: a pointer (nil = absent) for scalars and strings; for optional<data> and the
// optional map of ToServerInit, a nil slice is absent and a non-nil slice (even empty) is present.
// Decoders return non-nil empty slices for present empty values, so decode/encode round trips
// keep the difference.

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

// ToServer is a message from the runner to the engine: one of ToServerInit, ToServerEvents,
// ToServerAckCommands, ToServerStopping, ToServerPong, ToServerKvRequest, ToServerTunnelMessage.
type ToServer interface {
	toServerTag() uint64
	encode(e *encoder)
}

// ToClient is a message from the engine to the runner: one of ToClientInit, ToClientCommands,
// ToClientAckEvents, ToClientKvResponse, ToClientTunnelMessage, ToClientPing.
type ToClient interface {
	toClientTag() uint64
	encode(e *encoder)
}

// MARK: handshake and keepalive

// ActorName is a prepopulated actor name and its metadata (JSON text).
type ActorName struct {
	Name     string
	Metadata string
}

// ToServerInit (ToServer tag 0) is the runner's first frame.
type ToServerInit struct {
	Name       string // runner (pool) name
	Version    uint32 // app version
	TotalSlots uint32
	// PrepopulateActorNames is optional<map<str><ActorName>>: nil is absent.
	PrepopulateActorNames []ActorName
	Metadata              *string // JSON
}

// ProtocolMetadata is sent in ToClientInit. Times are milliseconds. v5 carries only
// RunnerLostThreshold: encoding at v5 drops the other fields and decoding leaves them zero.
type ProtocolMetadata struct {
	RunnerLostThreshold        int64
	ActorStopThreshold         int64  // v6+
	ServerlessDrainGracePeriod *int64 // v6+
}

// ToClientInit (ToClient tag 0) answers ToServerInit.
type ToClientInit struct {
	RunnerID string
	Metadata ProtocolMetadata
}

// ToClientPing (ToClient tag 5) is the engine's keepalive; Ts is milliseconds.
type ToClientPing struct{ Ts int64 }

// ToServerPong (ToServer tag 4) echoes the Ts of a ToClientPing.
type ToServerPong struct{ Ts int64 }

// ToServerStopping (ToServer tag 3, void) starts a graceful drain of the runner.
type ToServerStopping struct{}

// MARK: lifecycle

// ActorCheckpoint orders the events and commands of one actor generation.
type ActorCheckpoint struct {
	ActorID    string
	Generation uint32
	Index      int64
}

// StopCode is the enum of ActorStateStopped.
type StopCode uint64

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

// Command is CommandStartActor (tag 0) or CommandStopActor (tag 1).
type Command interface {
	commandTag() uint64
	encode(e *encoder)
}

// CommandStartActor starts an actor on the runner.
type CommandStartActor struct {
	Config              ActorConfig
	HibernatingRequests []HibernatingRequest
}

// CommandStopActor (void) stops an actor.
type CommandStopActor struct{}

// CommandWrapper is one command of ToClientCommands.
type CommandWrapper struct {
	Checkpoint ActorCheckpoint
	Inner      Command
}

// ToClientCommands (ToClient tag 1) carries commands.
type ToClientCommands []CommandWrapper

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

// EventWrapper is one event of ToServerEvents.
type EventWrapper struct {
	Checkpoint ActorCheckpoint
	Inner      Event
}

// ToServerEvents (ToServer tag 1) carries events.
type ToServerEvents []EventWrapper

// ToServerAckCommands (ToServer tag 2) acknowledges commands up to each checkpoint.
type ToServerAckCommands struct {
	LastCommandCheckpoints []ActorCheckpoint
}

// ToClientAckEvents (ToClient tag 2) acknowledges events up to each checkpoint.
type ToClientAckEvents struct {
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

// KvRequestData is the body of a ToServerKvRequest: KvGetRequest (tag 0), KvListRequest (1),
// KvPutRequest (2), KvDeleteRequest (3), KvDeleteRangeRequest (4, v7 only) or KvDropRequest
// (5 in v7, 4 in v5 and v6).
type KvRequestData interface {
	kvRequestTag() uint64 // the v7 tag
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

// KvDeleteRangeRequest deletes the keys in [Start, End). Protocol v7 only.
type KvDeleteRangeRequest struct {
	Start, End []byte
}

// KvDropRequest (void) deletes every key of the actor.
type KvDropRequest struct{}

// ToServerKvRequest (ToServer tag 5) is a KV operation of an actor.
type ToServerKvRequest struct {
	ActorID   string
	RequestID uint32
	Data      KvRequestData
}

// KvResponseData is the body of a ToClientKvResponse: KvErrorResponse (tag 0), KvGetResponse (1),
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

// ToClientKvResponse (ToClient tag 3) answers the ToServerKvRequest with the same RequestID.
type ToClientKvResponse struct {
	RequestID uint32
	Data      KvResponseData
}

// MARK: tunnel

// MessageID identifies one tunnel message of a request.
type MessageID struct {
	GatewayID    GatewayID
	RequestID    RequestID
	MessageIndex uint16
}

// ToClientTunnelMessageKind is ToClientRequestStart (tag 0), ToClientRequestChunk (1),
// ToClientRequestAbort (2), ToClientWebSocketOpen (3), ToClientWebSocketMessage (4) or
// ToClientWebSocketClose (5).
type ToClientTunnelMessageKind interface {
	toClientKindTag() uint64
	encode(e *encoder)
}

// ToClientRequestStart opens an HTTP request to an actor. Path includes the query string.
type ToClientRequestStart struct {
	ActorID string
	Method  string
	Path    string
	Headers []Header
	Body    []byte // optional<data>: nil is absent
	Stream  bool
}

// ToClientRequestChunk is a piece of a streamed request body.
type ToClientRequestChunk struct {
	Body   []byte
	Finish bool
}

// ToClientRequestAbort (void) aborts a request.
type ToClientRequestAbort struct{}

// ToClientWebSocketOpen opens a WebSocket to an actor.
type ToClientWebSocketOpen struct {
	ActorID string
	Path    string
	Headers []Header
}

// ToClientWebSocketMessage is a WebSocket message to the actor.
type ToClientWebSocketMessage struct {
	Data   []byte
	Binary bool
}

// ToClientWebSocketClose closes a WebSocket to the actor.
type ToClientWebSocketClose struct {
	Code   *uint16
	Reason *string
}

// ToClientTunnelMessage (ToClient tag 4) is gateway traffic to an actor.
type ToClientTunnelMessage struct {
	MessageID   MessageID
	MessageKind ToClientTunnelMessageKind
}

// ToServerTunnelMessageKind is ToServerResponseStart (tag 0), ToServerResponseChunk (1),
// ToServerResponseAbort (2), ToServerWebSocketOpen (3), ToServerWebSocketMessage (4),
// ToServerWebSocketMessageAck (5) or ToServerWebSocketClose (6).
type ToServerTunnelMessageKind interface {
	toServerKindTag() uint64
	encode(e *encoder)
}

// ToServerResponseStart is the actor's HTTP response.
type ToServerResponseStart struct {
	Status  uint16
	Headers []Header
	Body    []byte // optional<data>: nil is absent
	Stream  bool
}

// ToServerResponseChunk is a piece of a streamed response body.
type ToServerResponseChunk struct {
	Body   []byte
	Finish bool
}

// ToServerResponseAbort (void) aborts a response.
type ToServerResponseAbort struct{}

// ToServerWebSocketOpen accepts a WebSocket.
type ToServerWebSocketOpen struct{ CanHibernate bool }

// ToServerWebSocketMessage is a WebSocket message from the actor.
type ToServerWebSocketMessage struct {
	Data   []byte
	Binary bool
}

// ToServerWebSocketMessageAck acknowledges gateway messages up to Index (hibernation).
type ToServerWebSocketMessageAck struct{ Index uint16 }

// ToServerWebSocketClose closes a WebSocket from the actor side.
type ToServerWebSocketClose struct {
	Code      *uint16
	Reason    *string
	Hibernate bool
}

// ToServerTunnelMessage (ToServer tag 6) is actor traffic back to the gateway.
type ToServerTunnelMessage struct {
	MessageID   MessageID
	MessageKind ToServerTunnelMessageKind
}

// MARK: serverless

// ToServerlessServerInit (ToServerlessServer tag 0) is the payload a serverless runner emits in
// its SSE start stream, framed by EncodeServerlessInit.
type ToServerlessServerInit struct {
	RunnerID              string
	RunnerProtocolVersion uint16
}

// Union tags (declaration order in the schema).

func (ToServerInit) toServerTag() uint64          { return 0 }
func (ToServerEvents) toServerTag() uint64        { return 1 }
func (ToServerAckCommands) toServerTag() uint64   { return 2 }
func (ToServerStopping) toServerTag() uint64      { return 3 }
func (ToServerPong) toServerTag() uint64          { return 4 }
func (ToServerKvRequest) toServerTag() uint64     { return 5 }
func (ToServerTunnelMessage) toServerTag() uint64 { return 6 }

func (ToClientInit) toClientTag() uint64          { return 0 }
func (ToClientCommands) toClientTag() uint64      { return 1 }
func (ToClientAckEvents) toClientTag() uint64     { return 2 }
func (ToClientKvResponse) toClientTag() uint64    { return 3 }
func (ToClientTunnelMessage) toClientTag() uint64 { return 4 }
func (ToClientPing) toClientTag() uint64          { return 5 }

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

func (ToClientRequestStart) toClientKindTag() uint64     { return 0 }
func (ToClientRequestChunk) toClientKindTag() uint64     { return 1 }
func (ToClientRequestAbort) toClientKindTag() uint64     { return 2 }
func (ToClientWebSocketOpen) toClientKindTag() uint64    { return 3 }
func (ToClientWebSocketMessage) toClientKindTag() uint64 { return 4 }
func (ToClientWebSocketClose) toClientKindTag() uint64   { return 5 }

func (ToServerResponseStart) toServerKindTag() uint64       { return 0 }
func (ToServerResponseChunk) toServerKindTag() uint64       { return 1 }
func (ToServerResponseAbort) toServerKindTag() uint64       { return 2 }
func (ToServerWebSocketOpen) toServerKindTag() uint64       { return 3 }
func (ToServerWebSocketMessage) toServerKindTag() uint64    { return 4 }
func (ToServerWebSocketMessageAck) toServerKindTag() uint64 { return 5 }
func (ToServerWebSocketClose) toServerKindTag() uint64      { return 6 }
