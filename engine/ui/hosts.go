package ui

import (
	"net/http"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// maxHostActors bounds the actors /ui/host-actors lists.
const maxHostActors = 200

// hostActor is one actor placed on a host.
type hostActor struct {
	ActorID    string `json:"actor_id"`
	Name       string `json:"name"`
	Key        string `json:"key,omitempty"`
	State      string `json:"state"`
	Generation uint32 `json:"generation"`
}

// hostActors is the body of /ui/host-actors; more says the host has actors past the bound.
type hostActors struct {
	Actors []hostActor `json:"actors"`
	More   bool        `json:"more"`
}

// serveHostActors answers GET /ui/host-actors?runner_id= or ?namespace=&envoy_key=: the
// actors placed on a runner or envoy of this datacenter and not yet stopped (the first
// maxHostActors), with name, key, state and generation. A host the grant may not see, or
// none, lists no actors.
func serveHostActors(w http.ResponseWriter, r *http.Request, o Options) {
	q := r.URL.Query()
	sc, err := scope(r, o)
	if err != nil {
		fail(w, r, "resolving the namespace", err)
		return
	}
	var begin, end []byte
	var owner id.ID // the host's namespace, checked against the grant; zero for a runner until read
	var rid id.ID
	switch {
	case q.Get("runner_id") != "":
		if rid, err = id.Parse(q.Get("runner_id")); err != nil {
			writeError(w, r, rerr.BadRequest("runner_id", err.Error()))
			return
		}
		begin, end = keys.RunnerActorKeyRange(rid)
	case q.Get("envoy_key") != "" && q.Get("namespace") != "":
		ns, err := o.ResolveNamespace(r.Context(), q.Get("namespace"))
		if err != nil {
			fail(w, r, "resolving the namespace", err)
			return
		}
		owner = ns.NamespaceID
		begin, end = keys.EnvoyActorKeyRange(owner, q.Get("envoy_key"))
	default:
		writeError(w, r, rerr.BadRequest("runner_id", "give runner_id, or namespace and envoy_key"))
		return
	}
	out, err := udb.ReadTransact(r.Context(), o.DB, func(rt udb.ReadTransaction) (hostActors, error) {
		out := hostActors{Actors: []hostActor{}}
		snap := rt.Snapshot()
		if rid != (id.ID{}) {
			ns, found, err := keys.Get(r.Context(), snap, keys.RunnerNamespaceIDKey{RunnerID: rid})
			if err != nil || !found {
				return out, err
			}
			owner = ns
		}
		if sc != (id.ID{}) && sc != owner {
			return out, nil
		}
		kvs, err := snap.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Limit: maxHostActors + 1}).All(r.Context())
		if err != nil {
			return out, err
		}
		out.More = len(kvs) > maxHostActors
		for _, kv := range kvs[:min(len(kvs), maxHostActors)] {
			aid, err := hostActorID(kv.Key, rid != (id.ID{}))
			if err != nil {
				return out, err
			}
			st, _, err := actor.Lookup(r.Context(), snap, aid)
			if err != nil {
				return out, err
			}
			name, _, err := keys.Get(r.Context(), snap, keys.ActorDataNameKey{ActorID: aid})
			if err != nil {
				return out, err
			}
			key, _, err := keys.Get(r.Context(), snap, keys.ActorKeyKey{ActorID: aid})
			if err != nil {
				return out, err
			}
			out.Actors = append(out.Actors, hostActor{ActorID: aid.String(), Name: name, Key: key, State: string(st.Phase), Generation: st.Generation})
		}
		return out, nil
	})
	if err != nil {
		fail(w, r, "reading a host's actors", err)
		return
	}
	writeJSON(w, out)
}

// hostActorID is the actor of a RunnerActorKey (runner) or EnvoyActorKey.
func hostActorID(k []byte, runner bool) (id.ID, error) {
	if runner {
		rk, err := keys.UnpackRunnerActorKey(k)
		return rk.ActorID, err
	}
	ek, err := keys.UnpackEnvoyActorKey(k)
	return ek.ActorID, err
}
