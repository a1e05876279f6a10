package actor

import (
	"context"
	"encoding/json"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Input names one actor for a transition.
type Input struct {
	ActorID id.ID
	NowMs   int64
	Config  Config
}

// transition runs f on the actor in.ActorID and saves it.
func transition(ctx context.Context, tx udb.Transaction, in Input, f func(m *machine, a *actor) error) (Effects, error) {
	m := newMachine(ctx, tx, in.Config, in.NowMs)
	a, err := m.mustLoad(in.ActorID)
	if err != nil {
		return Effects{}, err
	}
	if err := f(m, a); err != nil {
		return Effects{}, err
	}
	m.save(a)
	return *m.eff, nil
}

// Sleep puts the actor to sleep (POST /actors/{id}/sleep): a running actor is told to
// stop and then sleeps; a waiting one (pending, rescheduling) sleeps at once. Sleeping,
// stopping or destroyed actors are left as they are.
func Sleep(ctx context.Context, tx udb.Transaction, in Input) (Effects, error) {
	return transition(ctx, tx, in, func(m *machine, a *actor) error {
		switch a.st.Phase {
		case keys.PhaseRunning, keys.PhaseStarting:
			m.sendStop(a, keys.StopSleep)
		case keys.PhasePending, keys.PhaseRescheduling:
			return m.sleep(a, nil)
		case keys.PhaseSleeping:
			a.st.RescheduleTs = nil // no more retries after concurrent_actor_limit_reached
		}
		return nil
	})
}

// Wake starts a sleeping actor (a gateway request, an alarm, the API). With no capacity
// it waits in the pending queue (a sleep-policy actor for at most WakePendingTimeout). A
// sleep under way is followed by a start; other phases are left as they are.
func Wake(ctx context.Context, tx udb.Transaction, in Input) (Effects, error) {
	return transition(ctx, tx, in, func(m *machine, a *actor) error {
		return m.wake(a)
	})
}

func (m *machine) wake(a *actor) error {
	switch a.st.Phase {
	case keys.PhaseSleeping:
		if err := m.place(a, true, false); err != nil {
			return err
		}
		if a.st.Phase == keys.PhasePending && a.st.CrashPolicy == CrashSleep {
			a.st.PendingUntil = ptr(m.now + m.cfg.WakePendingTimeout.Milliseconds())
		}
	case keys.PhaseStopping:
		if a.st.StopReason == keys.StopSleep || a.st.StopReason == keys.StopDrain {
			a.st.WillWake = true
		}
	case keys.PhaseRescheduling:
		return m.place(a, true, false)
	}
	return nil
}

// Reschedule moves the actor (POST /actors/{id}/reschedule): a running one is stopped and
// placed again, preferably elsewhere; a sleeping or rescheduling one is placed now.
func Reschedule(ctx context.Context, tx udb.Transaction, in Input) (Effects, error) {
	return transition(ctx, tx, in, func(m *machine, a *actor) error {
		switch a.st.Phase {
		case keys.PhaseRunning, keys.PhaseStarting:
			m.sendStop(a, keys.StopGoingAway)
		case keys.PhaseStopping:
			if a.st.StopReason == keys.StopSleep || a.st.StopReason == keys.StopDrain {
				a.st.StopReason = keys.StopGoingAway
			}
		case keys.PhaseSleeping, keys.PhaseRescheduling:
			a.st.RetryCount = 0
			return m.place(a, true, false)
		}
		return nil
	})
}

// Destroy destroys the actor (DELETE /actors/{id}): a placed one is told to stop and is
// destroyed once stopped; any other at once. Destroying a destroyed actor changes nothing.
// Done reports whether the actor is destroyed when the transaction commits.
func Destroy(ctx context.Context, tx udb.Transaction, in Input) (out DestroyOutput, err error) {
	out.Effects, err = transition(ctx, tx, in, func(m *machine, a *actor) error {
		switch a.st.Phase {
		case keys.PhaseDestroyed:
		case keys.PhaseRunning, keys.PhaseStarting:
			m.sendStop(a, keys.StopDestroy)
		case keys.PhaseStopping:
			a.st.StopReason = keys.StopDestroy
		default:
			if err := m.destroy(a); err != nil {
				return err
			}
		}
		out.Done = a.st.Phase == keys.PhaseDestroyed
		return nil
	})
	return out, err
}

// DestroyOutput reports a destroy.
type DestroyOutput struct {
	Effects Effects
	Done    bool
}

// GoingAway tells every actor on a draining host to stop. Once stopped, an envoy's actor is
// placed elsewhere; a runner's goes by its crash policy, as a stop while going away does on
// Rivet: sleep-policy actors sleep (the next request or alarm places them again),
// restart-policy ones are placed again, destroy-policy ones are destroyed.
func GoingAway(ctx context.Context, tx udb.Transaction, h Host, actors []id.ID, now int64, cfg Config) (Effects, error) {
	m := newMachine(ctx, tx, cfg, now)
	reason := keys.StopDrain
	if h.IsEnvoy() {
		reason = keys.StopGoingAway
	}
	for _, aid := range actors {
		a, found, err := m.load(aid)
		if err != nil {
			return Effects{}, err
		}
		if !found || !hostedOn(a.st, h) {
			continue
		}
		if a.st.Phase != keys.PhaseRunning && a.st.Phase != keys.PhaseStarting {
			continue // a stop is under way: its reason decides what follows
		}
		m.sendStop(a, reason)
		m.save(a)
	}
	return *m.eff, nil
}

// Lost reasons, the Actor error they record.
const (
	LostRunnerConnection = "runner_connection_lost"
	LostDrainingTimeout  = "runner_draining_timeout"
	LostNoResponse       = "runner_no_response"
)

// Lost handles actors whose host stopped while they were on it (it expired, or its drain
// timed out): each is taken off the host at once, with the error reason, and goes on by
// its stop reason or crash policy.
func Lost(ctx context.Context, tx udb.Transaction, h Host, actors []id.ID, reason string, now int64, cfg Config) (Effects, error) {
	m := newMachine(ctx, tx, cfg, now)
	for _, aid := range actors {
		a, found, err := m.load(aid)
		if err != nil {
			return Effects{}, err
		}
		if !found || !hostedOn(a.st, h) {
			continue
		}
		if err := m.lost(a, reason); err != nil {
			return Effects{}, err
		}
		m.save(a)
	}
	return *m.eff, nil
}

// lost takes a off its host at once, recording reason (a Lost… constant) as its error.
// An envoy's actor is then told to stop, in case its envoy still runs it, and a lost
// envoy actor sleeps whatever its crash policy (Rivet's actor2: the next request or alarm
// places it again).
func (m *machine) lost(a *actor, reason string) error {
	h, _ := HostOf(a.st)
	errJSON := errorWith(h.lostReason(reason), h.errorFields())
	policy := a.st.CrashPolicy
	if h.IsEnvoy() {
		m.sendLost(a, h)
		policy = CrashSleep
	}
	switch a.st.StopReason {
	case keys.StopSleep:
		return m.sleep(a, nil)
	case keys.StopIntent, keys.StopDestroy:
		return m.destroy(a)
	case keys.StopGoingAway:
		a.st.Error = errJSON
		return m.reschedule(a, false)
	}
	return m.crashedAs(a, errJSON, policy) // a drain that timed out too
}

// placedTimer handles the timer of a placed actor (starting, running, stopping): first its
// periodic check of its envoy's last ping, if due (lost when the envoy has not pinged
// within the lost threshold, else checked again later); then its phase's deadline, if due
// (a start or stop that took too long is lost, runner_no_response).
func (m *machine) placedTimer(a *actor) error {
	if lt := a.st.LivenessTs; lt != nil && *lt <= m.now {
		h, _ := HostOf(a.st)
		ok, err := m.alive(h)
		if err != nil {
			return err
		}
		if !ok {
			return m.lost(a, LostRunnerConnection)
		}
		a.st.LivenessTs = m.livenessDeadline(h)
	}
	if d := a.st.Deadline; a.st.Phase != keys.PhaseRunning && d != nil && *d <= m.now {
		return m.lost(a, LostNoResponse)
	}
	return nil
}

// Timer acts on an actor whose timer is due: an actor on an envoy checks its envoy's
// liveness, a start or stop that took too long is lost (runner_no_response), a crash
// backoff ends, a wake's wait for capacity ends, an alarm
// wakes a sleeping actor. A timer that is not due (it moved) does nothing.
func Timer(ctx context.Context, tx udb.Transaction, in Input) (Effects, error) {
	eff, err := transition(ctx, tx, in, func(m *machine, a *actor) error {
		due := a.st.TimerTs()
		if due == nil || *due > m.now {
			return nil
		}
		switch a.st.Phase {
		case keys.PhaseStarting, keys.PhaseStopping, keys.PhaseRunning:
			return m.placedTimer(a)
		case keys.PhaseRescheduling:
			return m.place(a, true, false)
		case keys.PhasePending:
			return m.sleep(a, nil)
		case keys.PhaseSleeping: // its alarm, or a retry after concurrent_actor_limit_reached
			if a.st.AlarmTs != nil && *a.st.AlarmTs <= m.now {
				a.st.AlarmTs = nil
			}
			return m.wake(a)
		}
		return nil
	})
	if rerr.Is(err, rerr.CodeActorNotFound) {
		return Effects{}, nil
	}
	return eff, err
}

// ServerlessFailed handles a serverless pool's /start that failed for generation
// generation of actor aid (docs/serverless.md § 4.6), or that the engine closed (the
// pool's config was deleted; poolErr nil): poolErr (a runner_pool_error value) becomes the
// pool's error, and the actor sleeps at once, with no error, if it still waits on its
// placeholder; the next request or alarm places it again.
func ServerlessFailed(ctx context.Context, tx udb.Transaction, aid id.ID, generation uint32, poolErr json.RawMessage, now int64, cfg Config) (Effects, error) {
	return transition(ctx, tx, Input{ActorID: aid, NowMs: now, Config: cfg}, func(m *machine, a *actor) error {
		if poolErr != nil {
			runnerconfig.SetPoolError(tx, a.st.Namespace, a.st.Selector, poolErr)
		}
		if a.st.Generation != generation || !hostedOn(a.st, ServerlessHost(a.st.Namespace, aid, generation)) {
			return nil
		}
		return m.sleep(a, nil)
	})
}
