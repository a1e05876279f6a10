package keys

import (
	"encoding/json"
	"fmt"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// ActorHistoryLen is how many of its latest lifecycle transitions an actor's history keeps.
const ActorHistoryLen = 64

// ActorHistoryEvent is one lifecycle transition of an actor (docs/udb.md, "Actor history").
type ActorHistoryEvent struct {
	Seq        uint64          `json:"seq"`
	Ts         int64           `json:"ts"`
	Kind       string          `json:"kind"` // created, placed, running, stopping, sleeping, woken, pending, crashed, rescheduled, destroyed
	Generation uint32          `json:"generation"`
	RunnerID   *id.ID          `json:"runner_id,omitempty"`
	EnvoyKey   *string         `json:"envoy_key,omitempty"`
	StopReason StopReason      `json:"stop_reason,omitempty"`
	Error      json.RawMessage `json:"error,omitempty"`
}

// ActorHistoryKey is (ACTOR, DATA, actor_id, HISTORY, slot) → JSON ActorHistoryEvent: the
// transition numbered Seq is in slot Seq mod ActorHistoryLen, so the history is a ring that
// each transition writes blind, overwriting the oldest once full.
type ActorHistoryKey struct {
	ActorID id.ID
	Slot    int64
}

func (k ActorHistoryKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagActor, tagData, k.ActorID, tagHistory, k.Slot})
}

// UnpackActorHistoryKey parses an ActorHistoryKey, checking every constant segment.
func UnpackActorHistoryKey(b []byte) (ActorHistoryKey, error) {
	t, err := unpack("ActorHistoryKey", pegboard, b, tagActor, tagData, anyID, tagHistory, anyInt)
	if err != nil {
		return ActorHistoryKey{}, err
	}
	return ActorHistoryKey{ActorID: t[2].(id.ID), Slot: t[4].(int64)}, nil
}

func (ActorHistoryKey) Encode(v ActorHistoryEvent) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("keys: encode ActorHistoryEvent: %v", err)) // plain data: cannot fail
	}
	return b
}

func (ActorHistoryKey) Decode(b []byte) (ActorHistoryEvent, error) {
	var v ActorHistoryEvent
	if err := json.Unmarshal(b, &v); err != nil {
		return ActorHistoryEvent{}, badValue("ActorHistoryKey", "%v", err)
	}
	return v, nil
}

// ActorHistoryRange is the history of actor aid.
func ActorHistoryRange(aid id.ID) (begin, end []byte) {
	return prefixRange(pegboard.Pack(tuple.Tuple{tagActor, tagData, aid, tagHistory}))
}
