package envoy

import (
	"bytes"
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// Placement strategies: how an actor's envoy is chosen in its pool.
const (
	// PlaceHashRing draws points on the pool's hash ring (VirtualNodes per envoy, newest
	// version only), takes the first fresh envoy after each, and keeps the one with fewer
	// actors (the default, as Rivet's).
	PlaceHashRing = "hash_ring"
	// PlaceLoadBalancer walks the load-balancer index (newest version first, then oldest
	// ping) and keeps the envoy with the fewest actors among the first fresh ones.
	PlaceLoadBalancer = "load_balancer"
)

// Strategies lists the valid strategies.
var Strategies = []string{PlaceHashRing, PlaceLoadBalancer}

// Placement tuning, Rivet's numbers: two samples on the ring, up to 16 entries walked per
// sample (stale ones skipped), slot counts compared with a jitter below 4.
const (
	ringSamples = 2
	maxScan     = 16
	slotJitter  = 4
)

// PickInput asks for an envoy of pool (Namespace, PoolName) to place an actor on.
type PickInput struct {
	Namespace id.ID
	PoolName  string
	Strategy  string // PlaceHashRing when empty
	// PingedSinceMs is the eligibility threshold: an envoy pinged before it is skipped.
	PingedSinceMs int64
	// Random returns a random number in [0, n); it draws the ring pivots and the jitter.
	Random func(n int64) int64
}

// Pick chooses an envoy for a new actor; found is false when the pool has no fresh envoy
// in its indexes. The indexes and the candidates' pings and slot counts are read at
// snapshot isolation (many placements run at once; staleness only skews the balance), and
// a read conflict on the chosen entry makes the placement conflict with the envoy leaving
// the indexes (drain, expiry) at the same time.
func Pick(ctx context.Context, tx udb.Transaction, in PickInput) (key string, found bool, err error) {
	snap := tx.Snapshot()
	top, found, err := newest(ctx, snap, in.Namespace, in.PoolName)
	if err != nil || !found {
		return "", false, err
	}
	var cands []candidate
	if in.Strategy == PlaceLoadBalancer {
		cands, err = lbCandidates(ctx, snap, in, top)
	} else {
		cands, err = ringCandidates(ctx, snap, in, top)
	}
	if err != nil || len(cands) == 0 {
		return "", false, err
	}
	best, bestLoad := -1, int64(0)
	for i, c := range cands {
		slots, _, err := keys.Get(ctx, snap, keys.EnvoySlotsKey{Namespace: in.Namespace, EnvoyKey: c.key})
		if err != nil {
			return "", false, corrupt.Mark("envoy", err)
		}
		load := slots + in.Random(slotJitter)
		if best < 0 || load < bestLoad {
			best, bestLoad = i, load
		}
	}
	if err := udb.AddReadConflictKey(tx, cands[best].entry); err != nil {
		return "", false, err
	}
	return cands[best].key, true, nil
}

// candidate is an envoy a placement may choose, and the index entry it was found by.
type candidate struct {
	key   string
	entry []byte
}

// newest returns the highest version among the pool's indexed envoys.
func newest(ctx context.Context, r udb.ReadTransaction, ns id.ID, pool string) (uint32, bool, error) {
	begin, end := keys.EnvoyLoadBalancerIdxKeyRange(ns, pool)
	kvs, err := r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Limit: 1}).All(ctx)
	if err != nil || len(kvs) == 0 {
		return 0, false, err
	}
	k, err := keys.UnpackEnvoyLoadBalancerIdxKey(kvs[0].Key)
	if err != nil {
		return 0, false, corrupt.Mark("envoy", err)
	}
	return k.Version, true, nil
}

// fresh reports whether envoy key pinged at or after the eligibility threshold.
func fresh(ctx context.Context, r udb.ReadTransaction, in PickInput, key string) (bool, error) {
	ping, found, err := keys.Get(ctx, r, keys.EnvoyLastPingTsKey{Namespace: in.Namespace, EnvoyKey: key})
	return found && ping >= in.PingedSinceMs, corrupt.Mark("envoy", err)
}

// ringCandidates walks the ring of version top from ringSamples random pivots (wrapping
// at its end) and returns the first fresh envoy after each, without duplicates.
func ringCandidates(ctx context.Context, r udb.ReadTransaction, in PickInput, top uint32) ([]candidate, error) {
	ring := keys.EnvoyHashRingOf(in.Namespace, in.PoolName, top)
	var out []candidate
	budget := maxScan
	for range ringSamples {
		c, err := firstFresh(ctx, r, in, ring, ringPivot(in.Random), &budget)
		if err != nil {
			return nil, err
		}
		if c != nil && !containsKey(out, c.key) {
			out = append(out, *c)
		}
	}
	return out, nil
}

// firstFresh returns the first fresh envoy on the ring at or after pivot, wrapping once,
// walking at most *budget entries; nil when none.
func firstFresh(ctx context.Context, r udb.ReadTransaction, in PickInput, ring keys.EnvoyHashRing, pivot []byte, budget *int) (*candidate, error) {
	from, end := ring.From(pivot)
	begin, _ := ring.All()
	for _, span := range [][2][]byte{{from, end}, {begin, from}} {
		it := r.GetRange(udb.FirstGreaterOrEqual(span[0]), udb.FirstGreaterOrEqual(span[1]), udb.RangeOptions{Limit: *budget, Mode: udb.StreamingModeIterator})
		for it.Next(ctx) {
			*budget--
			kv := it.KeyValue()
			k, err := keys.UnpackEnvoyHashIdxKey(kv.Key)
			if err != nil {
				return nil, corrupt.Mark("envoy", err)
			}
			ok, err := fresh(ctx, r, in, k.EnvoyKey)
			if err != nil {
				return nil, err
			}
			if ok {
				return &candidate{key: k.EnvoyKey, entry: bytes.Clone(kv.Key)}, nil
			}
			if *budget <= 0 {
				return nil, nil
			}
		}
		if err := it.Err(); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// lbCandidates returns the fresh envoys among the first maxScan entries of version top in
// the load-balancer index.
func lbCandidates(ctx context.Context, r udb.ReadTransaction, in PickInput, top uint32) ([]candidate, error) {
	begin, end := keys.EnvoyLoadBalancerIdxKeyRange(in.Namespace, in.PoolName)
	kvs, err := r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Limit: maxScan}).All(ctx)
	if err != nil {
		return nil, err
	}
	var out []candidate
	for _, kv := range kvs {
		k, err := keys.UnpackEnvoyLoadBalancerIdxKey(kv.Key)
		if err != nil {
			return nil, corrupt.Mark("envoy", err)
		}
		if k.Version != top {
			break
		}
		if k.LastPingTs >= in.PingedSinceMs && !containsKey(out, k.EnvoyKey) {
			out = append(out, candidate{key: k.EnvoyKey, entry: kv.Key})
		}
	}
	return out, nil
}

func containsKey(cs []candidate, key string) bool {
	for _, c := range cs {
		if c.key == key {
			return true
		}
	}
	return false
}

// PlaceActorInput records an actor's placement on an envoy.
type PlaceActorInput struct {
	Namespace  id.ID
	EnvoyKey   string
	ActorID    id.ID
	Generation uint32
}

// PlaceActor records the actor on the envoy (EnvoyActorKey) and counts it in the envoy's
// slots (an atomic add: placements on one envoy do not conflict).
func PlaceActor(tx udb.Transaction, in PlaceActorInput) {
	keys.Set(tx, keys.EnvoyActorKey{Namespace: in.Namespace, EnvoyKey: in.EnvoyKey, ActorID: in.ActorID}, in.Generation)
	keys.Add(tx, keys.EnvoySlotsKey{Namespace: in.Namespace, EnvoyKey: in.EnvoyKey}, 1)
}

// ReleaseActorOutput reports what taking an actor off its envoy left.
type ReleaseActorOutput struct {
	// Stopped is true when the envoy is stopping (stop_ts set) and this was its last
	// actor: its socket may close.
	Stopped bool
}

// ReleaseActor takes the actor off the envoy: its entry and stored commands are cleared
// and, if it was placed there, the slot count goes down. A serializable read of the
// envoy's stop time and a range read of its remaining actors decide Stopped.
func ReleaseActor(ctx context.Context, tx udb.Transaction, ns id.ID, envoyKey string, aid id.ID) (ReleaseActorOutput, error) {
	tx.ClearRange(keys.EnvoyActorCommandRange(ns, envoyKey, aid))
	k := keys.EnvoyActorKey{Namespace: ns, EnvoyKey: envoyKey, ActorID: aid}
	_, held, err := keys.Get(ctx, tx, k)
	if err != nil || !held {
		return ReleaseActorOutput{}, corrupt.Mark("envoy", err)
	}
	keys.Clear(tx, k)
	keys.Add(tx, keys.EnvoySlotsKey{Namespace: ns, EnvoyKey: envoyKey}, -1)
	_, stopping, err := keys.Get(ctx, tx, keys.EnvoyStopTsKey{Namespace: ns, EnvoyKey: envoyKey})
	if err != nil || !stopping {
		return ReleaseActorOutput{}, corrupt.Mark("envoy", err)
	}
	left, err := Actors(ctx, tx, ns, envoyKey, 1)
	return ReleaseActorOutput{Stopped: err == nil && len(left) == 0}, err
}

// Actors returns up to limit (0: all) actors placed on the envoy, serializably.
func Actors(ctx context.Context, r udb.ReadTransaction, ns id.ID, envoyKey string, limit int) ([]id.ID, error) {
	begin, end := keys.EnvoyActorKeyRange(ns, envoyKey)
	kvs, err := r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Limit: limit, Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]id.ID, 0, len(kvs))
	for _, kv := range kvs {
		k, err := keys.UnpackEnvoyActorKey(kv.Key)
		if err != nil {
			return nil, corrupt.Mark("envoy", err)
		}
		out = append(out, k.ActorID)
	}
	return out, nil
}
