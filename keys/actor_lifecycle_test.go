package keys

import (
	"encoding/json"
	"reflect"
	"testing"
)

func i64(v int64) *int64 { return &v }

func TestActorStateCodec(t *testing.T) {
	rid := testID(3)
	s := ActorState{V: ActorStateVersion, Phase: PhaseStopping, Namespace: ns1, Name: "n", Selector: "p", CrashPolicy: "restart", Generation: 2, NextGeneration: 3,
		RunnerID: &rid, NextCommandIdx: 2, LastEventIdx: 1, StopReason: StopSleep, WillWake: true,
		StartTs: i64(5), Deadline: i64(9), Error: json.RawMessage(`{"crashed":{"message":"x"}}`)}
	var k ActorStateKey
	got, err := k.Decode(k.Encode(s))
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip = %+v, %v", got, err)
	}
	for _, bad := range []string{`{"v":2}`, `[]`, `{"v":1,"generation":-1}`} {
		if _, err := k.Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%s) succeeded", bad)
		}
	}
}

func TestActorTimerTs(t *testing.T) {
	for _, tc := range []struct {
		s    ActorState
		want *int64
	}{
		{ActorState{Phase: PhaseStarting, Deadline: i64(10), AlarmTs: i64(5)}, i64(10)},
		{ActorState{Phase: PhaseRunning, Deadline: i64(10), AlarmTs: i64(5)}, nil},
		{ActorState{Phase: PhaseRunning, LivenessTs: i64(12), AlarmTs: i64(5)}, i64(12)}, // on an envoy
		{ActorState{Phase: PhaseStopping, Deadline: i64(10), LivenessTs: i64(8)}, i64(8)},
		{ActorState{Phase: PhaseSleeping, AlarmTs: i64(5)}, i64(5)},
		{ActorState{Phase: PhaseSleeping}, nil},
		{ActorState{Phase: PhaseSleeping, AlarmTs: i64(9), RescheduleTs: i64(6)}, i64(6)}, // concurrent_actor_limit_reached
		{ActorState{Phase: PhaseRescheduling, RescheduleTs: i64(7)}, i64(7)},
		{ActorState{Phase: PhasePending, PendingUntil: i64(8)}, i64(8)},
		{ActorState{Phase: PhasePending}, nil},
		{ActorState{Phase: PhaseDestroyed, AlarmTs: i64(5)}, nil},
	} {
		got := tc.s.TimerTs()
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("%s: TimerTs = %v, want %v", tc.s.Phase, got, tc.want)
		}
	}
}
