package runner

import (
	"strings"
	"testing"

	"github.com/berthhq/berth/sdk/bare"
)

// Benchmarks of the hot frames of a runner socket: gateway traffic (a request start with
// headers, a response start, a WebSocket message), KV and lifecycle batches. Each encodes into
// a reused Writer and decodes from a fixed frame, through the exported API only.

func benchToClient() map[string]ToClient {
	mid := MessageID{GatewayID: gw, RequestID: req, MessageIndex: 7}
	cp := ActorCheckpoint{ActorID: "0123456789abcdefghijklmnopqrst", Generation: 3, Index: 42}
	return map[string]ToClient{
		"RequestStart": ToClientTunnelMessage{MessageID: mid, MessageKind: ToClientRequestStart{
			ActorID: cp.ActorID, Method: "POST", Path: "/action/increment?x=1",
			Headers: []Header{{"content-type", "application/octet-stream"}, {"x-rivet-encoding", "bare"},
				{"host", "example.com"}, {"user-agent", "bench/1.0"}, {"accept", "*/*"}},
			Body: []byte(strings.Repeat("b", 64)), Stream: false}},
		"WebSocketMessage": ToClientTunnelMessage{MessageID: mid, MessageKind: ToClientWebSocketMessage{Data: []byte(strings.Repeat("m", 128)), Binary: true}},
		"KvGetResponse": ToClientKvResponse{RequestID: 9, Data: KvGetResponse{
			Keys: [][]byte{[]byte("k1"), []byte("k2"), []byte("k3")}, Values: [][]byte{[]byte("v1"), []byte("v2"), []byte("v3")},
			Metadata: []KvMetadata{{Version: []byte("1"), UpdateTs: 1}, {Version: []byte("1"), UpdateTs: 2}, {Version: []byte("1"), UpdateTs: 3}}}},
		"Commands": ToClientCommands{
			{Checkpoint: cp, Inner: CommandStartActor{Config: ActorConfig{Name: "counter", Key: ptr("k"), CreateTs: 1700000000000, Input: []byte("in")}, HibernatingRequests: []HibernatingRequest{}}},
			{Checkpoint: cp, Inner: CommandStopActor{}},
		},
		"Init": ToClientInit{RunnerID: "runner-1", Metadata: ProtocolMetadata{RunnerLostThreshold: 15000, ActorStopThreshold: 1800000, ServerlessDrainGracePeriod: ptr(int64(10000))}},
	}
}

func benchToServer() map[string]ToServer {
	mid := MessageID{GatewayID: gw, RequestID: req, MessageIndex: 7}
	cp := ActorCheckpoint{ActorID: "0123456789abcdefghijklmnopqrst", Generation: 3, Index: 42}
	return map[string]ToServer{
		"ResponseStart": ToServerTunnelMessage{MessageID: mid, MessageKind: ToServerResponseStart{
			Status: 200, Headers: []Header{{"content-type", "application/octet-stream"}, {"content-length", "64"}},
			Body: []byte(strings.Repeat("r", 64))}},
		"WebSocketMessage": ToServerTunnelMessage{MessageID: mid, MessageKind: ToServerWebSocketMessage{Data: []byte(strings.Repeat("m", 128)), Binary: true}},
		"KvPutRequest": ToServerKvRequest{ActorID: cp.ActorID, RequestID: 9, Data: KvPutRequest{
			Keys: [][]byte{[]byte("k1"), []byte("k2"), []byte("k3")}, Values: [][]byte{[]byte("v1"), []byte("v2"), []byte("v3")}}},
		"Events": ToServerEvents{
			{Checkpoint: cp, Inner: EventActorStateUpdate{State: ActorStateRunning{}}},
			{Checkpoint: cp, Inner: EventActorStateUpdate{State: ActorStateStopped{Code: StopCodeError, Message: ptr("boom")}}},
			{Checkpoint: cp, Inner: EventActorSetAlarm{AlarmTs: ptr(int64(1700000000000))}},
		},
		"Pong": ToServerPong{Ts: 1700000000000},
	}
}

var benchNames = struct{ client, server []string }{
	[]string{"RequestStart", "WebSocketMessage", "KvGetResponse", "Commands", "Init"},
	[]string{"ResponseStart", "WebSocketMessage", "KvPutRequest", "Events", "Pong"},
}

func BenchmarkEncodeToClient(b *testing.B) {
	msgs := benchToClient()
	for _, name := range benchNames.client {
		m := msgs[name]
		b.Run(name, func(b *testing.B) {
			var w bare.Writer
			b.ReportAllocs()
			for b.Loop() {
				w.Reset()
				if err := AppendToClient(&w, m, LatestVersion); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(w.Len()))
		})
	}
}

func BenchmarkDecodeToClient(b *testing.B) {
	msgs := benchToClient()
	for _, name := range benchNames.client {
		in, err := EncodeToClient(msgs[name], LatestVersion)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if _, err := DecodeToClient(in, LatestVersion); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncodeToServer(b *testing.B) {
	msgs := benchToServer()
	for _, name := range benchNames.server {
		m := msgs[name]
		b.Run(name, func(b *testing.B) {
			var w bare.Writer
			b.ReportAllocs()
			for b.Loop() {
				w.Reset()
				if err := AppendToServer(&w, m, LatestVersion); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(w.Len()))
		})
	}
}

func BenchmarkDecodeToServer(b *testing.B) {
	msgs := benchToServer()
	for _, name := range benchNames.server {
		in, err := EncodeToServer(msgs[name], LatestVersion)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if _, err := DecodeToServer(in, LatestVersion); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
