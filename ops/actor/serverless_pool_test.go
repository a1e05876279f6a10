package actor

import (
	"encoding/json"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// serverlessRunnerPool makes the world's pool a serverless runner pool (no protocol version).
func (w *world) serverlessRunnerPool() {
	w.t.Helper()
	opstest.Write(w.t, w.db, func(tx udb.Transaction) (struct{}, error) {
		keys.Set(tx, keys.RunnerConfigDataKey{Namespace: w.ns, Name: "pool"}, keys.RunnerConfig{Serverless: &keys.ServerlessRunnerConfig{
			URL: "http://127.0.0.1:1/api/rivet", RequestLifespan: 60, SlotsPerRunner: 1, MaxRunners: 10}})
		return struct{}{}, nil
	})
}

func (w *world) demand() int64 {
	w.t.Helper()
	return opstest.Read(w.t, w.db, func(r udb.ReadTransaction) (int64, error) {
		v, _, err := keys.Get(ctx, r, keys.ServerlessDemandKey{Namespace: w.ns, Name: "pool"})
		return v, err
	})
}

// A sleep-policy actor of a serverless runner pool with no runner waits in the queue (a
// runner is started for it) rather than sleeping with no_capacity; its pending, its slot
// and its release each bump the pool's demand counter; while the pool has an error, the
// actor shows it instead of no_capacity.
func TestServerlessRunnerPoolQueuesAndCountsDemand(t *testing.T) {
	w := newWorld(t)
	w.serverlessRunnerPool()
	aid, _ := w.create(CrashSleep, nil)
	st := w.state(aid)
	if st.Phase != keys.PhasePending || st.PendingTs == nil {
		t.Fatalf("phase %v pending %v, want pending", st.Phase, st.PendingTs)
	}
	if d := w.demand(); d != 1 {
		t.Fatalf("demand counter %d after the pending, want 1", d)
	}
	get := func() Actor {
		as := opstest.Read(t, w.db, func(r udb.ReadTransaction) ([]Actor, error) {
			return Get(ctx, r, GetInput{ActorIDs: []id.ID{aid}, Datacenter: "dc"})
		})
		return as[0]
	}
	if e := string(get().Error); e != `"no_capacity"` {
		t.Fatalf("error %s, want no_capacity", e)
	}
	opstest.Write(t, w.db, func(tx udb.Transaction) (struct{}, error) {
		runnerconfig.SetPoolError(tx, w.ns, "pool", json.RawMessage(`"serverless_stream_ended_early"`))
		return struct{}{}, nil
	})
	if e := string(get().Error); e != `{"runner_pool_error":"serverless_stream_ended_early"}` {
		t.Fatalf("error %s with a pool error", e)
	}

	rid := w.runner("r1", 1)
	out := opstest.Write(t, w.db, func(tx udb.Transaction) (PlacePendingOutput, error) {
		return PlacePending(ctx, tx, PlacePendingInput{Pool: Pool{Namespace: w.ns, Selector: "pool"}, Limit: 8, NowMs: w.now, Config: w.cfg})
	})
	if st := w.state(aid); st.RunnerID == nil || *st.RunnerID != rid || len(out.Effects.Commands) != 1 {
		t.Fatalf("not placed on the runner: %+v", st)
	}
	if d := w.demand(); d != 3 { // left the queue, took a slot
		t.Fatalf("demand counter %d after the placement, want 3", d)
	}
	w.events(rid, ev(aid, 0, 0, running))
	w.events(rid, ev(aid, 0, 1, stoppedErr)) // crashed: the slot is freed, the actor sleeps
	if st := w.state(aid); st.RunnerID != nil {
		t.Fatalf("still on the runner: %+v", st)
	}
	if d := w.demand(); d != 4 {
		t.Fatalf("demand counter %d after the slot was freed, want 4", d)
	}
}

// A normal pool is untouched: a sleep-policy actor with no runner sleeps with
// no_capacity and no demand counter is written.
func TestNormalPoolHasNoDemandCounter(t *testing.T) {
	w := newWorld(t)
	aid, _ := w.create(CrashSleep, nil)
	if st := w.state(aid); st.Phase != keys.PhaseSleeping || string(st.Error) != `"no_capacity"` {
		t.Fatalf("phase %v error %s, want sleeping with no_capacity", st.Phase, st.Error)
	}
	if d := w.demand(); d != 0 {
		t.Fatalf("demand counter %d for a normal pool", d)
	}
}
