package envoy

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

var ctx = context.Background()

const dc = "test-dc"

// input is a registration of envoy key in pool by a new socket at now.
func input(ns id.ID, key, pool string, now int64) RegisterInput {
	return RegisterInput{Namespace: ns, EnvoyKey: key, PoolName: pool, Version: 1, ProtocolVersion: 6, ConnID: id.New(1), NowMs: now}
}

func register(t testing.TB, db udb.Database, in RegisterInput) RegisterOutput {
	t.Helper()
	return opstest.Write(t, db, func(tx udb.Transaction) (RegisterOutput, error) { return Register(ctx, tx, in) })
}

func get(t testing.TB, db udb.Database, ns id.ID, key string) Envoy {
	t.Helper()
	return opstest.Read(t, db, func(r udb.ReadTransaction) (Envoy, error) {
		return Get(ctx, r, GetInput{Namespace: ns, EnvoyKey: key, Datacenter: dc})
	})
}

func ping(db udb.Database, ns id.ID, key string, conn id.ID, now int64) (UpdatePingOutput, error) {
	return opstest.Transact(db, func(tx udb.Transaction) (UpdatePingOutput, error) {
		return UpdatePing(ctx, tx, UpdatePingInput{Namespace: ns, EnvoyKey: key, ConnID: conn, RttMs: 4, NowMs: now})
	})
}

func expire(db udb.Database, in ExpireInput) (ExpireOutput, error) {
	return opstest.Transact(db, func(tx udb.Transaction) (ExpireOutput, error) { return Expire(ctx, tx, in) })
}

func drain(db udb.Database, in DrainInput) (DrainOutput, error) {
	return opstest.Transact(db, func(tx udb.Transaction) (DrainOutput, error) { return Drain(ctx, tx, in) })
}

func list(db udb.Database, in ListInput) (ListOutput, error) {
	in.Datacenter = dc
	return opstest.Transact(db, func(tx udb.Transaction) (ListOutput, error) { return List(ctx, tx, in) })
}

func equalEnvoy(a, b Envoy) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// lbEntries returns the load-balancer index of (ns, pool), in index order.
func lbEntries(t testing.TB, db udb.Database, ns id.ID, pool string) []keys.EnvoyLoadBalancerIdxKey {
	t.Helper()
	return opstest.Read(t, db, func(r udb.ReadTransaction) ([]keys.EnvoyLoadBalancerIdxKey, error) {
		begin, end := keys.EnvoyLoadBalancerIdxKeyRange(ns, pool)
		kvs, err := r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{}).All(ctx)
		if err != nil {
			return nil, err
		}
		var out []keys.EnvoyLoadBalancerIdxKey
		for _, kv := range kvs {
			k, err := keys.UnpackEnvoyLoadBalancerIdxKey(kv.Key)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, k)
		}
		return out, nil
	})
}

// activeKeys returns the envoy keys in the active index of ns (pool "" for
// the namespace-wide index), in index order.
func activeKeys(t testing.TB, db udb.Database, ns id.ID, pool string) []string {
	t.Helper()
	return opstest.Read(t, db, func(r udb.ReadTransaction) ([]string, error) {
		rng := keys.ActiveEnvoyKeyRange(ns)
		if pool != "" {
			rng = keys.ActiveEnvoyByNameKeyRange(ns, pool)
		}
		begin, end := rng.All()
		kvs, err := r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{}).All(ctx)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, kv := range kvs {
			if pool == "" {
				k, err := keys.UnpackActiveEnvoyKey(kv.Key)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, k.EnvoyKey)
			} else {
				k, err := keys.UnpackActiveEnvoyByNameKey(kv.Key)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, k.EnvoyKey)
			}
		}
		return out, nil
	})
}

// checkIndexes checks the load-balancer and active indexes of ns against
// the envoys named: one load-balancer entry at its current fields for each
// envoy neither expired nor draining, one active entry (by namespace and by
// pool) for each not expired, and nothing else in the given pools.
func checkIndexes(t testing.TB, db udb.Database, ns id.ID, envoyKeys []string, pools []string) {
	t.Helper()
	wantLB := map[string][]keys.EnvoyLoadBalancerIdxKey{}
	wantActive := map[string][]string{}
	for _, k := range envoyKeys {
		s := opstest.Read(t, db, func(r udb.ReadTransaction) (state, error) {
			s, _, err := readState(ctx, r, ns, k)
			return s, err
		})
		if s.key == "" {
			continue // never registered
		}
		if s.indexed() {
			wantLB[s.pool] = append(wantLB[s.pool], s.lbKey())
		}
		if !s.expired {
			wantActive[s.pool] = append(wantActive[s.pool], s.key)
			wantActive[""] = append(wantActive[""], s.key)
		}
	}
	for _, p := range pools {
		want := wantLB[p]
		slices.SortFunc(want, func(a, b keys.EnvoyLoadBalancerIdxKey) int { return slices.Compare(a.Pack(), b.Pack()) })
		if got := lbEntries(t, db, ns, p); !slices.Equal(got, want) {
			t.Fatalf("load-balancer index of %q:\n got %+v\nwant %+v", p, got, want)
		}
	}
	for _, p := range append([]string{""}, pools...) {
		want := wantActive[p]
		got := activeKeys(t, db, ns, p)
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("active index %q: got %v, want %v", p, got, want)
		}
	}
}

// countingReader counts the reads made through a read view.
type countingReader struct {
	udb.ReadTransaction
	gets, ranges int
}

func (c *countingReader) Get(ctx context.Context, key []byte) ([]byte, error) {
	c.gets++
	return c.ReadTransaction.Get(ctx, key)
}

func (c *countingReader) GetRange(begin, end udb.KeySelector, opt udb.RangeOptions) udb.RangeIterator {
	c.ranges++
	return c.ReadTransaction.GetRange(begin, end, opt)
}

func (c *countingReader) Snapshot() udb.ReadTransaction { return c }
