package envoy

import (
	"strings"
	"testing"

	"github.com/berthhq/berth/sdk/bare"
)

// Benchmarks of the hot frames of an envoy socket: gateway traffic (a request start with
// headers, a response start, a WebSocket message), KV, lifecycle and the SQLite page store.
// Each encodes into a reused Writer and decodes from a fixed frame, through the exported API.

var benchCP = ActorCheckpoint{ActorID: "0123456789abcdefghijklmnopqrst", Generation: 3, Index: 42}

func benchPages(n int) []SqliteDirtyPage {
	pages := make([]SqliteDirtyPage, n)
	for i := range pages {
		pages[i] = SqliteDirtyPage{Pgno: uint32(i + 1), Bytes: []byte(strings.Repeat("p", 4096))}
	}
	return pages
}

func benchToEnvoy() (names []string, msgs map[string]ToEnvoy) {
	mid := MessageID{GatewayID: gw, RequestID: req, MessageIndex: 7}
	fetched := make([]SqliteFetchedPage, 4)
	for i := range fetched {
		fetched[i] = SqliteFetchedPage{Pgno: uint32(i + 1), Bytes: []byte(strings.Repeat("p", 4096))}
	}
	msgs = map[string]ToEnvoy{
		"RequestStart": ToEnvoyTunnelMessage{MessageID: mid, MessageKind: ToEnvoyRequestStart{
			ActorID: benchCP.ActorID, ActorGeneration: ptr(uint32(3)), Method: "POST", Path: "/action/increment?x=1",
			Headers: []Header{{"content-type", "application/octet-stream"}, {"x-rivet-encoding", "bare"},
				{"host", "example.com"}, {"user-agent", "bench/1.0"}, {"accept", "*/*"}},
			Body: []byte(strings.Repeat("b", 64)), ResponseStream: true}},
		"WebSocketMessage": ToEnvoyTunnelMessage{MessageID: mid, MessageKind: ToEnvoyWebSocketMessage{Data: []byte(strings.Repeat("m", 128)), Binary: true}},
		"KvGetResponse": ToEnvoyKvResponse{RequestID: 9, Data: KvGetResponse{
			Keys: [][]byte{[]byte("k1"), []byte("k2"), []byte("k3")}, Values: [][]byte{[]byte("v1"), []byte("v2"), []byte("v3")},
			Metadata: []KvMetadata{{Version: []byte("1"), UpdateTs: 1}, {Version: []byte("1"), UpdateTs: 2}, {Version: []byte("1"), UpdateTs: 3}}}},
		"Commands": ToEnvoyCommands{
			{Checkpoint: benchCP, Inner: CommandStartActor{Config: ActorConfig{Name: "counter", Key: ptr("k"), CreateTs: 1700000000000, Input: []byte("in")},
				HibernatingRequests: []HibernatingRequest{}, PreloadedKv: &PreloadedKv{
					Entries:          []PreloadedKvEntry{{Key: []byte("k1"), Value: []byte("v1"), Metadata: KvMetadata{Version: []byte("1"), UpdateTs: 1}}},
					RequestedGetKeys: [][]byte{[]byte("k1")}, RequestedPrefixes: [][]byte{}}}},
			{Checkpoint: benchCP, Inner: CommandStopActor{Reason: StopActorReasonSleepIntent}},
		},
		"SqliteGetPagesResponse": ToEnvoySqliteGetPagesResponse{RequestID: 5, Data: SqliteGetPagesOk{Pages: fetched, HeadTxid: ptr(uint64(9))}},
		"SqliteExecuteResponse": ToEnvoySqliteExecuteResponse{RequestID: 6, Data: SqliteExecuteOk{Result: SqliteExecuteResult{
			Columns: []string{"id", "name", "score"},
			Rows: [][]SqliteValue{
				{SqliteValueInteger{Value: 1}, SqliteValueText{Value: "alice"}, SqliteFloat(1.5)},
				{SqliteValueInteger{Value: 2}, SqliteValueText{Value: "bob"}, SqliteValueNull{}},
			},
			Changes: 0}}},
	}
	return []string{"RequestStart", "WebSocketMessage", "KvGetResponse", "Commands", "SqliteGetPagesResponse", "SqliteExecuteResponse"}, msgs
}

func benchToRivet() (names []string, msgs map[string]ToRivet) {
	mid := MessageID{GatewayID: gw, RequestID: req, MessageIndex: 7}
	msgs = map[string]ToRivet{
		"ResponseStart": ToRivetTunnelMessage{MessageID: mid, MessageKind: ToRivetResponseStart{
			Status: 200, Headers: []Header{{"content-type", "application/octet-stream"}, {"content-length", "64"}},
			Body: []byte(strings.Repeat("r", 64))}},
		"WebSocketMessage": ToRivetTunnelMessage{MessageID: mid, MessageKind: ToRivetWebSocketMessage{Data: []byte(strings.Repeat("m", 128)), Binary: true}},
		"KvPutRequest": ToRivetKvRequest{ActorID: benchCP.ActorID, RequestID: 9, Data: KvPutRequest{
			Keys: [][]byte{[]byte("k1"), []byte("k2"), []byte("k3")}, Values: [][]byte{[]byte("v1"), []byte("v2"), []byte("v3")}}},
		"Events": ToRivetEvents{
			{Checkpoint: benchCP, Inner: EventActorStateUpdate{State: ActorStateRunning{}}},
			{Checkpoint: benchCP, Inner: EventActorStateUpdate{State: ActorStateStopped{Code: StopCodeError, Message: ptr("boom")}}},
			{Checkpoint: benchCP, Inner: EventActorSetAlarm{AlarmTs: ptr(int64(1700000000000))}},
		},
		"SqliteCommitRequest": ToRivetSqliteCommitRequest{RequestID: 7, Data: SqliteCommitRequest{
			ActorID: benchCP.ActorID, DirtyPages: benchPages(4), DbSizePages: 4, NowMs: 1700000000000,
			ExpectedGeneration: ptr(uint64(3)), ExpectedHeadTxid: ptr(uint64(8))}},
		"SqliteExecuteRequest": ToRivetSqliteExecuteRequest{RequestID: 8, Data: SqliteExecuteRequest{
			NamespaceID: "ns", ActorID: benchCP.ActorID, Generation: 3, SQL: "INSERT INTO t (id, name, score) VALUES (?, ?, ?)",
			Params: []SqliteValue{SqliteValueInteger{Value: 1}, SqliteValueText{Value: "alice"}, SqliteFloat(1.5)}}},
	}
	return []string{"ResponseStart", "WebSocketMessage", "KvPutRequest", "Events", "SqliteCommitRequest", "SqliteExecuteRequest"}, msgs
}

func BenchmarkEncodeToEnvoy(b *testing.B) {
	names, msgs := benchToEnvoy()
	for _, name := range names {
		m := msgs[name]
		b.Run(name, func(b *testing.B) {
			var w bare.Writer
			b.ReportAllocs()
			for b.Loop() {
				w.Reset()
				if err := AppendToEnvoy(&w, m, LatestVersion); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(w.Len()))
		})
	}
}

func BenchmarkDecodeToEnvoy(b *testing.B) {
	names, msgs := benchToEnvoy()
	for _, name := range names {
		in, err := EncodeToEnvoy(msgs[name], LatestVersion)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if _, err := DecodeToEnvoy(in, LatestVersion); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncodeToRivet(b *testing.B) {
	names, msgs := benchToRivet()
	for _, name := range names {
		m := msgs[name]
		b.Run(name, func(b *testing.B) {
			var w bare.Writer
			b.ReportAllocs()
			for b.Loop() {
				w.Reset()
				if err := AppendToRivet(&w, m, LatestVersion); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(w.Len()))
		})
	}
}

func BenchmarkDecodeToRivet(b *testing.B) {
	names, msgs := benchToRivet()
	for _, name := range names {
		in, err := EncodeToRivet(msgs[name], LatestVersion)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if _, err := DecodeToRivet(in, LatestVersion); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
