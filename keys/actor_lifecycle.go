package keys

import (
	"encoding/json"
	"fmt"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// Actor lifecycle keys. Rivet keeps an actor's lifecycle in workflow state;
// berth keeps it in one record per actor (ActorStateKey), read and written
// whole by every transition, so that a transition is one serializable
// read-modify-write of one key plus its index changes.

// ActorStateKey is (ACTOR, DATA, actor_id, STATE) → ActorState, JSON: the
// actor's whole lifecycle.
type ActorStateKey struct{ ActorID id.ID }

func (k ActorStateKey) Pack() []byte { return actorDataKey(k.ActorID, tagState) }

// UnpackActorStateKey parses an ActorStateKey, checking every constant segment.
func UnpackActorStateKey(b []byte) (ActorStateKey, error) {
	aid, err := unpackActorData("ActorStateKey", b, tagState)
	return ActorStateKey{ActorID: aid}, err
}

func (ActorStateKey) Encode(v ActorState) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("keys: encode ActorState: %v", err)) // plain data: cannot fail
	}
	return b
}

func (ActorStateKey) Decode(b []byte) (ActorState, error) {
	var v ActorState
	if err := json.Unmarshal(b, &v); err != nil {
		return ActorState{}, badValue("ActorStateKey", "%v", err)
	}
	if v.V != ActorStateVersion {
		return ActorState{}, badValue("ActorStateKey", "version %d, want %d", v.V, ActorStateVersion)
	}
	return v, nil
}

// ActorStateVersion is the version of the ActorState encoding.
const ActorStateVersion = 1

// ActorPhase is where an actor is in its lifecycle.
type ActorPhase string

const (
	// PhasePending: waiting in its pool's pending queue for a runner with a free slot.
	PhasePending ActorPhase = "pending"
	// PhaseStarting: placed on a runner, start command sent, Running not yet reported.
	PhaseStarting ActorPhase = "starting"
	// PhaseRunning: the runner reported it running; it is connectable.
	PhaseRunning ActorPhase = "running"
	// PhaseStopping: a stop command was sent (StopReason says why); waiting for Stopped.
	PhaseStopping ActorPhase = "stopping"
	// PhaseSleeping: not placed; a wake (request, alarm, API) starts it again.
	PhaseSleeping ActorPhase = "sleeping"
	// PhaseRescheduling: not placed; placement is retried at RescheduleTs (crash backoff).
	PhaseRescheduling ActorPhase = "rescheduling"
	// PhaseDestroyed: gone for good.
	PhaseDestroyed ActorPhase = "destroyed"
)

// StopReason is why a stop command was sent.
type StopReason string

const (
	StopSleep     StopReason = "sleep"      // sleep intent or API sleep: sleeps after
	StopIntent    StopReason = "stop"       // the actor asked to stop: destroyed after
	StopDestroy   StopReason = "destroy"    // API delete: destroyed after
	StopGoingAway StopReason = "going_away" // API reschedule or an envoy's drain: placed elsewhere after
	StopDrain     StopReason = "drain"      // a runner's drain: the crash policy decides after (sleep, restart, destroy)
)

// ActorState is an actor's lifecycle record. Times are unix milliseconds.
type ActorState struct {
	V     int        `json:"v"`
	Phase ActorPhase `json:"phase"`
	// The actor's identity, never changed after creation (also in its data keys, which
	// lists read; copied here so that a transition reads one key).
	Namespace   id.ID   `json:"namespace"`
	Name        string  `json:"name"`
	Key         *string `json:"key,omitempty"`
	Selector    string  `json:"runner_name_selector"`
	CreateTs    int64   `json:"create_ts"`
	CrashPolicy string  `json:"crash_policy"` // restart | sleep | destroy
	// Generation is the generation of the current or last placement; NextGeneration the
	// one the next placement gets (0 first, then one more for every new start).
	Generation     uint32 `json:"generation"`
	NextGeneration uint32 `json:"next_generation"`
	// RunnerID is the runner the actor is placed on (starting, running, stopping), when its
	// host is a runner; EnvoyKey the envoy (in the actor's namespace) when its host is an
	// envoy. At most one is set; records written before envoys hosted actors have no
	// envoy_key and decode as runner-hosted.
	RunnerID *id.ID  `json:"runner_id,omitempty"`
	EnvoyKey *string `json:"envoy_key,omitempty"`
	// NextCommandIdx is the index of the next command of this generation; LastEventIdx
	// the index of the last event applied (-1 for none).
	NextCommandIdx int64      `json:"next_command_idx"`
	LastEventIdx   int64      `json:"last_event_idx"`
	StopReason     StopReason `json:"stop_reason,omitempty"`
	// WillWake: a wake came while a sleep was under way; it starts again once stopped.
	WillWake bool `json:"will_wake,omitempty"`
	// PendingTs is when it joined the pending queue; its entry there is
	// PendingActorKey{.., PendingTs, actor}.
	PendingTs *int64 `json:"pending_ts,omitempty"`
	// PendingUntil, when set, sends a pending actor back to sleep at that time (a wake
	// that found no capacity).
	PendingUntil  *int64 `json:"pending_until,omitempty"`
	StartTs       *int64 `json:"start_ts,omitempty"`       // first time connectable
	ConnectableTs *int64 `json:"connectable_ts,omitempty"` // since when connectable
	SleepTs       *int64 `json:"sleep_ts,omitempty"`
	RescheduleTs  *int64 `json:"reschedule_ts,omitempty"`
	DestroyTs     *int64 `json:"destroy_ts,omitempty"`
	AlarmTs       *int64 `json:"alarm_ts,omitempty"`
	// Deadline is when the current phase times out (start or stop threshold); its
	// ActorTimerKey entry is the earliest of Deadline, LivenessTs, AlarmTs (sleeping),
	// RescheduleTs and PendingUntil — see TimerTs.
	Deadline *int64 `json:"deadline,omitempty"`
	// LivenessTs, set while the actor is placed on an envoy, is when it next checks that
	// its envoy still pings (envoys have no loop of their own that loses their actors).
	LivenessTs *int64 `json:"liveness_ts,omitempty"`
	// Error is the Actor JSON "error" value, raw JSON; nil when none.
	Error json.RawMessage `json:"error,omitempty"`
	// RetryCount and LastRetryTs drive the crash backoff.
	RetryCount  uint32 `json:"retry_count,omitempty"`
	LastRetryTs int64  `json:"last_retry_ts,omitempty"`
	// PoolSlot: the actor counts in its serverless pool's PoolActorsKey (it was allocated
	// there and not freed since).
	PoolSlot bool `json:"pool_slot,omitempty"`
	// LimitRetries counts the allocations refused by the pool's max_concurrent_actors since
	// LimitSinceTs, the first of them; both are cleared when the actor is placed.
	LimitRetries uint32 `json:"limit_retries,omitempty"`
	LimitSinceTs int64  `json:"limit_since_ts,omitempty"`
	// HistorySeq is the sequence number of the next ActorHistoryKey entry.
	HistorySeq uint64 `json:"history_seq,omitempty"`
}

// TimerTs is when the actor's timer must fire, or nil: the deadline of its phase, its
// reschedule time, its pending limit, or its alarm (or reschedule time) while it sleeps.
func (s ActorState) TimerTs() *int64 {
	var out *int64
	pick := func(t *int64) {
		if t != nil && (out == nil || *t < *out) {
			out = t
		}
	}
	switch s.Phase {
	case PhaseStarting, PhaseStopping:
		pick(s.Deadline)
		pick(s.LivenessTs)
	case PhaseRunning:
		// A running actor's alarm is kept for when it sleeps.
		pick(s.LivenessTs)
	case PhaseRescheduling:
		pick(s.RescheduleTs)
	case PhasePending:
		pick(s.PendingUntil)
	case PhaseSleeping:
		pick(s.AlarmTs)
		pick(s.RescheduleTs) // a retry after concurrent_actor_limit_reached
	}
	return out
}

// ActorInputKey is (ACTOR, DATA, actor_id, INPUT) + (chunk) → the raw input bytes given
// at creation, in chunks of ChunkSize. Read and write it with GetChunked and SetChunked.
type ActorInputKey struct{ ActorID id.ID }

func (k ActorInputKey) Pack() []byte          { return actorDataKey(k.ActorID, tagInput) }
func (k ActorInputKey) ChunkKey(i int) []byte { return chunkKey(k.Pack(), i) }

func (ActorInputKey) Encode(v []byte) []byte          { return v }
func (ActorInputKey) Decode(b []byte) ([]byte, error) { return b, nil }

// ActorTimerKey is (ACTOR, TIMER, due_ts, actor_id) → empty: one entry per actor whose
// lifecycle has a time to act (ActorState.TimerTs), scanned by the pegboard loop.
type ActorTimerKey struct {
	DueTs   int64
	ActorID id.ID
}

func (k ActorTimerKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagActor, tagTimer, k.DueTs, k.ActorID})
}

// UnpackActorTimerKey parses an ActorTimerKey, checking every constant segment.
func UnpackActorTimerKey(b []byte) (ActorTimerKey, error) {
	t, err := unpack("ActorTimerKey", pegboard, b, tagActor, tagTimer, anyInt, anyID)
	if err != nil {
		return ActorTimerKey{}, err
	}
	return ActorTimerKey{DueTs: t[2].(int64), ActorID: t[3].(id.ID)}, nil
}

func (ActorTimerKey) Encode(Empty) []byte            { return encodeEmpty() }
func (ActorTimerKey) Decode(b []byte) (Empty, error) { return decodeEmpty("ActorTimerKey", b) }

// ActorTimerRange is every ActorTimerKey, earliest first; BeforeTs(t) is those due before t.
func ActorTimerRange() CreateTsRange[id.ID] {
	return newCreateTsRange[id.ID](pegboard, tuple.Tuple{tagActor, tagTimer})
}

// PendingActorKey is (NAMESPACE, PENDING_ACTOR_BY_RUNNER_NAME_SELECTOR, ns, selector, ts,
// actor_id) → generation (big-endian u32): the pool's pending queue, oldest first.
type PendingActorKey struct {
	Namespace id.ID
	Selector  string
	Ts        int64
	ActorID   id.ID
}

func (k PendingActorKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, tagPendingActorByRunnerNameSelector, k.Namespace, k.Selector, k.Ts, k.ActorID})
}

// UnpackPendingActorKey parses a PendingActorKey, checking every constant segment.
func UnpackPendingActorKey(b []byte) (PendingActorKey, error) {
	t, err := unpack("PendingActorKey", pegboard, b, tagNamespace, tagPendingActorByRunnerNameSelector, anyID, anyString, anyInt, anyID)
	if err != nil {
		return PendingActorKey{}, err
	}
	return PendingActorKey{Namespace: t[2].(id.ID), Selector: t[3].(string), Ts: t[4].(int64), ActorID: t[5].(id.ID)}, nil
}

func (PendingActorKey) Encode(generation uint32) []byte { return encodeU32(generation) }
func (PendingActorKey) Decode(b []byte) (uint32, error) { return decodeU32("PendingActorKey", b) }

// PendingActorKeyRange is the pending queue of pool selector in namespace ns.
func PendingActorKeyRange(ns id.ID, selector string) (begin, end []byte) {
	return prefixRange(pegboard.Pack(tuple.Tuple{tagNamespace, tagPendingActorByRunnerNameSelector, ns, selector}))
}

// RunnerCommandKey is (RUNNER, DATA, runner_id, ACTOR, COMMAND, actor_id, generation,
// index) → a stored command in ops/actor's encoding (a start with its create_ts, or a
// stop with its reason): kept until the runner acknowledges it.
type RunnerCommandKey struct {
	RunnerID   id.ID
	ActorID    id.ID
	Generation uint32
	Index      int64
}

func (k RunnerCommandKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagRunner, tagData, k.RunnerID, tagActor, tagCommand, k.ActorID, int64(k.Generation), k.Index})
}

// UnpackRunnerCommandKey parses a RunnerCommandKey, checking every constant segment.
func UnpackRunnerCommandKey(b []byte) (RunnerCommandKey, error) {
	t, err := unpack("RunnerCommandKey", pegboard, b, tagRunner, tagData, anyID, tagActor, tagCommand, anyID, anyInt, anyInt)
	if err != nil {
		return RunnerCommandKey{}, err
	}
	gen := t[6].(int64)
	if gen < 0 || gen > 1<<32-1 {
		return RunnerCommandKey{}, badKey("RunnerCommandKey", b, "generation %d out of range", gen)
	}
	return RunnerCommandKey{RunnerID: t[2].(id.ID), ActorID: t[5].(id.ID), Generation: uint32(gen), Index: t[7].(int64)}, nil
}

func (RunnerCommandKey) Encode(v []byte) []byte          { return v }
func (RunnerCommandKey) Decode(b []byte) ([]byte, error) { return b, nil }

// RunnerCommandRange is every stored command of runner rid.
func RunnerCommandRange(rid id.ID) (begin, end []byte) {
	return prefixRange(pegboard.Pack(tuple.Tuple{tagRunner, tagData, rid, tagActor, tagCommand}))
}

// RunnerActorCommandRange is the stored commands of actor aid on runner rid.
func RunnerActorCommandRange(rid, aid id.ID) (begin, end []byte) {
	return prefixRange(pegboard.Pack(tuple.Tuple{tagRunner, tagData, rid, tagActor, tagCommand, aid}))
}

// RunnerCommandsUpTo is the stored commands of (actor aid, generation) on runner rid with
// index ≤ index: what an acknowledgement of that index clears.
func RunnerCommandsUpTo(rid, aid id.ID, generation uint32, index int64) (begin, end []byte) {
	prefix := pegboard.Pack(tuple.Tuple{tagRunner, tagData, rid, tagActor, tagCommand, aid, int64(generation)})
	begin, _ = prefixRange(prefix)
	_, end = prefixRange(tuple.Tuple{index}.AppendPack(prefix))
	return begin, end
}
