package runner

import (
	"bytes"
	"encoding/hex"
	"errors"
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
)

// TestReferenceVectors decodes every frame of docs/protocol.md, "Known-good frames" (encoded by
// @rivetkit/engine-runner-protocol 2.2.1), compares it with the expected message and re-encodes it
// byte for byte.
func TestReferenceVectors(t *testing.T) {
	tests := []struct {
		name     string
		hex      string
		toServer bool
		want     any
	}{
		{"ToServerInit", "00046563686f010000000a0000000101046563686f027b7d010e7b2270726f6265223a747275657d", true,
			ToServerInit{Name: "echo", Version: 1, TotalSlots: 10, PrepopulateActorNames: []ActorName{{"echo", "{}"}}, Metadata: ptr(`{"probe":true}`)}},
		{"ToClientInit", "00027231983a00000000000040771b000000000000", false,
			ToClientInit{RunnerID: "r1", Metadata: ProtocolMetadata{RunnerLostThreshold: 15000, ActorStopThreshold: 1800000}}},
		{"ToClientPing", "050068e5cf8b010000", false, ToClientPing{Ts: 1700000000000}},
		{"ToServerPong", "040068e5cf8b010000", true, ToServerPong{Ts: 1700000000000}},
		{"ToClientCommands Start", "010102613100000000000000000000000000046563686f01026b310068e5cf8b010000010568656c6c6f00", false,
			ToClientCommands{{Checkpoint: ActorCheckpoint{ActorID: "a1"}, Inner: CommandStartActor{
				Config:              ActorConfig{Name: "echo", Key: ptr("k1"), CreateTs: 1700000000000, Input: []byte("hello")},
				HibernatingRequests: []HibernatingRequest{}}}}},
		{"ToClientCommands Stop", "010102613100000000010000000000000001", false,
			ToClientCommands{{Checkpoint: ActorCheckpoint{ActorID: "a1", Index: 1}, Inner: CommandStopActor{}}}},
		{"ToServerEvents Running", "01010261310000000000000000000000000100", true,
			ToServerEvents{{Checkpoint: ActorCheckpoint{ActorID: "a1"}, Inner: EventActorStateUpdate{State: ActorStateRunning{}}}}},
		{"ToServerEvents Stop OK", "010102613100000000010000000000000001010000", true,
			ToServerEvents{{Checkpoint: ActorCheckpoint{ActorID: "a1", Index: 1}, Inner: EventActorStateUpdate{State: ActorStateStopped{Code: StopCodeOK}}}}},
		{"ToClientAckEvents", "0201026131000000000100000000000000", false,
			ToClientAckEvents{LastEventCheckpoints: []ActorCheckpoint{{ActorID: "a1", Index: 1}}}},
		{"ToClientRequestStart", "04010203040a0b0c0d00000002613103474554062f783f793d310104686f737401680000", false,
			ToClientTunnelMessage{MessageID: MessageID{GatewayID: gw, RequestID: req}, MessageKind: ToClientRequestStart{
				ActorID: "a1", Method: "GET", Path: "/x?y=1", Headers: []Header{{"host", "h"}}}}},
		{"ToServerResponseStart", "06010203040a0b0c0d000000c800010e636f6e74656e742d6c656e677468013201026f6b00", true,
			ToServerTunnelMessage{MessageID: MessageID{GatewayID: gw, RequestID: req}, MessageKind: ToServerResponseStart{
				Status: 200, Headers: []Header{{"content-length", "2"}}, Body: []byte("ok")}}},
		{"ToServerKvRequest(Put)", "05026131000000000201016b010176", true,
			ToServerKvRequest{ActorID: "a1", Data: KvPutRequest{Keys: [][]byte{[]byte("k")}, Values: [][]byte{[]byte("v")}}}},
		{"ToClientKvResponse(Put)", "030000000003", false, ToClientKvResponse{Data: KvPutResponse{}}},
		{"ToServerStopping", "03", true, ToServerStopping{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := unhex(t, tt.hex)
			var got any
			var out []byte
			var err error
			if tt.toServer {
				var m ToServer
				if m, err = DecodeToServer(in, Version7); err == nil {
					got = m
					out, err = EncodeToServer(m, Version7)
				}
			} else {
				var m ToClient
				if m, err = DecodeToClient(in, Version7); err == nil {
					got = m
					out, err = EncodeToClient(m, Version7)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decoded %#v\nwant    %#v", got, tt.want)
			}
			if !bytes.Equal(out, in) {
				t.Errorf("re-encoded %x\nwant       %x", out, in)
			}
		})
	}
}

// allToServer and allToClient hold every message and every union member with non-trivial values.
func allToServer() []ToServer {
	cp := ActorCheckpoint{ActorID: "actor-é", Generation: 7, Index: 1 << 40}
	mid := MessageID{GatewayID: gw, RequestID: req, MessageIndex: 65535}
	kv := func(d KvRequestData) ToServer { return ToServerKvRequest{ActorID: "a9", RequestID: 300, Data: d} }
	tun := func(k ToServerTunnelMessageKind) ToServer {
		return ToServerTunnelMessage{MessageID: mid, MessageKind: k}
	}
	return []ToServer{
		ToServerInit{Name: "pool", Version: 42, TotalSlots: 1000},
		ToServerInit{Name: "pool", PrepopulateActorNames: []ActorName{}, Metadata: ptr("")},
		ToServerInit{Name: "p", PrepopulateActorNames: []ActorName{{"b", `{"x":1}`}, {"a", "{}"}}, Metadata: ptr("{}")},
		ToServerEvents{},
		ToServerEvents{
			{Checkpoint: cp, Inner: EventActorIntent{Intent: ActorIntentSleep{}}},
			{Checkpoint: cp, Inner: EventActorIntent{Intent: ActorIntentStop{}}},
			{Checkpoint: cp, Inner: EventActorStateUpdate{State: ActorStateRunning{}}},
			{Checkpoint: cp, Inner: EventActorStateUpdate{State: ActorStateStopped{Code: StopCodeError, Message: ptr("boom")}}},
			{Checkpoint: cp, Inner: EventActorSetAlarm{AlarmTs: ptr(int64(-5))}},
			{Checkpoint: cp, Inner: EventActorSetAlarm{}},
		},
		ToServerAckCommands{LastCommandCheckpoints: []ActorCheckpoint{cp, {ActorID: "b", Index: -1}}},
		ToServerStopping{},
		ToServerPong{Ts: -1},
		kv(KvGetRequest{Keys: [][]byte{{}, {0, 1}, []byte(strings.Repeat("k", 200))}}),
		kv(KvListRequest{Query: KvListAllQuery{}}),
		kv(KvListRequest{Query: KvListRangeQuery{Start: []byte{1}, End: []byte{}, Exclusive: true}, Reverse: ptr(true), Limit: ptr(uint64(1 << 63))}),
		kv(KvListRequest{Query: KvListPrefixQuery{Key: []byte{5, 1}}, Reverse: ptr(false)}),
		kv(KvPutRequest{Keys: [][]byte{{1}, {2}}, Values: [][]byte{{}, {3, 4}}}),
		kv(KvDeleteRequest{Keys: [][]byte{{9}}}),
		kv(KvDeleteRangeRequest{Start: []byte{0}, End: []byte{0xff}}),
		kv(KvDropRequest{}),
		tun(ToServerResponseStart{Status: 503, Headers: []Header{{"x-rivet-error", "runner.actor_not_found"}, {"a", ""}}, Stream: true}),
		tun(ToServerResponseStart{Status: 204, Headers: []Header{}, Body: []byte{}}),
		tun(ToServerResponseChunk{Body: []byte("chunk"), Finish: true}),
		tun(ToServerResponseAbort{}),
		tun(ToServerWebSocketOpen{CanHibernate: true}),
		tun(ToServerWebSocketMessage{Data: []byte{0, 1, 2}, Binary: true}),
		tun(ToServerWebSocketMessageAck{Index: 513}),
		tun(ToServerWebSocketClose{Code: ptr(uint16(1011)), Reason: ptr("Actor not found"), Hibernate: true}),
		tun(ToServerWebSocketClose{}),
	}
}

func allToClient() []ToClient {
	cp := ActorCheckpoint{ActorID: "a1", Generation: 1 << 31, Index: -(1 << 62)}
	mid := MessageID{GatewayID: gw, RequestID: req, MessageIndex: 3}
	kv := func(d KvResponseData) ToClient { return ToClientKvResponse{RequestID: 1 << 31, Data: d} }
	tun := func(k ToClientTunnelMessageKind) ToClient {
		return ToClientTunnelMessage{MessageID: mid, MessageKind: k}
	}
	md := []KvMetadata{{Version: []byte("2.3.19"), UpdateTs: 1700000000000}, {Version: []byte{}, UpdateTs: -1}}
	return []ToClient{
		ToClientInit{RunnerID: strings.Repeat("x", 300), Metadata: ProtocolMetadata{RunnerLostThreshold: 15000, ActorStopThreshold: 1800000, ServerlessDrainGracePeriod: ptr(int64(10000))}},
		ToClientCommands{
			{Checkpoint: cp, Inner: CommandStartActor{Config: ActorConfig{Name: "counter", CreateTs: 5}, HibernatingRequests: []HibernatingRequest{{gw, req}, {GatewayID{9, 9, 9, 9}, RequestID{}}}}},
			{Checkpoint: cp, Inner: CommandStartActor{Config: ActorConfig{Name: "c", Key: ptr(""), Input: []byte{}}, HibernatingRequests: []HibernatingRequest{}}},
			{Checkpoint: cp, Inner: CommandStopActor{}},
		},
		ToClientAckEvents{LastEventCheckpoints: []ActorCheckpoint{}},
		ToClientAckEvents{LastEventCheckpoints: []ActorCheckpoint{cp}},
		kv(KvErrorResponse{Message: "actor does not exist"}),
		kv(KvGetResponse{Keys: [][]byte{{1}, {2}}, Values: [][]byte{{3}, {}}, Metadata: md}),
		kv(KvListResponse{Keys: [][]byte{}, Values: [][]byte{}, Metadata: []KvMetadata{}}),
		kv(KvListResponse{Keys: [][]byte{{1}}, Values: [][]byte{{2}}, Metadata: md[:1]}),
		kv(KvPutResponse{}),
		kv(KvDeleteResponse{}),
		kv(KvDropResponse{}),
		tun(ToClientRequestStart{ActorID: "a1", Method: "POST", Path: "/action/inc?x=1", Headers: []Header{{"content-type", "application/octet-stream"}, {"x-rivet-encoding", "bare"}}, Body: []byte{0xde, 0xad}, Stream: true}),
		tun(ToClientRequestChunk{Body: []byte{}, Finish: true}),
		tun(ToClientRequestAbort{}),
		tun(ToClientWebSocketOpen{ActorID: "a1", Path: "/connect", Headers: []Header{{"sec-websocket-protocol", "rivet"}}}),
		tun(ToClientWebSocketMessage{Data: []byte("hi-text")}),
		tun(ToClientWebSocketClose{Code: ptr(uint16(1000)), Reason: ptr("bye")}),
		tun(ToClientWebSocketClose{}),
		ToClientPing{Ts: 1700000000000},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, v := range []int{Version5, Version6, Version7} {
		for i, m := range allToServer() {
			if _, ok := m.(ToServerKvRequest); ok && v < Version7 {
				if _, dr := m.(ToServerKvRequest).Data.(KvDeleteRangeRequest); dr {
					continue // TestVersions covers it
				}
			}
			b, err := EncodeToServer(m, v)
			if err != nil {
				t.Fatalf("v%d ToServer #%d %T: encode: %v", v, i, m, err)
			}
			got, err := DecodeToServer(b, v)
			if err != nil {
				t.Fatalf("v%d ToServer #%d %T: decode %x: %v", v, i, m, b, err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("v%d ToServer #%d: decoded %#v\nwant %#v", v, i, got, m)
			}
		}
		for i, m := range allToClient() {
			b, err := EncodeToClient(m, v)
			if err != nil {
				t.Fatalf("v%d ToClient #%d %T: encode: %v", v, i, m, err)
			}
			got, err := DecodeToClient(b, v)
			if err != nil {
				t.Fatalf("v%d ToClient #%d %T: decode %x: %v", v, i, m, b, err)
			}
			want := m
			if init, ok := m.(ToClientInit); ok && v == Version5 {
				init.Metadata = ProtocolMetadata{RunnerLostThreshold: init.Metadata.RunnerLostThreshold}
				want = init
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("v%d ToClient #%d: decoded %#v\nwant %#v", v, i, got, want)
			}
		}
	}
}

// TestVersions pins the v5/v6 differences: the metadata fields and the KV request tags.
func TestVersions(t *testing.T) {
	init := ToClientInit{RunnerID: "r1", Metadata: ProtocolMetadata{RunnerLostThreshold: 15000, ActorStopThreshold: 1800000}}
	for _, tt := range []struct {
		version int
		hex     string
	}{
		{Version5, "0002723198 3a000000000000"},
		{Version6, "00027231983a00000000000040771b000000000000"},
		{Version7, "00027231983a00000000000040771b000000000000"},
	} {
		b, err := EncodeToClient(init, tt.version)
		if err != nil || !bytes.Equal(b, unhex(t, tt.hex)) {
			t.Errorf("v%d ToClientInit = %x, %v; want %s", tt.version, b, err, tt.hex)
		}
	}
	drop := ToServerKvRequest{ActorID: "a1", Data: KvDropRequest{}}
	for v, tag := range map[int]string{Version5: "04", Version6: "04", Version7: "05"} {
		want := unhex(t, "0502613100000000"+tag)
		b, err := EncodeToServer(drop, v)
		if err != nil || !bytes.Equal(b, want) {
			t.Errorf("v%d KvDrop = %x, %v; want %x", v, b, err, want)
		}
		if m, err := DecodeToServer(want, v); err != nil || !reflect.DeepEqual(m, drop) {
			t.Errorf("v%d decode KvDrop %x = %#v, %v", v, want, m, err)
		}
	}
	// Tag 4 is KvDeleteRange in v7 (start, end follow); a v6 frame with tag 5 is unknown.
	dr := unhex(t, "050261310000000004 0100 01ff")
	if m, err := DecodeToServer(dr, Version7); err != nil || !reflect.DeepEqual(m, ToServerKvRequest{ActorID: "a1", Data: KvDeleteRangeRequest{Start: []byte{0}, End: []byte{0xff}}}) {
		t.Errorf("v7 decode DeleteRange = %#v, %v", m, err)
	}
	if _, err := DecodeToServer(unhex(t, "050261310000000005"), Version6); !isDecodeErrorAt(err, 8, "unknown KvRequestData tag 5") {
		t.Errorf("v6 tag 5: %v", err)
	}
	for _, v := range []int{Version5, Version6} {
		_, err := EncodeToServer(ToServerKvRequest{Data: KvDeleteRangeRequest{}}, v)
		var ee *EncodeError
		if !errors.As(err, &ee) || !strings.Contains(ee.Msg, "needs protocol v7") {
			t.Errorf("v%d DeleteRange encode: %v", v, err)
		}
	}
	for _, v := range []int{0, 4, 8} {
		var ue *UnsupportedVersionError
		if _, err := EncodeToServer(ToServerStopping{}, v); !errors.As(err, &ue) {
			t.Errorf("encode v%d: %v", v, err)
		}
		if _, err := DecodeToClient([]byte{5}, v); !errors.As(err, &ue) {
			t.Errorf("decode v%d: %v", v, err)
		}
	}
}

func TestServerlessInit(t *testing.T) {
	m := ToServerlessServerInit{RunnerID: "r1", RunnerProtocolVersion: 7}
	b, err := EncodeServerlessInit(m, Version7)
	want := unhex(t, "0700 00 027231 0700")
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("EncodeServerlessInit = %x, %v; want %x", b, err, want)
	}
	got, v, err := DecodeServerlessInit(b)
	if err != nil || got != m || v != Version7 {
		t.Fatalf("DecodeServerlessInit = %#v, %d, %v", got, v, err)
	}
	if _, _, err := DecodeServerlessInit(unhex(t, "0700 01")); !isDecodeErrorAt(err, 2, "unknown ToServerlessServer tag 1") {
		t.Fatalf("bad tag: %v", err)
	}
	var ue *UnsupportedVersionError
	if _, _, err := DecodeServerlessInit(unhex(t, "0900 00 00 0700")); !errors.As(err, &ue) {
		t.Fatalf("bad version: %v", err)
	}
}

func isDecodeErrorAt(err error, off int, msg string) bool {
	var de *bare.DecodeError
	return errors.As(err, &de) && de.Offset == off && strings.Contains(de.Msg, msg)
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name     string
		hex      string
		toServer bool
		offset   int
		msg      string
	}{
		{"empty", "", true, 0, "truncated union tag"},
		{"unknown ToServer", "07", true, 0, "unknown ToServer tag 7"},
		{"unknown ToClient", "06", false, 0, "unknown ToClient tag 6"},
		{"big tag", "8001", true, 0, "unknown ToServer tag 128"},
		{"unknown Event", "01 01 026131 00000000 0000000000000000 03", true, 17, "unknown Event tag 3"},
		{"unknown ActorIntent", "01 01 026131 00000000 0000000000000000 00 02", true, 18, "unknown ActorIntent tag 2"},
		{"unknown ActorState", "01 01 026131 00000000 0000000000000000 01 02", true, 18, "unknown ActorState tag 2"},
		{"unknown StopCode", "01 01 026131 00000000 0000000000000000 01 01 02 00", true, 19, "unknown StopCode 2"},
		{"unknown Command", "01 01 026131 00000000 0000000000000000 02", false, 17, "unknown Command tag 2"},
		{"unknown KvRequestData v7", "05 026131 00000000 06", true, 8, "unknown KvRequestData tag 6"},
		{"unknown KvListQuery", "05 026131 00000000 01 03", true, 9, "unknown KvListQuery tag 3"},
		{"unknown KvResponseData", "03 00000000 06", false, 5, "unknown KvResponseData tag 6"},
		{"unknown server kind", "06 01020304 0a0b0c0d 0000 07", true, 11, "unknown ToServerTunnelMessageKind tag 7"},
		{"unknown client kind", "04 01020304 0a0b0c0d 0000 06", false, 11, "unknown ToClientTunnelMessageKind tag 6"},
		{"trailing", "03 00", true, 1, "1 trailing bytes"},
		{"truncated pong", "04 0068e5cf8b0100", true, 1, "truncated u64"},
		{"duplicate header", "06 01020304 0a0b0c0d 0000 00 c800 02 0161 0162 0161 0163 00 00", true, 19, "duplicate map key a"},
		{"duplicate actor name", "00 0165 01000000 01000000 01 02 0161 0100 0161 0100 00", true, 17, "duplicate map key a"},
		{"bad bool", "04 01020304 0a0b0c0d 0000 04 00 02", false, 13, "bool is 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := unhex(t, tt.hex)
			var err error
			var m any
			if tt.toServer {
				m, err = DecodeToServer(in, Version7)
			} else {
				m, err = DecodeToClient(in, Version7)
			}
			if !isDecodeErrorAt(err, tt.offset, tt.msg) {
				t.Fatalf("error %v, want %q at %d", err, tt.msg, tt.offset)
			}
			if m != nil {
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
		{"nil ToServer", ToServer(nil), "nil ToServer"},
		{"nil ToClient", ToClient(nil), "nil ToClient"},
		{"nil event", ToServerEvents{{}}, "nil Event"},
		{"nil intent", ToServerEvents{{Inner: EventActorIntent{}}}, "nil ActorIntent"},
		{"nil state", ToServerEvents{{Inner: EventActorStateUpdate{}}}, "nil ActorState"},
		{"bad stop code", ToServerEvents{{Inner: EventActorStateUpdate{State: ActorStateStopped{Code: 2}}}}, "unknown StopCode 2"},
		{"nil command", ToClientCommands{{}}, "nil Command"},
		{"nil kv request", ToServerKvRequest{}, "nil KvRequestData"},
		{"nil list query", ToServerKvRequest{Data: KvListRequest{}}, "nil KvListQuery"},
		{"nil kv response", ToClientKvResponse{}, "nil KvResponseData"},
		{"nil server kind", ToServerTunnelMessage{}, "nil ToServerTunnelMessageKind"},
		{"nil client kind", ToClientTunnelMessage{}, "nil ToClientTunnelMessageKind"},
		{"duplicate header", ToClientTunnelMessage{MessageKind: ToClientWebSocketOpen{Headers: []Header{{"a", "1"}, {"a", "2"}}}}, `duplicate header "a"`},
		{"duplicate actor name", ToServerInit{PrepopulateActorNames: []ActorName{{"x", "{}"}, {"x", "{}"}}}, `duplicate actor name "x"`},
		{"bad UTF-8", ToServerInit{Name: "\xff"}, "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			switch m := tt.m.(type) {
			case ToClient:
				_, err = EncodeToClient(m, Version7)
			case ToServer:
				_, err = EncodeToServer(m, Version7)
			case nil:
				if strings.Contains(tt.name, "ToServer") {
					_, err = EncodeToServer(nil, Version7)
				} else {
					_, err = EncodeToClient(nil, Version7)
				}
			default:
				t.Fatalf("%T is no message", m)
			}
			var ee *EncodeError
			if !errors.As(err, &ee) || !strings.Contains(ee.Msg, tt.msg) {
				t.Fatalf("error %v, want %q", err, tt.msg)
			}
		})
	}
}
