package bridge

import (
	"reflect"
	"testing"

	ep "github.com/berthhq/berth/sdk/protocol/envoy"
	rp "github.com/berthhq/berth/sdk/protocol/runner"
)

func ptr[T any](v T) *T { return &v }

var cp = rp.ActorCheckpoint{ActorID: "a", Generation: 3, Index: 7}

// Every runner-protocol message that has an envoy form comes back unchanged from a round
// trip, and the envoy forms carry the same fields (checked through the encoders: an envoy
// value that does not encode fails).
func TestRoundTrips(t *testing.T) {
	events := []rp.EventWrapper{
		{Checkpoint: cp, Inner: rp.EventActorIntent{Intent: rp.ActorIntentSleep{}}},
		{Checkpoint: cp, Inner: rp.EventActorIntent{Intent: rp.ActorIntentStop{}}},
		{Checkpoint: cp, Inner: rp.EventActorStateUpdate{State: rp.ActorStateRunning{}}},
		{Checkpoint: cp, Inner: rp.EventActorStateUpdate{State: rp.ActorStateStopped{Code: rp.StopCodeError, Message: ptr("boom")}}},
		{Checkpoint: cp, Inner: rp.EventActorSetAlarm{AlarmTs: ptr(int64(99))}},
		{Checkpoint: cp, Inner: rp.EventActorSetAlarm{}},
	}
	env := EventsToEnvoy(events)
	if _, err := ep.EncodeToRivet(ep.ToRivetEvents(env), ep.Version8); err != nil {
		t.Fatal(err)
	}
	if back := EventsToRunner(env); !reflect.DeepEqual(back, events) {
		t.Fatalf("events: %+v, want %+v", back, events)
	}

	cmds := []rp.CommandWrapper{
		{Checkpoint: cp, Inner: rp.CommandStartActor{Config: rp.ActorConfig{Name: "n", Key: ptr("k"), CreateTs: 5, Input: []byte("in")},
			HibernatingRequests: []rp.HibernatingRequest{{GatewayID: rp.GatewayID{1, 2, 3, 4}, RequestID: rp.RequestID{5, 6, 7, 8}}}}},
		{Checkpoint: cp, Inner: rp.CommandStopActor{}},
	}
	for _, c := range cmds {
		e := CommandToEnvoy(c, ep.StopActorReasonGoingAway)
		if _, err := ep.EncodeToEnvoy(ep.ToEnvoyCommands{e}, ep.Version8); err != nil {
			t.Fatal(err)
		}
		if back := CommandToRunner(e); !reflect.DeepEqual(back, c) {
			t.Fatalf("command: %+v, want %+v", back, c)
		}
	}
	if s := CommandToEnvoy(cmds[1], ep.StopActorReasonLost).Inner.(ep.CommandStopActor); s.Reason != ep.StopActorReasonLost {
		t.Fatalf("stop reason %v, want lost", s.Reason)
	}

	kvs := []rp.KvRequestData{
		rp.KvGetRequest{Keys: [][]byte{{1}}},
		rp.KvListRequest{Query: rp.KvListAllQuery{}, Reverse: ptr(true), Limit: ptr(uint64(3))},
		rp.KvListRequest{Query: rp.KvListRangeQuery{Start: []byte{1}, End: []byte{2}, Exclusive: true}},
		rp.KvListRequest{Query: rp.KvListPrefixQuery{Key: []byte{9}}},
		rp.KvPutRequest{Keys: [][]byte{{1}}, Values: [][]byte{{2}}},
		rp.KvDeleteRequest{Keys: [][]byte{{1}}},
		rp.KvDeleteRangeRequest{Start: []byte{1}, End: []byte{2}},
		rp.KvDropRequest{},
	}
	for _, k := range kvs {
		if back := KvRequestToRunner(KvRequestToEnvoy(k)); !reflect.DeepEqual(back, k) {
			t.Fatalf("kv request: %+v, want %+v", back, k)
		}
	}
	md := []rp.KvMetadata{{Version: []byte("v"), UpdateTs: 4}}
	for _, k := range []rp.KvResponseData{
		rp.KvErrorResponse{Message: "no"}, rp.KvGetResponse{Keys: [][]byte{{1}}, Values: [][]byte{{2}}, Metadata: md},
		rp.KvListResponse{Keys: [][]byte{{1}}, Values: [][]byte{{2}}, Metadata: md}, rp.KvPutResponse{}, rp.KvDeleteResponse{}, rp.KvDropResponse{},
	} {
		if back := KvResponseToRunner(KvResponseToEnvoy(k)); !reflect.DeepEqual(back, k) {
			t.Fatalf("kv response: %+v, want %+v", back, k)
		}
	}

	hs := []rp.Header{{Name: "a", Value: "b"}}
	for _, k := range []rp.ToClientTunnelMessageKind{
		rp.ToClientRequestStart{ActorID: "a", Method: "GET", Path: "/p?q", Headers: hs, Body: []byte("b"), Stream: true},
		rp.ToClientRequestChunk{Body: []byte("c"), Finish: true}, rp.ToClientRequestAbort{},
		rp.ToClientWebSocketOpen{ActorID: "a", Path: "/ws", Headers: hs}, rp.ToClientWebSocketMessage{Data: []byte("m"), Binary: true},
		rp.ToClientWebSocketClose{Code: ptr(uint16(1000)), Reason: ptr("bye")},
	} {
		if back := ToClientTunnel(ToEnvoyTunnel(k)); !reflect.DeepEqual(back, k) {
			t.Fatalf("tunnel to actor: %+v, want %+v", back, k)
		}
	}
	for _, k := range []rp.ToServerTunnelMessageKind{
		rp.ToServerResponseStart{Status: 201, Headers: hs, Body: []byte("b")}, rp.ToServerResponseChunk{Body: []byte("c"), Finish: true},
		rp.ToServerResponseAbort{}, rp.ToServerWebSocketOpen{CanHibernate: true}, rp.ToServerWebSocketMessage{Data: []byte("m")},
		rp.ToServerWebSocketMessageAck{Index: 9}, rp.ToServerWebSocketClose{Code: ptr(uint16(1011)), Reason: ptr("x"), Hibernate: true},
	} {
		if back := ToServerTunnel(ToRivetTunnel(k)); !reflect.DeepEqual(back, k) {
			t.Fatalf("tunnel from actor: %+v, want %+v", back, k)
		}
	}
	mid := rp.MessageID{GatewayID: rp.GatewayID{1, 2, 3, 4}, RequestID: rp.RequestID{5, 6, 7, 8}, MessageIndex: 65535}
	if back := MessageIDToRunner(MessageIDToEnvoy(mid)); back != mid {
		t.Fatalf("message id %+v", back)
	}
}

// Envoy-only flow control has no runner form: it is dropped, not mistranslated.
func TestEnvoyOnlyKinds(t *testing.T) {
	if k := ToServerTunnel(ep.ToRivetRequestBodyWindowUpdate{ConsumedBytes: 5}); k != nil {
		t.Fatalf("window update became %+v", k)
	}
	if k := ToClientTunnel(ep.ToEnvoyRequestBodyCancel{}); k != nil {
		t.Fatalf("body cancel became %+v", k)
	}
}
