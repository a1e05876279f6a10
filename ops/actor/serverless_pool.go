package actor

import (
	"context"
	"encoding/json"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// Serverless runner pools (docs/serverless.md § 5): the pool's endpoint starts runners when
// actors need slots, so an actor that finds no free slot waits in the queue whatever its
// crash policy (as on Rivet), and each change to the pool's demand bumps
// keys.ServerlessDemandKey, which the node scaling the pool watches.

// poolRef names a pool in a machine's cache.
type poolRef struct {
	ns   id.ID
	name string
}

// serverlessRunnerPool reports whether pool (ns, name) is a serverless pool without a
// protocol version (a runner pool). Snapshot reads, once per machine and pool.
func (m *machine) serverlessRunnerPool(ns id.ID, name string) (bool, error) {
	ref := poolRef{ns, name}
	if v, ok := m.slPools[ref]; ok {
		return v, nil
	}
	snap := m.tx.Snapshot()
	cfg, found, err := keys.Get(m.ctx, snap, keys.RunnerConfigDataKey{Namespace: ns, Name: name})
	if err != nil {
		return false, corrupt.Mark("runner_config", err)
	}
	is := found && cfg.Serverless != nil
	if is {
		_, envoys, err := keys.Get(m.ctx, snap, keys.RunnerConfigProtocolVersionKey{Namespace: ns, Name: name})
		if err != nil {
			return false, corrupt.Mark("runner_config", err)
		}
		is = !envoys
	}
	if m.slPools == nil {
		m.slPools = map[poolRef]bool{}
	}
	m.slPools[ref] = is
	return is, nil
}

// demandChanged bumps the demand counter of st's pool when it is a serverless runner pool.
func (m *machine) demandChanged(st *keys.ActorState) error {
	is, err := m.serverlessRunnerPool(st.Namespace, st.Selector)
	if is {
		keys.Add(m.tx, keys.ServerlessDemandKey{Namespace: st.Namespace, Name: st.Selector}, 1)
	}
	return err
}

// withPoolErrors shows, as on Rivet, the pool's error instead of no_capacity or
// no_envoys on the actors that have one of those while their pool has an error:
// {"runner_pool_error": …}. Snapshot reads, one per pool.
func withPoolErrors(ctx context.Context, r udb.ReadTransaction, as []Actor) error {
	var errs map[poolRef]json.RawMessage
	for i := range as {
		a := &as[i]
		if e := string(a.Error); e != `"no_capacity"` && e != `"no_envoys"` {
			continue
		}
		ref := poolRef{a.NamespaceID, a.RunnerNameSelector}
		pe, ok := errs[ref]
		if !ok {
			v, found, err := keys.Get(ctx, r.Snapshot(), keys.RunnerPoolErrorKey{Namespace: ref.ns, Name: ref.name})
			if err != nil {
				return corrupt.Mark("runner pool", err)
			}
			if found {
				pe, _ = json.Marshal(map[string]json.RawMessage{"runner_pool_error": v.Error})
			}
			if errs == nil {
				errs = map[poolRef]json.RawMessage{}
			}
			errs[ref] = pe
		}
		if pe != nil {
			a.Error = pe
		}
	}
	return nil
}

// PoolFailing reports whether actor aid waits in the queue of a pool that has an error
// (a serverless runner pool whose endpoint fails): the gateway then gives up on it
// (guard.actor_runner_failed). Snapshot reads.
func PoolFailing(ctx context.Context, r udb.ReadTransaction, aid id.ID) (bool, error) {
	snap := r.Snapshot()
	st, found, err := keys.Get(ctx, snap, keys.ActorStateKey{ActorID: aid})
	if err != nil || !found || st.Phase != keys.PhasePending {
		return false, corrupt.Mark("actor", err)
	}
	_, failing, err := keys.Get(ctx, snap, keys.RunnerPoolErrorKey{Namespace: st.Namespace, Name: st.Selector})
	return failing, corrupt.Mark("runner pool", err)
}
