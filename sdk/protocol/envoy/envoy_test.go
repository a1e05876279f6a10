package envoy

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/berthhq/berth/sdk/bare"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func ptr[T any](v T) *T { return &v }

var (
	gw  = GatewayID{1, 2, 3, 4}
	req = RequestID{0x0a, 0x0b, 0x0c, 0x0d}
	cp  = ActorCheckpoint{ActorID: "actor-é", Generation: 7, Index: 1 << 40}
	mid = MessageID{GatewayID: gw, RequestID: req, MessageIndex: 65535}
	md  = []KvMetadata{{Version: []byte("2.3.19"), UpdateTs: 1700000000000}, {Version: []byte{}, UpdateTs: -1}}
)

var sqlValues = []SqliteValue{
	SqliteValueNull{},
	SqliteValueInteger{Value: math.MinInt64},
	SqliteFloat(-0.25),
	SqliteValueFloat{Value: [8]byte{0x7f, 0xf8, 0, 0, 0, 0, 0, 1}},
	SqliteValueText{Value: "héllo"},
	SqliteValueBlob{Value: []byte{}},
}

var sqlErr = SqliteErrorResponse{Group: "sqlite", Code: "fence_mismatch", Message: "generation 4"}

var execResult = SqliteExecuteResult{
	Columns:         []string{"id", ""},
	Rows:            [][]SqliteValue{sqlValues, {}},
	Changes:         -1,
	LastInsertRowID: ptr(int64(42)),
}

// allToRivet … allCommands hold every message and every union member with non-trivial values.
func allToRivet() []ToRivet {
	kv := func(d KvRequestData) ToRivet { return ToRivetKvRequest{ActorID: "a9", RequestID: 300, Data: d} }
	tun := func(k ToRivetTunnelMessageKind) ToRivet { return ToRivetTunnelMessage{MessageID: mid, MessageKind: k} }
	return []ToRivet{
		ToRivetMetadata{},
		ToRivetMetadata{PrepopulateActorNames: []ActorName{}, Metadata: ptr("")},
		ToRivetMetadata{PrepopulateActorNames: []ActorName{{"b", `{"x":1}`}, {"a", "{}"}}, Metadata: ptr("{}")},
		ToRivetEvents{},
		ToRivetEvents{
			{Checkpoint: cp, Inner: EventActorIntent{Intent: ActorIntentSleep{}}},
			{Checkpoint: cp, Inner: EventActorIntent{Intent: ActorIntentStop{}}},
			{Checkpoint: cp, Inner: EventActorStateUpdate{State: ActorStateRunning{}}},
			{Checkpoint: cp, Inner: EventActorStateUpdate{State: ActorStateStopped{Code: StopCodeError, Message: ptr("boom")}}},
			{Checkpoint: cp, Inner: EventActorSetAlarm{AlarmTs: ptr(int64(-5))}},
			{Checkpoint: cp, Inner: EventActorSetAlarm{}},
		},
		ToRivetAckCommands{LastCommandCheckpoints: []ActorCheckpoint{cp, {ActorID: "b", Index: -1}}},
		ToRivetStopping{},
		ToRivetPong{Ts: -1},
		kv(KvGetRequest{Keys: [][]byte{{}, {0, 1}, []byte(strings.Repeat("k", 200))}}),
		kv(KvListRequest{Query: KvListAllQuery{}}),
		kv(KvListRequest{Query: KvListRangeQuery{Start: []byte{1}, End: []byte{}, Exclusive: true}, Reverse: ptr(true), Limit: ptr(uint64(1 << 63))}),
		kv(KvListRequest{Query: KvListPrefixQuery{Key: []byte{5, 1}}, Reverse: ptr(false)}),
		kv(KvPutRequest{Keys: [][]byte{{1}, {2}}, Values: [][]byte{{}, {3, 4}}}),
		kv(KvDeleteRequest{Keys: [][]byte{{9}}}),
		kv(KvDeleteRangeRequest{Start: []byte{0}, End: []byte{0xff}}),
		kv(KvDropRequest{}),
		tun(ToRivetResponseStart{Status: 503, Headers: []Header{{"x-rivet-error", "envoy.actor_not_found"}, {"a", ""}}, Stream: true}),
		tun(ToRivetResponseStart{Status: 204, Headers: []Header{}, Body: []byte{}}),
		tun(ToRivetResponseChunk{Body: []byte("chunk"), Finish: true}),
		tun(ToRivetResponseAbort{Reason: HttpStreamAbortReason{Kind: HttpStreamAbortHandlerError, Detail: ptr("threw")}}),
		tun(ToRivetResponseAbort{}),
		tun(ToRivetRequestBodyWindowUpdate{ConsumedBytes: math.MaxUint64}),
		tun(ToRivetRequestBodyCancel{}),
		tun(ToRivetWebSocketOpen{CanHibernate: true}),
		tun(ToRivetWebSocketMessage{Data: []byte{0, 1, 2}, Binary: true}),
		tun(ToRivetWebSocketMessageAck{Index: 513}),
		tun(ToRivetWebSocketClose{Code: ptr(uint16(1011)), Reason: ptr("Actor not found"), Hibernate: true}),
		tun(ToRivetWebSocketClose{}),
		ToRivetSqliteGetPagesRequest{RequestID: 1, Data: SqliteGetPagesRequest{ActorID: "a1", Pgnos: []uint32{1, math.MaxUint32}, ExpectedGeneration: ptr(uint64(3)), ExpectedHeadTxid: ptr(uint64(0))}},
		ToRivetSqliteGetPagesRequest{Data: SqliteGetPagesRequest{Pgnos: []uint32{}}},
		ToRivetSqliteCommitRequest{RequestID: 2, Data: SqliteCommitRequest{ActorID: "a1", DirtyPages: []SqliteDirtyPage{{Pgno: 1, Bytes: []byte{1, 2}}, {Pgno: 2, Bytes: []byte{}}}, DbSizePages: 2, NowMs: 1700000000000, ExpectedHeadTxid: ptr(uint64(9))}},
		ToRivetSqliteCommitStageBeginRequest{RequestID: 3, Data: SqliteCommitStageBeginRequest{ActorID: "a1", ExpectedGeneration: ptr(uint64(1))}},
		ToRivetSqliteCommitStageSegmentRequest{RequestID: 4, Data: SqliteCommitStageSegmentRequest{ActorID: "a1", Txid: 10, FirstPgno: 4096, DirtyPages: []SqliteDirtyPage{{Pgno: 4096, Bytes: []byte("p")}}}},
		ToRivetSqliteCommitFinalizeRequest{RequestID: 5, Data: SqliteCommitFinalizeRequest{ActorID: "a1", ExpectedGeneration: ptr(uint64(1)), Txid: 10, NewDbSizePages: 8192, NowMs: -1, SegmentFirstPgnos: []uint32{0, 4096}}},
		ToRivetSqliteCommitFinalizeRequest{Data: SqliteCommitFinalizeRequest{SegmentFirstPgnos: []uint32{}}},
		ToRivetSqliteExecRequest{RequestID: 6, Data: SqliteExecRequest{NamespaceID: "ns", ActorID: "a1", Generation: math.MaxUint64, SQL: "SELECT 1; SELECT 2"}},
		ToRivetSqliteExecuteRequest{RequestID: 7, Data: SqliteExecuteRequest{NamespaceID: "ns", ActorID: "a1", SQL: "SELECT ?", Params: sqlValues}},
		ToRivetSqliteExecuteRequest{RequestID: 8, Data: SqliteExecuteRequest{SQL: "SELECT 1"}},
		ToRivetSqliteExecuteRequest{RequestID: 9, Data: SqliteExecuteRequest{SQL: "SELECT 1", Params: []SqliteValue{}}},
		ToRivetSqliteExecuteBatchRequest{RequestID: 10, Data: SqliteExecuteBatchRequest{NamespaceID: "ns", ActorID: "a1", Generation: 2, Statements: []SqliteBatchStatement{{SQL: "INSERT", Params: []SqliteValue{SqliteFloat(1.5)}}, {SQL: "DELETE"}}}},
		ToRivetSqliteExecuteBatchRequest{Data: SqliteExecuteBatchRequest{Statements: []SqliteBatchStatement{}}},
	}
}

func allCommands() ToEnvoyCommands {
	return ToEnvoyCommands{
		{Checkpoint: cp, Inner: CommandStartActor{Config: ActorConfig{Name: "counter", CreateTs: 5}, HibernatingRequests: []HibernatingRequest{{gw, req}, {GatewayID{9, 9, 9, 9}, RequestID{}}}}},
		{Checkpoint: cp, Inner: CommandStartActor{Config: ActorConfig{Name: "c", Key: ptr(""), Input: []byte{}}, HibernatingRequests: []HibernatingRequest{},
			PreloadedKv: &PreloadedKv{Entries: []PreloadedKvEntry{}, RequestedGetKeys: [][]byte{}, RequestedPrefixes: [][]byte{}}}},
		{Checkpoint: cp, Inner: CommandStartActor{Config: ActorConfig{Name: "c", Key: ptr("k"), CreateTs: -1, Input: []byte("in")}, HibernatingRequests: []HibernatingRequest{},
			PreloadedKv: &PreloadedKv{Entries: []PreloadedKvEntry{{Key: []byte{1}, Value: []byte{}, Metadata: md[0]}}, RequestedGetKeys: [][]byte{{1}, {2}}, RequestedPrefixes: [][]byte{{}}}}},
		{Checkpoint: cp, Inner: CommandStopActor{Reason: StopActorReasonSleepIntent}},
		{Checkpoint: cp, Inner: CommandStopActor{Reason: StopActorReasonStopIntent}},
		{Checkpoint: cp, Inner: CommandStopActor{Reason: StopActorReasonDestroy}},
		{Checkpoint: cp, Inner: CommandStopActor{Reason: StopActorReasonGoingAway}},
		{Checkpoint: cp, Inner: CommandStopActor{Reason: StopActorReasonLost}},
	}
}

func allToEnvoyKinds() []ToEnvoyTunnelMessageKind {
	return []ToEnvoyTunnelMessageKind{
		ToEnvoyRequestStart{ActorID: "a1", ActorGeneration: ptr(uint32(math.MaxUint32)), Method: "POST", Path: "/action/inc?x=1", Headers: []Header{{"content-type", "application/octet-stream"}, {"x-rivet-encoding", "bare"}}, Body: []byte{0xde, 0xad}, Stream: true, ResponseStream: true},
		ToEnvoyRequestStart{ActorID: "a1", Method: "GET", Path: "/", Headers: []Header{}},
		ToEnvoyRequestChunk{Body: []byte{}, Finish: true},
		ToEnvoyRequestAbort{ActorID: ptr("a1"), ActorGeneration: ptr(uint32(3)), Reason: HttpStreamAbortReason{Kind: HttpStreamAbortCancelled, Detail: ptr("gone")}},
		ToEnvoyRequestAbort{Reason: HttpStreamAbortReason{Kind: HttpStreamAbortInternalError}},
		ToEnvoyRequestBodyCancel{},
		ToEnvoyResponseBodyWindowUpdate{ConsumedBytes: 1 << 20},
		ToEnvoyWebSocketOpen{ActorID: "a1", ActorGeneration: ptr(uint32(2)), Path: "/connect", Headers: []Header{{"sec-websocket-protocol", "rivet"}}},
		ToEnvoyWebSocketMessage{Data: []byte("hi-text")},
		ToEnvoyWebSocketClose{Code: ptr(uint16(1000)), Reason: ptr("bye")},
		ToEnvoyWebSocketClose{},
	}
}

func allToEnvoy() []ToEnvoy {
	kv := func(d KvResponseData) ToEnvoy { return ToEnvoyKvResponse{RequestID: 1 << 31, Data: d} }
	m := []ToEnvoy{
		ToEnvoyInit{Metadata: ProtocolMetadata{EnvoyLostThreshold: 15000, ActorStopThreshold: 1800000, MaxResponsePayloadSize: 20 << 20}},
		ToEnvoyCommands{},
		allCommands(),
		ToEnvoyAckEvents{LastEventCheckpoints: []ActorCheckpoint{}},
		ToEnvoyAckEvents{LastEventCheckpoints: []ActorCheckpoint{cp}},
		kv(KvErrorResponse{Message: "actor does not exist"}),
		kv(KvGetResponse{Keys: [][]byte{{1}, {2}}, Values: [][]byte{{3}, {}}, Metadata: md}),
		kv(KvListResponse{Keys: [][]byte{}, Values: [][]byte{}, Metadata: []KvMetadata{}}),
		kv(KvListResponse{Keys: [][]byte{{1}}, Values: [][]byte{{2}}, Metadata: md[:1]}),
		kv(KvPutResponse{}),
		kv(KvDeleteResponse{}),
		kv(KvDropResponse{}),
		ToEnvoyPing{Ts: 1700000000000},
		ToEnvoySqliteGetPagesResponse{RequestID: 1, Data: SqliteGetPagesOk{Pages: []SqliteFetchedPage{{Pgno: 1, Bytes: []byte{1}}, {Pgno: 2}, {Pgno: 3, Bytes: []byte{}}}, HeadTxid: ptr(uint64(5))}},
		ToEnvoySqliteGetPagesResponse{RequestID: 1, Data: sqlErr},
		ToEnvoySqliteCommitResponse{RequestID: 2, Data: SqliteCommitOk{}},
		ToEnvoySqliteCommitResponse{RequestID: 2, Data: sqlErr},
		ToEnvoySqliteCommitStageBeginResponse{RequestID: 3, Data: SqliteCommitStageBeginOk{Txid: 10}},
		ToEnvoySqliteCommitStageBeginResponse{RequestID: 3, Data: sqlErr},
		ToEnvoySqliteCommitStageSegmentResponse{RequestID: 4, Data: SqliteCommitStageSegmentOk{StagedBytes: 4096}},
		ToEnvoySqliteCommitStageSegmentResponse{RequestID: 4, Data: sqlErr},
		ToEnvoySqliteCommitFinalizeResponse{RequestID: 5, Data: SqliteCommitFinalizeOk{HeadTxid: ptr(uint64(10))}},
		ToEnvoySqliteCommitFinalizeResponse{RequestID: 5, Data: sqlErr},
		ToEnvoySqliteExecResponse{RequestID: 6, Data: SqliteExecOk{Result: SqliteQueryResult{Columns: execResult.Columns, Rows: execResult.Rows}}},
		ToEnvoySqliteExecResponse{RequestID: 6, Data: SqliteExecOk{Result: SqliteQueryResult{Columns: []string{}, Rows: [][]SqliteValue{}}}},
		ToEnvoySqliteExecResponse{RequestID: 6, Data: sqlErr},
		ToEnvoySqliteExecuteResponse{RequestID: 7, Data: SqliteExecuteOk{Result: execResult}},
		ToEnvoySqliteExecuteResponse{RequestID: 7, Data: sqlErr},
		ToEnvoySqliteExecuteBatchResponse{RequestID: 8, Data: SqliteExecuteBatchOk{Results: []SqliteExecuteResult{execResult, {Columns: []string{}, Rows: [][]SqliteValue{}}}}},
		ToEnvoySqliteExecuteBatchResponse{RequestID: 8, Data: sqlErr},
	}
	for _, k := range allToEnvoyKinds() {
		m = append(m, ToEnvoyTunnelMessage{MessageID: mid, MessageKind: k})
	}
	return m
}

func allToEnvoyConn() []ToEnvoyConn {
	return []ToEnvoyConn{
		ToEnvoyConnPing{GatewayID: gw, RequestID: req, Ts: 1700000000000},
		ToEnvoyConnClose{},
		allCommands(),
		ToEnvoyAckEvents{LastEventCheckpoints: []ActorCheckpoint{cp}},
		ToEnvoyTunnelMessage{MessageID: mid, MessageKind: ToEnvoyRequestBodyCancel{}},
	}
}

func allToGateway() []ToGateway {
	return []ToGateway{
		ToGatewayPong{RequestID: req, Ts: -1},
		ToRivetTunnelMessage{MessageID: mid, MessageKind: ToRivetRequestBodyCancel{}},
	}
}

func allToOutbound() []ToOutbound {
	return []ToOutbound{
		ToOutboundActorStart{NamespaceID: "ns", PoolName: "default", Checkpoint: cp, ActorConfig: ActorConfig{Name: "c", Key: ptr("k"), CreateTs: 5, Input: []byte{1}}},
	}
}

// allMembers holds one value of every message and union member type of the schema;
// TestNpmVectors checks that the npm vectors cover each.
func allMembers() []any {
	return []any{
		ToRivetMetadata{}, ToRivetEvents{}, ToRivetAckCommands{}, ToRivetStopping{}, ToRivetPong{},
		ToRivetKvRequest{}, ToRivetTunnelMessage{}, ToRivetSqliteGetPagesRequest{}, ToRivetSqliteCommitRequest{},
		ToRivetSqliteCommitStageBeginRequest{}, ToRivetSqliteCommitStageSegmentRequest{},
		ToRivetSqliteCommitFinalizeRequest{}, ToRivetSqliteExecRequest{}, ToRivetSqliteExecuteRequest{},
		ToRivetSqliteExecuteBatchRequest{},
		ToEnvoyInit{}, ToEnvoyCommands{}, ToEnvoyAckEvents{}, ToEnvoyKvResponse{}, ToEnvoyTunnelMessage{},
		ToEnvoyPing{}, ToEnvoySqliteGetPagesResponse{}, ToEnvoySqliteCommitResponse{},
		ToEnvoySqliteCommitStageBeginResponse{}, ToEnvoySqliteCommitStageSegmentResponse{},
		ToEnvoySqliteCommitFinalizeResponse{}, ToEnvoySqliteExecResponse{}, ToEnvoySqliteExecuteResponse{},
		ToEnvoySqliteExecuteBatchResponse{},
		ToEnvoyConnPing{}, ToEnvoyConnClose{}, ToGatewayPong{}, ToOutboundActorStart{},
		CommandStartActor{}, CommandStopActor{}, ActorIntentSleep{}, ActorIntentStop{},
		ActorStateRunning{}, ActorStateStopped{}, EventActorIntent{}, EventActorStateUpdate{}, EventActorSetAlarm{},
		KvListAllQuery{}, KvListRangeQuery{}, KvListPrefixQuery{},
		KvGetRequest{}, KvListRequest{}, KvPutRequest{}, KvDeleteRequest{}, KvDeleteRangeRequest{}, KvDropRequest{},
		KvErrorResponse{}, KvGetResponse{}, KvListResponse{}, KvPutResponse{}, KvDeleteResponse{}, KvDropResponse{},
		SqliteGetPagesOk{}, SqliteCommitOk{}, SqliteCommitStageBeginOk{}, SqliteCommitStageSegmentOk{},
		SqliteCommitFinalizeOk{}, SqliteExecOk{}, SqliteExecuteOk{}, SqliteExecuteBatchOk{}, SqliteErrorResponse{},
		SqliteValueNull{}, SqliteValueInteger{}, SqliteValueFloat{}, SqliteValueText{}, SqliteValueBlob{},
		ToEnvoyRequestStart{}, ToEnvoyRequestChunk{}, ToEnvoyRequestAbort{}, ToEnvoyRequestBodyCancel{},
		ToEnvoyResponseBodyWindowUpdate{}, ToEnvoyWebSocketOpen{}, ToEnvoyWebSocketMessage{}, ToEnvoyWebSocketClose{},
		ToRivetResponseStart{}, ToRivetResponseChunk{}, ToRivetResponseAbort{}, ToRivetRequestBodyWindowUpdate{},
		ToRivetRequestBodyCancel{}, ToRivetWebSocketOpen{}, ToRivetWebSocketMessage{}, ToRivetWebSocketMessageAck{},
		ToRivetWebSocketClose{},
	}
}

// roundTrip encodes m, decodes the bytes, and checks that the result equals m and encodes to the
// same bytes.
func roundTrip[T any](t *testing.T, name string, m T, enc func(T, int) ([]byte, error), dec func([]byte, int) (T, error)) {
	t.Helper()
	b, err := enc(m, Version8)
	if err != nil {
		t.Fatalf("%s %T: encode: %v", name, m, err)
	}
	got, err := dec(b, Version8)
	if err != nil {
		t.Fatalf("%s %T: decode %x: %v", name, m, b, err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("%s: decoded %#v\nwant %#v", name, got, m)
	}
	if again, err := enc(got, Version8); err != nil || !bytes.Equal(again, b) {
		t.Fatalf("%s: re-encoded %x, %v; want %x", name, again, err, b)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, m := range allToRivet() {
		roundTrip(t, "ToRivet", m, EncodeToRivet, DecodeToRivet)
	}
	for _, m := range allToEnvoy() {
		roundTrip(t, "ToEnvoy", m, EncodeToEnvoy, DecodeToEnvoy)
	}
	for _, m := range allToEnvoyConn() {
		roundTrip(t, "ToEnvoyConn", m, EncodeToEnvoyConn, DecodeToEnvoyConn)
	}
	for _, m := range allToGateway() {
		roundTrip(t, "ToGateway", m, EncodeToGateway, DecodeToGateway)
	}
	for _, m := range allToOutbound() {
		roundTrip(t, "ToOutbound", m, EncodeToOutbound, DecodeToOutbound)
	}
	for _, c := range allCommands() {
		roundTrip(t, "ActorCommandKeyData", c.Inner, EncodeActorCommandKeyData, DecodeActorCommandKeyData)
	}
}

// TestKnownFrames pins frames worked out by hand from the schema's byte layout (BARE:
// little-endian fixed-width integers, LEB128 lengths and tags, optional as 0/1).
func TestKnownFrames(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		m    any
	}{
		{"ToEnvoyInit", "00 983a000000000000 40771b0000000000 0000400100000000",
			ToEnvoyInit{Metadata: ProtocolMetadata{EnvoyLostThreshold: 15000, ActorStopThreshold: 1800000, MaxResponsePayloadSize: 20 << 20}}},
		{"ToEnvoyPing", "05 0068e5cf8b010000", ToEnvoyPing{Ts: 1700000000000}},
		{"ToRivetPong", "04 0068e5cf8b010000", ToRivetPong{Ts: 1700000000000}},
		{"ToRivetStopping", "03", ToRivetStopping{}},
		{"ToRivetMetadata", "00 01 01 046563686f 027b7d 00", ToRivetMetadata{PrepopulateActorNames: []ActorName{{"echo", "{}"}}}},
		{"CommandStopActor GoingAway", "01 01 026131 01000000 0200000000000000 01 03",
			ToEnvoyCommands{{Checkpoint: ActorCheckpoint{ActorID: "a1", Generation: 1, Index: 2}, Inner: CommandStopActor{Reason: StopActorReasonGoingAway}}}},
		{"CommandStartActor", "01 01 026131 00000000 0000000000000000 00 046563686f 00 0000000000000000 00 00 01 00 00 00",
			ToEnvoyCommands{{Checkpoint: ActorCheckpoint{ActorID: "a1"}, Inner: CommandStartActor{Config: ActorConfig{Name: "echo"},
				HibernatingRequests: []HibernatingRequest{}, PreloadedKv: &PreloadedKv{Entries: []PreloadedKvEntry{}, RequestedGetKeys: [][]byte{}, RequestedPrefixes: [][]byte{}}}}}},
		{"ToEnvoyRequestStart", "04 01020304 0a0b0c0d 0000 00 026131 01 03000000 03474554 012f 00 00 00 01",
			ToEnvoyTunnelMessage{MessageID: MessageID{GatewayID: gw, RequestID: req}, MessageKind: ToEnvoyRequestStart{
				ActorID: "a1", ActorGeneration: ptr(uint32(3)), Method: "GET", Path: "/", Headers: []Header{}, ResponseStream: true}}},
		{"ToRivetResponseAbort", "06 01020304 0a0b0c0d 0100 02 02 01 0162",
			ToRivetTunnelMessage{MessageID: MessageID{GatewayID: gw, RequestID: req, MessageIndex: 1}, MessageKind: ToRivetResponseAbort{
				Reason: HttpStreamAbortReason{Kind: HttpStreamAbortHandlerError, Detail: ptr("b")}}}},
		{"ToRivetSqliteExecuteRequest", "0d 2a000000 026e73 026131 0300000000000000 0153 01 02 01 0200000000000000 02 3ff8000000000000",
			ToRivetSqliteExecuteRequest{RequestID: 42, Data: SqliteExecuteRequest{NamespaceID: "ns", ActorID: "a1", Generation: 3, SQL: "S",
				Params: []SqliteValue{SqliteValueInteger{Value: 2}, SqliteFloat(1.5)}}}},
		{"ToRivetSqliteCommitFinalizeRequest", "0b 01000000 026131 00 0a00000000000000 00200000 ffffffffffffffff 02 00000000 00100000",
			ToRivetSqliteCommitFinalizeRequest{RequestID: 1, Data: SqliteCommitFinalizeRequest{ActorID: "a1", Txid: 10, NewDbSizePages: 8192, NowMs: -1, SegmentFirstPgnos: []uint32{0, 4096}}}},
		{"ToEnvoySqliteCommitResponse error", "07 01000000 01 0161 0162 0163",
			ToEnvoySqliteCommitResponse{RequestID: 1, Data: SqliteErrorResponse{Group: "a", Code: "b", Message: "c"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := unhex(t, tt.hex)
			var got []byte
			var err error
			switch m := tt.m.(type) {
			case ToRivet:
				got, err = EncodeToRivet(m, Version8)
				if err == nil {
					roundTrip(t, tt.name, m, EncodeToRivet, DecodeToRivet)
				}
			case ToEnvoy:
				got, err = EncodeToEnvoy(m, Version8)
				if err == nil {
					roundTrip(t, tt.name, m, EncodeToEnvoy, DecodeToEnvoy)
				}
			}
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("encoded %x, %v\nwant    %x", got, err, want)
			}
		})
	}
}

func TestSqliteFloat(t *testing.T) {
	for _, tt := range []struct {
		f   float64
		hex string
	}{
		{1.5, "3ff8000000000000"},
		{-0.25, "bfd0000000000000"},
		{math.Inf(1), "7ff0000000000000"},
	} {
		v := SqliteFloat(tt.f)
		if got := hex.EncodeToString(v.Value[:]); got != tt.hex {
			t.Errorf("SqliteFloat(%v) = %s, want %s", tt.f, got, tt.hex)
		}
		if v.Float64() != tt.f {
			t.Errorf("Float64 of %s = %v", tt.hex, v.Float64())
		}
	}
	if nan := (SqliteValueFloat{Value: [8]byte{0x7f, 0xf8, 0, 0, 0, 0, 0, 1}}); !math.IsNaN(nan.Float64()) {
		t.Errorf("NaN bits read as %v", nan.Float64())
	}
}

func TestVersions(t *testing.T) {
	for _, v := range []int{0, 2, 7, 9} {
		var ue *UnsupportedVersionError
		if _, err := EncodeToRivet(ToRivetStopping{}, v); !errors.As(err, &ue) || ue.Version != v {
			t.Errorf("encode v%d: %v", v, err)
		}
		if _, err := DecodeToEnvoy([]byte{5, 0, 0, 0, 0, 0, 0, 0, 0}, v); !errors.As(err, &ue) {
			t.Errorf("decode v%d: %v", v, err)
		}
		if _, err := DecodeActorCommandKeyData([]byte{1, 0}, v); !errors.As(err, &ue) {
			t.Errorf("decode command v%d: %v", v, err)
		}
	}
}

func isDecodeErrorAt(err error, off int, msg string) bool {
	var de *bare.DecodeError
	return errors.As(err, &de) && de.Offset == off && strings.Contains(de.Msg, msg)
}

func TestDecodeErrors(t *testing.T) {
	const checkpoint = "026131 00000000 0000000000000000" // 15 bytes
	tests := []struct {
		name   string
		dir    string
		hex    string
		offset int
		msg    string
	}{
		{"empty", "ToRivet", "", 0, "truncated union tag"},
		{"unknown ToRivet", "ToRivet", "0f", 0, "unknown ToRivet tag 15"},
		{"unknown ToEnvoy", "ToEnvoy", "0e", 0, "unknown ToEnvoy tag 14"},
		{"unknown ToEnvoyConn", "ToEnvoyConn", "05", 0, "unknown ToEnvoyConn tag 5"},
		{"unknown ToGateway", "ToGateway", "02", 0, "unknown ToGateway tag 2"},
		{"unknown ToOutbound", "ToOutbound", "01", 0, "unknown ToOutbound tag 1"},
		{"unknown stored Command", "ActorCommandKeyData", "02", 0, "unknown Command tag 2"},
		{"big tag", "ToRivet", "8001", 0, "unknown ToRivet tag 128"},
		{"non-canonical tag", "ToRivet", "8300", 0, "non-canonical"},
		{"unknown Event", "ToRivet", "01 01" + checkpoint + "03", 17, "unknown Event tag 3"},
		{"unknown ActorIntent", "ToRivet", "01 01" + checkpoint + "00 02", 18, "unknown ActorIntent tag 2"},
		{"unknown ActorState", "ToRivet", "01 01" + checkpoint + "01 02", 18, "unknown ActorState tag 2"},
		{"unknown StopCode", "ToRivet", "01 01" + checkpoint + "01 01 02 00", 19, "unknown StopCode 2"},
		{"unknown Command", "ToEnvoy", "01 01" + checkpoint + "02", 17, "unknown Command tag 2"},
		{"unknown StopActorReason", "ToEnvoy", "01 01" + checkpoint + "01 05", 18, "unknown StopActorReason 5"},
		{"bad preloaded KV tag", "ToEnvoy", "01 01" + checkpoint + "00 0163 00 0000000000000000 00 00 02", 31, "optional tag is 2"},
		{"unknown KvRequestData", "ToRivet", "05 026131 00000000 06", 8, "unknown KvRequestData tag 6"},
		{"unknown KvListQuery", "ToRivet", "05 026131 00000000 01 03", 9, "unknown KvListQuery tag 3"},
		{"unknown KvResponseData", "ToEnvoy", "03 00000000 06", 5, "unknown KvResponseData tag 6"},
		{"unknown rivet kind", "ToRivet", "06 01020304 0a0b0c0d 0000 09", 11, "unknown ToRivetTunnelMessageKind tag 9"},
		{"unknown envoy kind", "ToEnvoy", "04 01020304 0a0b0c0d 0000 08", 11, "unknown ToEnvoyTunnelMessageKind tag 8"},
		{"unknown abort kind", "ToRivet", "06 01020304 0a0b0c0d 0000 02 04 00", 12, "unknown HttpStreamAbortReasonKind 4"},
		{"unknown SqliteValue", "ToRivet", "0d 00000000 00 00 0000000000000000 00 01 01 05", 18, "unknown SqliteValue tag 5"},
		{"unknown sqlite response", "ToEnvoy", "06 00000000 02", 5, "unknown SqliteGetPagesResponse tag 2"},
		{"unknown exec response", "ToEnvoy", "0b 00000000 02", 5, "unknown SqliteExecResponse tag 2"},
		{"trailing", "ToRivet", "03 00", 1, "1 trailing bytes"},
		{"truncated pong", "ToRivet", "04 0068e5cf8b0100", 1, "truncated u64"},
		{"truncated float", "ToRivet", "0d 00000000 00 00 0000000000000000 00 01 01 02 3ff800", 19, "truncated"},
		{"list count beyond input", "ToRivet", "07 00000000 00 ffffffff0f", 6, "list length"},
		{"duplicate header", "ToRivet", "06 01020304 0a0b0c0d 0000 00 c800 02 0161 0162 0161 0163 00 00", 19, "duplicate map key a"},
		{"duplicate actor name", "ToRivet", "00 01 02 0161 0100 0161 0100 00", 7, "duplicate map key a"},
		{"bad bool", "ToEnvoy", "04 01020304 0a0b0c0d 0000 06 00 02", 13, "bool is 2"},
		{"bad UTF-8", "ToRivet", "0c 00000000 01ff 00 0000000000000000 00", 5, "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := unhex(t, tt.hex)
			var m any
			var err error
			switch tt.dir {
			case "ToRivet":
				m, err = DecodeToRivet(in, Version8)
			case "ToEnvoy":
				m, err = DecodeToEnvoy(in, Version8)
			case "ToEnvoyConn":
				m, err = DecodeToEnvoyConn(in, Version8)
			case "ToGateway":
				m, err = DecodeToGateway(in, Version8)
			case "ToOutbound":
				m, err = DecodeToOutbound(in, Version8)
			case "ActorCommandKeyData":
				m, err = DecodeActorCommandKeyData(in, Version8)
			}
			if !isDecodeErrorAt(err, tt.offset, tt.msg) {
				t.Fatalf("error %v, want %q at %d", err, tt.msg, tt.offset)
			}
			if m != nil && !reflect.ValueOf(m).IsZero() {
				t.Fatalf("decoded %#v alongside an error", m)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name string
		m    any
		msg  string
	}{
		{"nil event", ToRivetEvents{{}}, "nil Event"},
		{"nil intent", ToRivetEvents{{Inner: EventActorIntent{}}}, "nil ActorIntent"},
		{"nil state", ToRivetEvents{{Inner: EventActorStateUpdate{}}}, "nil ActorState"},
		{"bad stop code", ToRivetEvents{{Inner: EventActorStateUpdate{State: ActorStateStopped{Code: 2}}}}, "unknown StopCode 2"},
		{"nil command", ToEnvoyCommands{{}}, "nil Command"},
		{"bad stop reason", ToEnvoyCommands{{Inner: CommandStopActor{Reason: 5}}}, "unknown StopActorReason 5"},
		{"nil kv request", ToRivetKvRequest{}, "nil KvRequestData"},
		{"nil list query", ToRivetKvRequest{Data: KvListRequest{}}, "nil KvListQuery"},
		{"nil kv response", ToEnvoyKvResponse{}, "nil KvResponseData"},
		{"nil rivet kind", ToRivetTunnelMessage{}, "nil ToRivetTunnelMessageKind"},
		{"nil envoy kind", ToEnvoyTunnelMessage{}, "nil ToEnvoyTunnelMessageKind"},
		{"bad abort kind", ToRivetTunnelMessage{MessageKind: ToRivetResponseAbort{Reason: HttpStreamAbortReason{Kind: 4}}}, "unknown HttpStreamAbortReasonKind 4"},
		{"nil sqlite response", ToEnvoySqliteCommitResponse{}, "nil SqliteCommitResponse"},
		{"nil batch response", ToEnvoySqliteExecuteBatchResponse{}, "nil SqliteExecuteBatchResponse"},
		{"nil sqlite value", ToRivetSqliteExecuteRequest{Data: SqliteExecuteRequest{Params: []SqliteValue{nil}}}, "nil SqliteValue"},
		{"nil column value", ToEnvoySqliteExecResponse{Data: SqliteExecOk{Result: SqliteQueryResult{Rows: [][]SqliteValue{{nil}}}}}, "nil SqliteValue"},
		{"duplicate header", ToEnvoyTunnelMessage{MessageKind: ToEnvoyWebSocketOpen{Headers: []Header{{"a", "1"}, {"a", "2"}}}}, `duplicate header "a"`},
		{"duplicate actor name", ToRivetMetadata{PrepopulateActorNames: []ActorName{{"x", "{}"}, {"x", "{}"}}}, `duplicate actor name "x"`},
		{"bad UTF-8", ToRivetSqliteExecRequest{Data: SqliteExecRequest{SQL: "\xff"}}, "not valid UTF-8"},
		{"bad UTF-8 column", ToEnvoySqliteExecResponse{Data: SqliteExecOk{Result: SqliteQueryResult{Columns: []string{"\xfe"}}}}, "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			switch m := tt.m.(type) {
			case ToRivet:
				_, err = EncodeToRivet(m, Version8)
			case ToEnvoy:
				_, err = EncodeToEnvoy(m, Version8)
			default:
				t.Fatalf("%T is no message", m)
			}
			var ee *EncodeError
			if !errors.As(err, &ee) || !strings.Contains(ee.Msg, tt.msg) {
				t.Fatalf("error %v, want %q", err, tt.msg)
			}
		})
	}
	// A nil top-level value of every union.
	errs := []error{}
	_, err := EncodeToRivet(nil, Version8)
	errs = append(errs, err)
	_, err = EncodeToEnvoy(nil, Version8)
	errs = append(errs, err)
	_, err = EncodeToEnvoyConn(nil, Version8)
	errs = append(errs, err)
	_, err = EncodeToGateway(nil, Version8)
	errs = append(errs, err)
	_, err = EncodeToOutbound(nil, Version8)
	errs = append(errs, err)
	_, err = EncodeActorCommandKeyData(nil, Version8)
	errs = append(errs, err)
	errs = append(errs, AppendToRivet(&bare.Writer{}, nil, Version8), AppendToEnvoy(&bare.Writer{}, nil, Version8))
	for i, err := range errs {
		var ee *EncodeError
		if !errors.As(err, &ee) || !strings.HasPrefix(ee.Msg, "nil ") {
			t.Errorf("nil message #%d: %v", i, err)
		}
	}
}

// TestAppendReusesWriter checks that AppendToRivet and AppendToEnvoy write into a reused
// Writer the same bytes as the Encode functions.
func TestAppendReusesWriter(t *testing.T) {
	var w bare.Writer
	for _, m := range allToRivet() {
		w.Reset()
		want, _ := EncodeToRivet(m, Version8)
		if err := AppendToRivet(&w, m, Version8); err != nil || !bytes.Equal(w.Bytes(), want) {
			t.Fatalf("%T: appended %x, %v; want %x", m, w.Bytes(), err, want)
		}
	}
	for _, m := range allToEnvoy() {
		w.Reset()
		want, _ := EncodeToEnvoy(m, Version8)
		if err := AppendToEnvoy(&w, m, Version8); err != nil || !bytes.Equal(w.Bytes(), want) {
			t.Fatalf("%T: appended %x, %v; want %x", m, w.Bytes(), err, want)
		}
	}
}
