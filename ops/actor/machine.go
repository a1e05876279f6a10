package actor

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actorkv"
	"github.com/berthhq/berth/ops/internal/corrupt"
	oprunner "github.com/berthhq/berth/ops/runner"
	opsqlite "github.com/berthhq/berth/ops/sqlite"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// machine is one transaction's view of the lifecycle: every transition goes through it.
type machine struct {
	ctx context.Context
	tx  udb.Transaction
	cfg Config
	now int64
	eff *Effects
	// slPools caches serverlessRunnerPool.
	slPools map[poolRef]bool
}

func newMachine(ctx context.Context, tx udb.Transaction, cfg Config, now int64) *machine {
	return &machine{ctx: ctx, tx: tx, cfg: cfg, now: now, eff: &Effects{}}
}

// actor is an actor's record as loaded, and as the transition leaves it.
type actor struct {
	id  id.ID
	old keys.ActorState // as stored, for the index changes
	st  keys.ActorState
	// created is set on an actor this transaction creates: its start command's input is
	// input, and it has no hibernating requests, so neither is read from the store.
	created bool
	input   []byte
}

// load reads actor aid's state serializably; found is false when it does not exist.
func (m *machine) load(aid id.ID) (*actor, bool, error) {
	st, found, err := keys.Get(m.ctx, m.tx, keys.ActorStateKey{ActorID: aid})
	if err != nil || !found {
		return nil, false, corrupt.Mark("actor", err)
	}
	return &actor{id: aid, old: st, st: st}, true, nil
}

// mustLoad is load with actor.not_found for a missing actor.
func (m *machine) mustLoad(aid id.ID) (*actor, error) {
	a, found, err := m.load(aid)
	if err == nil && !found {
		err = rerr.ActorNotFound(aid.String())
	}
	return a, err
}

// save writes a's state and moves its timer entry. sleep_ts is kept only while the actor
// sleeps, as on Rivet.
func (m *machine) save(a *actor) {
	if a.st.Phase != keys.PhaseSleeping {
		a.st.SleepTs = nil
	}
	m.record(a)
	keys.Set(m.tx, keys.ActorStateKey{ActorID: a.id}, a.st)
	oldT, newT := a.old.TimerTs(), a.st.TimerTs()
	if oldT != nil && (newT == nil || *oldT != *newT) {
		keys.Clear(m.tx, keys.ActorTimerKey{DueTs: *oldT, ActorID: a.id})
	}
	if newT != nil && (oldT == nil || *oldT != *newT) {
		keys.Set(m.tx, keys.ActorTimerKey{DueTs: *newT, ActorID: a.id}, keys.Empty{})
	}
	a.old = a.st
}

func (m *machine) ts() *int64 { t := m.now; return &t }

// MARK: placement

// place puts a on a host of its pool (pick), or, with none free, queues it (force, or a
// restart/destroy policy) or puts it to sleep with error no_capacity, or no_envoys in a
// pool of envoys (sleep policy, as Rivet). fromQueue skips the fairness rule that a new actor queues behind waiting ones.
func (m *machine) place(a *actor, force, fromQueue bool) error {
	st := &a.st
	if !fromQueue {
		waiting, err := m.queueLen(st.Namespace, st.Selector, 1)
		if err != nil {
			return err
		}
		if waiting > 0 {
			return m.noCapacity(a, force, "no_capacity")
		}
	}
	h, ok, none, err := m.pick(a)
	if err != nil {
		return err
	}
	if ok {
		return m.start(a, h)
	}
	if none == LimitReached {
		return m.limitReached(a)
	}
	return m.noCapacity(a, force, none)
}

// LimitReached is the Actor error of an actor its serverless pool's max_concurrent_actors
// refused (docs/serverless.md § 4.7).
const LimitReached = "concurrent_actor_limit_reached"

// limitReached puts a, refused by its pool's max_concurrent_actors, to sleep with error
// LimitReached and a retry at reschedule_ts, 2 s · 2^n after the n-th refusal in a row (4,
// 8, 16, 32 s…, Rivet's Reallocating without jitter); a refusal
// ActorRetryDurationThreshold after the first leaves it asleep until woken.
func (m *machine) limitReached(a *actor) error {
	st := &a.st
	if st.LimitRetries == 0 {
		st.LimitSinceTs = m.now
	}
	st.LimitRetries++
	if err := m.sleep(a, errorJSON(LimitReached)); err != nil {
		return err
	}
	if m.now-st.LimitSinceTs >= m.cfg.ActorRetryDurationThreshold.Milliseconds() {
		st.LimitRetries, st.LimitSinceTs = 0, 0
		return nil
	}
	st.RescheduleTs = ptr(m.now + m.cfg.BaseRetryTimeout.Milliseconds()<<min(st.LimitRetries, uint32(m.cfg.RescheduleBackoffMaxExponent)))
	return nil
}

// noCapacity handles an actor no host can take now: a sleep-policy actor sleeps with
// error code (unless forced: a wake), any other waits in the queue with it as its error,
// as on Rivet, unless it has one already (a crash's); placing the actor clears it.
func (m *machine) noCapacity(a *actor, force bool, code string) error {
	serverless, err := m.serverlessRunnerPool(a.st.Namespace, a.st.Selector)
	if err != nil {
		return err
	}
	if !force && a.st.CrashPolicy == CrashSleep && !serverless {
		if err := m.leaveQueue(a); err != nil {
			return err
		}
		return m.sleep(a, errorJSON(code))
	}
	if a.st.Error == nil {
		a.st.Error = errorJSON(code)
	}
	return m.enqueue(a)
}

// placementOrder is the order in which place tries the candidates: first one drawn at
// random among those with nearly the most free slots (within 10% of the best), so that
// concurrent placements in a pool spread over its runners instead of all conflicting on
// the emptiest one (Rivet draws among its candidates too), and among those, from the ones
// whose socket is on this node (here) when there are any: nodes placing at once then take
// slots on different runners and do not conflict (docs/scaling.md); then the others, most
// free slots first and, among equals, the freshest ping.
func placementOrder(cands []oprunner.Candidate, random func(n int64) int64, here func(rid id.ID) bool) []int {
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ca, cb := cands[a], cands[b]
		if c := cmp.Compare(cb.RemainingMillislots, ca.RemainingMillislots); c != 0 {
			return c
		}
		return cmp.Compare(cb.LastPingTs, ca.LastPingTs)
	})
	if len(order) < 2 {
		return order
	}
	best := cands[order[0]].RemainingMillislots
	tier := 1
	for tier < len(order) && cands[order[tier]].RemainingMillislots*10 >= best*9 {
		tier++
	}
	var near []int // positions in the tier of runners held here
	for i, c := range order[:tier] {
		if here(cands[c].RunnerID) {
			near = append(near, i)
		}
	}
	var pick int
	if len(near) > 0 {
		pick = near[random(int64(len(near)))]
	} else {
		pick = int(random(int64(tier)))
	}
	order[0], order[pick] = order[pick], order[0]
	return order
}

// start records a's placement on host h and sends the start command (index 0).
func (m *machine) start(a *actor, h Host) error {
	st := &a.st
	if err := m.leaveQueue(a); err != nil {
		return err
	}
	if !h.IsEnvoy() {
		if err := m.demandChanged(st); err != nil { // a slot taken
			return err
		}
	}
	st.Phase = keys.PhaseStarting
	st.Generation = st.NextGeneration
	st.NextGeneration++
	setHost(st, h)
	st.NextCommandIdx = 0
	st.LastEventIdx = -1
	st.StopReason = ""
	st.WillWake = false
	st.SleepTs, st.RescheduleTs, st.PendingUntil = nil, nil, nil
	st.LimitRetries, st.LimitSinceTs = 0, 0
	st.Deadline = ptr(m.now + m.cfg.ActorStartThreshold.Milliseconds())
	st.LivenessTs = m.livenessDeadline(h)
	st.Error = nil
	input, hibernating, err := m.startPayload(a)
	if err != nil {
		return err
	}
	m.send(a, &Start{Name: st.Name, Key: st.Key, CreateTs: m.now, Input: input, Hibernating: hibernating}, 0)
	return nil
}

// startPayload is what a's start command carries besides its config: its input and its
// hibernating WebSockets, read from the store unless a is being created.
func (m *machine) startPayload(a *actor) (input []byte, hibernating []HibernatingRequest, err error) {
	if a.created {
		if len(a.input) == 0 {
			return nil, []HibernatingRequest{}, nil // as an empty input reads back from the store
		}
		return a.input, []HibernatingRequest{}, nil
	}
	input, _, err = keys.GetChunked(m.ctx, m.tx, keys.ActorInputKey{ActorID: a.id})
	if err != nil {
		return nil, nil, corrupt.Mark("actor", err)
	}
	hibernating, err = m.hibernatingRequests(a.id, m.now-m.cfg.HibernatingRequestEligibleThreshold.Milliseconds())
	return input, hibernating, err
}

// enqueue puts a in its pool's pending queue (in creation order), if not there yet.
func (m *machine) enqueue(a *actor) error {
	st := &a.st
	if st.PendingTs == nil {
		st.PendingTs = ptr(m.now)
		keys.Set(m.tx, keys.PendingActorKey{Namespace: st.Namespace, Selector: st.Selector, Ts: st.CreateTs, ActorID: a.id}, st.NextGeneration)
		if err := m.demandChanged(st); err != nil {
			return err
		}
	}
	st.Phase = keys.PhasePending
	clearHost(st)
	st.Deadline, st.RescheduleTs = nil, nil
	return nil
}

// leaveQueue takes a out of its pending queue.
func (m *machine) leaveQueue(a *actor) error {
	st := &a.st
	if st.PendingTs != nil {
		keys.Clear(m.tx, keys.PendingActorKey{Namespace: st.Namespace, Selector: st.Selector, Ts: st.CreateTs, ActorID: a.id})
		st.PendingTs, st.PendingUntil = nil, nil
		return m.demandChanged(st)
	}
	return nil
}

// queueLen counts up to limit actors waiting in pool (ns, selector), serializably: a
// concurrent enqueue conflicts.
func (m *machine) queueLen(ns id.ID, selector string, limit int) (int, error) {
	begin, end := keys.PendingActorKeyRange(ns, selector)
	kvs, err := m.tx.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Limit: limit}).All(m.ctx)
	return len(kvs), err
}

// MARK: commands

// send stores a command for a's host, start (nil: a stop for reason), and queues it for
// sending.
func (m *machine) send(a *actor, start *Start, reason StopReason) {
	st := &a.st
	h, _ := HostOf(*st)
	c := Command{Host: h, Checkpoint: Checkpoint{ActorID: a.id, Generation: st.Generation, Index: st.NextCommandIdx}, Start: start, StopReason: reason}
	st.NextCommandIdx++
	m.tx.Set(h.commandKey(a.id, c.Checkpoint.Generation, c.Checkpoint.Index), encodeStored(c))
	m.eff.Commands = append(m.eff.Commands, c)
}

// Stored commands: one byte, 0 start (then the big-endian create_ts the start carried: the
// rest of its config is the actor's, rebuilt at replay) or 1 stop, then the stop reason's
// byte (records from before envoys hosted actors have none: read as 0).
func encodeStored(c Command) []byte {
	if c.Start != nil {
		return binary.BigEndian.AppendUint64([]byte{0}, uint64(c.Start.CreateTs))
	}
	return []byte{1, byte(c.StopReason)}
}

// sendStop tells a's runner to stop it, for reason.
func (m *machine) sendStop(a *actor, reason keys.StopReason) {
	st := &a.st
	if st.Phase == keys.PhaseRunning {
		m.eff.Stopped = append(m.eff.Stopped, a.id)
	}
	st.Phase = keys.PhaseStopping
	st.StopReason = reason
	st.ConnectableTs = nil
	st.Deadline = ptr(m.now + m.cfg.ActorStopThreshold.Milliseconds())
	m.send(a, nil, stopReasons[reason])
}

// stopReasons is the command's stop reason of each reason an actor stops for.
var stopReasons = map[keys.StopReason]StopReason{
	keys.StopSleep:     StopReasonSleep,
	keys.StopIntent:    StopReasonIntent,
	keys.StopDestroy:   StopReasonDestroy,
	keys.StopGoingAway: StopReasonGoingAway,
	keys.StopDrain:     StopReasonGoingAway,
}

// sendLost tells a's former host h that a is lost, in case it still runs it: a stop that
// is not stored (the actor is no longer placed there) and needs no answer.
func (m *machine) sendLost(a *actor, h Host) {
	cp := Checkpoint{ActorID: a.id, Generation: a.st.Generation, Index: a.st.NextCommandIdx}
	a.st.NextCommandIdx++
	m.eff.Commands = append(m.eff.Commands, Command{Host: h, Checkpoint: cp, StopReason: StopReasonLost})
}

// MARK: endings

// deallocate takes a off its host, freeing the slot; a host left stopped (draining and
// now idle) has its socket closed.
func (m *machine) deallocate(a *actor) error {
	st := &a.st
	h, ok := HostOf(*st)
	if !ok {
		return nil
	}
	if st.Phase == keys.PhaseRunning || st.Phase == keys.PhaseStopping {
		// Stopping was reported at its stop command: this is the stop itself, which a
		// request still waiting for the actor's answer watches for (guard).
		m.eff.Stopped = append(m.eff.Stopped, a.id)
	}
	if err := m.release(a, h); err != nil {
		return err
	}
	if st.PoolSlot {
		keys.Add(m.tx, keys.PoolActorsKey{Namespace: st.Namespace, Name: st.Selector}, -1)
		st.PoolSlot = false
	}
	clearHost(st)
	st.ConnectableTs = nil
	st.Deadline, st.LivenessTs = nil, nil
	m.eff.addPool(Pool{Namespace: st.Namespace, Selector: st.Selector})
	return nil
}

// sleep leaves a sleeping (not placed), with errJSON as its error if not nil.
func (m *machine) sleep(a *actor, errJSON json.RawMessage) error {
	st := &a.st
	if err := m.deallocate(a); err != nil {
		return err
	}
	if err := m.leaveQueue(a); err != nil {
		return err
	}
	st.Phase = keys.PhaseSleeping
	st.StopReason, st.WillWake = "", false
	st.SleepTs = ptr(m.now)
	st.RescheduleTs = nil
	if errJSON != nil {
		st.Error = errJSON
	}
	return nil
}

// destroy destroys a for good: its key is free again and its KV and SQLite database are gone.
func (m *machine) destroy(a *actor) error {
	st := &a.st
	if err := m.deallocate(a); err != nil {
		return err
	}
	if err := m.leaveQueue(a); err != nil {
		return err
	}
	st.Phase = keys.PhaseDestroyed
	st.DestroyTs = ptr(m.now)
	st.StopReason, st.WillWake = "", false
	st.RescheduleTs, st.AlarmTs, st.Deadline = nil, nil, nil
	keys.Clear(m.tx, keys.ActiveActorKey{Namespace: st.Namespace, Name: st.Name, CreateTs: st.CreateTs, ActorID: a.id})
	if st.Key != nil {
		keys.Set(m.tx, keys.ActorByKeyKey{Namespace: st.Namespace, Name: st.Name, Key: *st.Key, CreateTs: st.CreateTs, ActorID: a.id},
			keys.ActorByKeyValue{WorkflowID: a.id, IsDestroyed: true})
	}
	keys.Set(m.tx, keys.ActorDestroyTsKey{ActorID: a.id}, m.now)
	actorkv.DropAll(m.tx, a.id)
	if err := opsqlite.DropAll(m.ctx, m.tx, a.id); err != nil {
		return err
	}
	m.tx.ClearRange(keys.HibernatingRequestRange(a.id))
	m.eff.Destroyed = append(m.eff.Destroyed, a.id)
	return nil
}

// reschedule places a again: at once, or after the crash backoff when crashed is true and
// it crashed before recently.
func (m *machine) reschedule(a *actor, crashed bool) error {
	st := &a.st
	if err := m.deallocate(a); err != nil {
		return err
	}
	st.StopReason, st.WillWake = "", false
	if crashed {
		if m.now-st.LastRetryTs > m.cfg.RetryResetDuration.Milliseconds() {
			st.RetryCount = 0
		}
		st.RetryCount++
		st.LastRetryTs = m.now
		if st.RetryCount > 1 {
			st.Phase = keys.PhaseRescheduling
			st.RescheduleTs = ptr(m.now + m.cfg.backoff(st.RetryCount-1))
			return nil
		}
	}
	return m.place(a, true, false)
}

func ptr(v int64) *int64 { return &v }

// errorJSON is an Actor error without fields, e.g. "no_capacity".
func errorJSON(code string) json.RawMessage {
	b, _ := json.Marshal(code)
	return b
}

// errorWith is an Actor error {code: fields}.
func errorWith(code string, fields map[string]any) json.RawMessage {
	b, _ := json.Marshal(map[string]any{code: fields})
	return b
}

var errBadCommand = fmt.Errorf("%w: stored runner command", keys.ErrBadValue)
