package actor

import (
	"context"
	"strconv"
	"strings"

	"github.com/berthhq/berth/keys"
	openvoy "github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/ops/internal/corrupt"
	oprunner "github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Host is where an actor is placed: a runner (protocol v7, by id) or an envoy (protocol
// v8, by key within the actor's namespace). Everything the lifecycle does that depends on
// the kind of host is in this file; the rest of the machine deals in Hosts.
type Host struct {
	// Socket names the host (RunnerID for a runner; Namespace and EnvoyKey for an envoy),
	// as the ownership records of engine nodes name its socket.
	keys.Socket
}

// RunnerHost is runner rid.
func RunnerHost(rid id.ID) Host { return Host{keys.RunnerSocket(rid)} }

// EnvoyHost is envoy key of namespace ns.
func EnvoyHost(ns id.ID, key string) Host { return Host{keys.EnvoySocket(ns, key)} }

// serverlessKeyPrefix starts the key of a serverless placeholder host (no envoy key a
// socket may carry starts with a NUL byte).
const serverlessKeyPrefix = "\x00serverless/"

// ServerlessHost is the placeholder host of generation of actor aid in namespace ns while
// its serverless pool's endpoint is asked to start it (POST {url}/start): the envoy that
// runs it is not known until it reports the actor, and the actor is then bound to it
// (bindServerless). Commands to a placeholder go to the /start request, not to a socket.
func ServerlessHost(ns id.ID, aid id.ID, generation uint32) Host {
	return EnvoyHost(ns, serverlessKeyPrefix+aid.String()+"/"+strconv.FormatUint(uint64(generation), 10))
}

// IsServerless reports whether h is a serverless placeholder (ServerlessHost).
func (h Host) IsServerless() bool { return strings.HasPrefix(h.EnvoyKey, serverlessKeyPrefix) }

func (h Host) String() string {
	if h.IsServerless() {
		return "serverless start " + strings.TrimPrefix(h.EnvoyKey, serverlessKeyPrefix)
	}
	if h.IsEnvoy() {
		return "envoy " + h.EnvoyKey
	}
	return "runner " + h.RunnerID.String()
}

// HostOf returns the host of an actor with state st; ok is false when it is not placed.
func HostOf(st keys.ActorState) (h Host, ok bool) {
	switch {
	case st.EnvoyKey != nil:
		return EnvoyHost(st.Namespace, *st.EnvoyKey), true
	case st.RunnerID != nil:
		return RunnerHost(*st.RunnerID), true
	}
	return Host{}, false
}

// setHost records h as the host of st (nil-free: the other kind is cleared).
func setHost(st *keys.ActorState, h Host) {
	st.RunnerID, st.EnvoyKey = nil, nil
	if h.IsEnvoy() {
		k := h.EnvoyKey
		st.EnvoyKey = &k
	} else {
		rid := h.RunnerID
		st.RunnerID = &rid
	}
}

func clearHost(st *keys.ActorState) { st.RunnerID, st.EnvoyKey = nil, nil }

// hostedOn reports whether st is placed on h.
func hostedOn(st keys.ActorState, h Host) bool {
	cur, ok := HostOf(st)
	return ok && cur == h
}

// errorFields names the host in an Actor error ({"runner_id": …} or {"envoy_key": …}).
func (h Host) errorFields() map[string]any {
	if h.IsServerless() {
		return map[string]any{"envoy_key": nil} // no envoy reported the actor
	}
	if h.IsEnvoy() {
		return map[string]any{"envoy_key": h.EnvoyKey}
	}
	return map[string]any{"runner_id": h.RunnerID.String()}
}

// lostReason is the Actor error code of a loss of kind reason (one of the Lost…
// constants, named for runners): envoys have the same codes with "envoy_" (Rivet's
// envoy_connection_lost, envoy_no_response).
func (h Host) lostReason(reason string) string {
	if h.IsEnvoy() {
		return strings.Replace(reason, "runner_", "envoy_", 1)
	}
	return reason
}

// MARK: stored commands

// commandKey is where command (aid, generation, index) for h is stored.
func (h Host) commandKey(aid id.ID, generation uint32, index int64) []byte {
	if h.IsEnvoy() {
		return keys.EnvoyCommandKey{Namespace: h.Namespace, EnvoyKey: h.EnvoyKey, ActorID: aid, Generation: generation, Index: index}.Pack()
	}
	return keys.RunnerCommandKey{RunnerID: h.RunnerID, ActorID: aid, Generation: generation, Index: index}.Pack()
}

// commandRange is every command stored for h.
func (h Host) commandRange() (begin, end []byte) {
	if h.IsEnvoy() {
		return keys.EnvoyCommandRange(h.Namespace, h.EnvoyKey)
	}
	return keys.RunnerCommandRange(h.RunnerID)
}

// commandsUpTo is what an acknowledgement of (aid, generation, index) clears.
func (h Host) commandsUpTo(aid id.ID, generation uint32, index int64) (begin, end []byte) {
	if h.IsEnvoy() {
		return keys.EnvoyCommandsUpTo(h.Namespace, h.EnvoyKey, aid, generation, index)
	}
	return keys.RunnerCommandsUpTo(h.RunnerID, aid, generation, index)
}

// unpackCommandKey parses a key of commandRange.
func (h Host) unpackCommandKey(b []byte) (aid id.ID, generation uint32, index int64, err error) {
	if h.IsEnvoy() {
		k, err := keys.UnpackEnvoyCommandKey(b)
		return k.ActorID, k.Generation, k.Index, corrupt.Mark("envoy", err)
	}
	k, err := keys.UnpackRunnerCommandKey(b)
	return k.ActorID, k.Generation, k.Index, corrupt.Mark("runner", err)
}

// MARK: placement

// pick chooses a host for a in its pool and takes a slot there for its next generation;
// ok is false when no host can take it now, none then the Actor error that says why
// (no_capacity: its runners are full or stale; no_envoys: the pool has no live envoy). A pool is hosted by envoys once one of its
// envoys registered (the runner config's protocol version is set, as on Rivet); read at
// snapshot isolation: a pool changes kind once, and a placement racing it lands on a host
// the pool still had.
func (m *machine) pick(a *actor) (h Host, ok bool, none string, err error) {
	st := &a.st
	_, envoys, err := keys.Get(m.ctx, m.tx.Snapshot(), keys.RunnerConfigProtocolVersionKey{Namespace: st.Namespace, Name: st.Selector})
	if err != nil {
		return Host{}, false, "", corrupt.Mark("runner_config", err)
	}
	if envoys {
		cfg, _, err := keys.Get(m.ctx, m.tx.Snapshot(), keys.RunnerConfigDataKey{Namespace: st.Namespace, Name: st.Selector})
		if err != nil {
			return Host{}, false, "", corrupt.Mark("runner_config", err)
		}
		if cfg.Serverless != nil {
			// The pool's endpoint starts it, whatever envoys are connected (docs/serverless.md
			// § 4.1), unless the pool has max_concurrent_actors allocated already (§ 4.7).
			ok, err := m.takePoolSlot(a, cfg.Serverless.MaxConcurrentActors)
			if err != nil || !ok {
				return Host{}, false, LimitReached, err
			}
			return ServerlessHost(st.Namespace, a.id, st.NextGeneration), true, "", nil
		}
		h, ok, err = m.pickEnvoy(a)
		return h, ok, "no_envoys", err
	}
	h, ok, err = m.pickRunner(a)
	return h, ok, "no_capacity", err
}

// takePoolSlot counts a in its serverless pool's allocated actors unless limit are
// already; the count is read serializably, so concurrent allocations in the pool conflict
// rather than overshoot the limit. deallocate gives the slot back.
func (m *machine) takePoolSlot(a *actor, limit uint64) (bool, error) {
	k := keys.PoolActorsKey{Namespace: a.st.Namespace, Name: a.st.Selector}
	n, _, err := keys.Get(m.ctx, m.tx, k)
	if err != nil {
		return false, corrupt.Mark("runner_config", err)
	}
	if n >= 0 && uint64(n) >= limit {
		return false, nil
	}
	keys.Add(m.tx, k, 1)
	a.st.PoolSlot = true
	return true, nil
}

func (m *machine) pickEnvoy(a *actor) (Host, bool, error) {
	st := &a.st
	key, ok, err := openvoy.Pick(m.ctx, m.tx, openvoy.PickInput{
		Namespace: st.Namespace, PoolName: st.Selector, Strategy: m.cfg.EnvoyPlacement,
		PingedSinceMs: m.now - m.cfg.EnvoyEligibleThreshold.Milliseconds(), Random: m.cfg.jitter,
	})
	if err != nil || !ok {
		return Host{}, false, err
	}
	openvoy.PlaceActor(m.tx, openvoy.PlaceActorInput{Namespace: st.Namespace, EnvoyKey: key, ActorID: a.id, Generation: st.NextGeneration})
	return EnvoyHost(st.Namespace, key), true, nil
}

func (m *machine) pickRunner(a *actor) (Host, bool, error) {
	st := &a.st
	cands, err := oprunner.ListCandidates(m.ctx, m.tx, st.Namespace, st.Selector, m.now-m.cfg.RunnerEligibleThreshold.Milliseconds(), 16)
	if err != nil {
		return Host{}, false, err
	}
	oprunner.PrefetchCounts(m.ctx, m.tx, cands)
	for _, i := range placementOrder(cands, m.cfg.jitter, m.cfg.runnerHere) {
		ok, err := oprunner.TakeSlot(m.ctx, m.tx, oprunner.TakeSlotInput{
			RunnerID: cands[i].RunnerID, ActorID: a.id, Generation: st.NextGeneration, PingedSinceMs: m.now - m.cfg.RunnerEligibleThreshold.Milliseconds(),
			From: &cands[i],
		})
		if err != nil {
			return Host{}, false, err
		}
		if ok {
			return RunnerHost(cands[i].RunnerID), true, nil
		}
	}
	return Host{}, false, nil
}

// release frees a's slot on h and reports a host that this left stopped (a draining
// runner or a stopping envoy with no actor left), whose socket is then closed.
func (m *machine) release(a *actor, h Host) error {
	if h.IsServerless() {
		return nil // a placeholder holds no slot
	}
	if h.IsEnvoy() {
		out, err := openvoy.ReleaseActor(m.ctx, m.tx, h.Namespace, h.EnvoyKey, a.id)
		if err != nil {
			return err
		}
		if out.Stopped {
			m.eff.StoppedEnvoys = append(m.eff.StoppedEnvoys, h)
		}
		return nil
	}
	if err := oprunner.ReleaseSlot(m.ctx, m.tx, h.RunnerID, a.id); err != nil {
		return err
	}
	if err := m.demandChanged(&a.st); err != nil {
		return err
	}
	fin, err := oprunner.FinishDrain(m.ctx, m.tx, oprunner.FinishDrainInput{RunnerID: h.RunnerID, NowMs: m.now})
	if err != nil && !rerr.Is(err, rerr.CodeRunnerNotFound) {
		return err
	}
	if fin.Stopped {
		m.eff.StoppedRunners = append(m.eff.StoppedRunners, h.RunnerID)
	}
	return nil
}

// MARK: liveness

// alive reports whether envoy h pinged within the lost threshold (serializable: a ping
// landing meanwhile makes the check retry). Runners are watched by their own loop
// (engine/pegboard.Runners), so a runner host is always alive here.
func (m *machine) alive(h Host) (bool, error) {
	if !h.IsEnvoy() || h.IsServerless() {
		return true, nil // a placeholder waits for its start deadline
	}
	ping, found, err := keys.Get(m.ctx, m.tx, keys.EnvoyLastPingTsKey{Namespace: h.Namespace, EnvoyKey: h.EnvoyKey})
	if err != nil {
		return false, corrupt.Mark("envoy", err)
	}
	return found && ping >= m.now-m.cfg.EnvoyLostThreshold.Milliseconds(), nil
}

// livenessDeadline is when an actor placed on h next checks its host: envoys have no
// lifecycle loop of their own that loses their actors (as on Rivet, the actor checks its
// envoy's last ping every lost threshold); nil for runners.
func (m *machine) livenessDeadline(h Host) *int64 {
	if !h.IsEnvoy() || h.IsServerless() {
		return nil
	}
	return ptr(m.now + m.cfg.EnvoyLostThreshold.Milliseconds())
}

// MARK: capacity

// Capacity is what a datacenter's pool offers a new actor.
type Capacity struct {
	// Configured: the pool has a runner config here (else a create here is
	// actor.no_runner_config_configured).
	Configured bool `json:"configured"`
	// Free: a host of the pool could take the actor now (a runner of the newest version with
	// a free slot, or an envoy, pinged within the eligibility threshold), as pick would
	// find one.
	Free bool `json:"free"`
}

// DatacenterCapacity is the capacity of a pool in one datacenter.
type DatacenterCapacity struct {
	Datacenter string
	Capacity
}

// PoolCapacity reads the capacity of pool (ns, pool) at nowMs, as placement would see it;
// nothing is written or taken. tx is only read (envoy placement wants a Transaction).
func PoolCapacity(ctx context.Context, tx udb.Transaction, cfg Config, ns id.ID, pool string, nowMs int64) (Capacity, error) {
	snap := tx.Snapshot()
	_, configured, err := keys.Get(ctx, snap, keys.RunnerConfigDataKey{Namespace: ns, Name: pool})
	if err != nil || !configured {
		return Capacity{}, corrupt.Mark("runner config", err)
	}
	_, envoys, err := keys.Get(ctx, snap, keys.RunnerConfigProtocolVersionKey{Namespace: ns, Name: pool})
	if err != nil {
		return Capacity{}, corrupt.Mark("runner_config", err)
	}
	var free bool
	if envoys {
		_, free, err = openvoy.Pick(ctx, tx, openvoy.PickInput{Namespace: ns, PoolName: pool, Strategy: cfg.EnvoyPlacement,
			PingedSinceMs: nowMs - cfg.EnvoyEligibleThreshold.Milliseconds(), Random: func(int64) int64 { return 0 }})
	} else {
		var cands []oprunner.Candidate
		cands, err = oprunner.ListCandidates(ctx, snap, ns, pool, nowMs-cfg.RunnerEligibleThreshold.Milliseconds(), 1)
		free = len(cands) > 0
	}
	return Capacity{Configured: true, Free: free}, err
}

// AwaitsServerless reports whether actor aid waits on its serverless placeholder for an
// envoy of e's pool to report it: such an envoy may use the actor's KV and SQLite before
// its first event binds the actor to it (bindServerless).
func AwaitsServerless(ctx context.Context, r udb.ReadTransaction, e Host, aid id.ID) (bool, error) {
	st, found, err := keys.Get(ctx, r, keys.ActorStateKey{ActorID: aid})
	if err != nil || !found {
		return false, corrupt.Mark("actor", err)
	}
	return WaitsForPool(ctx, r, st, e)
}

// WaitsForPool reports whether an actor in state st waits on a serverless placeholder and
// e is an envoy of its pool.
func WaitsForPool(ctx context.Context, r udb.ReadTransaction, st keys.ActorState, e Host) (bool, error) {
	cur, ok := HostOf(st)
	if !ok || !cur.IsServerless() || !e.IsEnvoy() || e.IsServerless() || e.Namespace != st.Namespace {
		return false, nil
	}
	pool, found, err := keys.Get(ctx, r, keys.EnvoyPoolNameKey{Namespace: e.Namespace, EnvoyKey: e.EnvoyKey})
	if err != nil {
		return false, corrupt.Mark("envoy", err)
	}
	return found && pool == st.Selector, nil
}

// bindServerless binds a, waiting on its serverless placeholder, to envoy e when e is of
// a's pool (it reported the actor its endpoint was asked to start): the placeholder's
// stored start is dropped, e gets the slot, and later commands go to e's socket. It
// reports whether a was bound.
func (m *machine) bindServerless(a *actor, e Host) (bool, error) {
	ok, err := WaitsForPool(m.ctx, m.tx, a.st, e)
	if err != nil || !ok {
		return false, err
	}
	cur, _ := HostOf(a.st)
	begin, end := cur.commandRange()
	m.tx.ClearRange(begin, end)
	openvoy.PlaceActor(m.tx, openvoy.PlaceActorInput{Namespace: e.Namespace, EnvoyKey: e.EnvoyKey, ActorID: a.id, Generation: a.st.Generation})
	setHost(&a.st, e)
	a.st.LivenessTs = m.livenessDeadline(e)
	return true, nil
}
