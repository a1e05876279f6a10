package guard

import (
	"context"
	"sync"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/rerr"
)

// untilStopped returns ctx, ended with guard.actor_stopped_while_waiting once rt's actor has
// left rt's host: it slept, crashed, was destroyed or moved while a request waited for its
// answer, which that host will now never send (runner 2.2.1 drops the answers of a stopped
// actor). The error is retried, so the request reaches the actor where it runs next, as on
// Rivet, instead of waiting for the response-start timeout (5 min). The changes watched are
// those of the whole datacenter (another node's reach this one, pegboard's Announce). A
// change between the read that found the route and the watch (a cached route gone stale)
// is caught by rt.changed; release ends the watch.
func (g *Gateway) untilStopped(ctx context.Context, rt route) (_ context.Context, release func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	var mu sync.Mutex
	var stop func() // cancels the current OnChange registration
	released := false
	var watch func()
	check := func() {
		if g.stillOn(ctx, rt) {
			watch()
			return
		}
		cancel(rerr.GuardActorStoppedWhileWaiting("waiting_for_response_start"))
	}
	watch = func() {
		s := g.o.Actors.OnChange(rt.actor, check)
		mu.Lock()
		defer mu.Unlock()
		if released {
			s()
			return
		}
		stop = s
	}
	if rt.changed != nil && closed(rt.changed) {
		check() // it changed before the watch began: read it now
	} else {
		watch()
	}
	return ctx, func() {
		mu.Lock()
		released = true
		s := stop
		mu.Unlock()
		if s != nil {
			s()
		}
		cancel(nil)
	}
}

// stillOn reports whether rt's actor is still on rt's host: starting, running, or stopping
// (told to stop, it may still answer); a failed read (the request's context ended, or the
// store) counts as yes, leaving the request to its timeouts.
func (g *Gateway) stillOn(ctx context.Context, rt route) bool {
	st, found, err := g.state(ctx, rt.actor)
	if err != nil {
		return true
	}
	switch {
	case !found:
		return false
	case st.Phase != actor.PhaseStarting && st.Phase != actor.PhaseRunning && st.Phase != actor.PhaseStopping:
		return false
	}
	return st.Placed && st.Host == rt.host
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
