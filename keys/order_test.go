package keys

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/berthhq/berth/pkg/id"
)

// checkOrder shuffles want, sorts it by packed bytes and requires the
// documented order back.
func checkOrder[K packer](t *testing.T, want []K) {
	t.Helper()
	got := slices.Clone(want)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		rng.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
		slices.SortFunc(got, func(a, b K) int { return bytes.Compare(a.Pack(), b.Pack()) })
		for i := range want {
			if !bytesEqualKey(got[i], want[i]) {
				t.Fatalf("position %d: got %+v, want %+v", i, got[i], want[i])
			}
		}
	}
}

func bytesEqualKey[K packer](a, b K) bool { return bytes.Equal(a.Pack(), b.Pack()) }

// TestRunnerAllocIdxOrder: newest version first; within a version most free
// millislots first; then oldest ping first; then runner id.
func TestRunnerAllocIdxOrder(t *testing.T) {
	k := func(version, millis uint32, ping int64, rid id.ID) RunnerAllocIdxKey {
		return RunnerAllocIdxKey{Namespace: ns1, Name: "pool", Version: version, RemainingMillislots: millis, LastPingTs: ping, RunnerID: rid}
	}
	a, b := testID(1), testID(2)
	checkOrder(t, []RunnerAllocIdxKey{
		k(math.MaxUint32, 0, 0, a), // above 2^31: still newest (Rivet's i32 negation would wrap)
		k(1<<31, 0, 0, a),
		k(3, 1000, 50, a),
		k(3, 1000, 50, b),
		k(3, 1000, 60, a),
		k(3, 999, -5, a),
		k(3, 999, 10, a),
		k(3, 1, 0, a),
		k(3, 0, 0, a),
		k(2, 1000, 0, a),
		k(1, 0, 0, a),
		k(0, 1000, 0, a),
		k(0, 0, 0, a),
	})
}

// TestEnvoyLoadBalancerIdxOrder: newest version first, then oldest ping
// first, then envoy key.
func TestEnvoyLoadBalancerIdxOrder(t *testing.T) {
	k := func(version uint32, ping int64, ek string) EnvoyLoadBalancerIdxKey {
		return EnvoyLoadBalancerIdxKey{Namespace: ns1, PoolName: "pool", Version: version, LastPingTs: ping, EnvoyKey: ek}
	}
	checkOrder(t, []EnvoyLoadBalancerIdxKey{
		k(math.MaxUint32, 0, "a"),
		k(5, -1, "z"),
		k(5, 100, "a"),
		k(5, 100, "b"),
		k(5, 100, "ba"),
		k(5, 101, ""),
		k(4, 0, "a"),
		k(0, 0, "a"),
	})
}

// TestCreateTsIndexOrder: the create_ts indexes sort by create_ts, then by
// the id (byte order, as id.ID.Compare) or envoy key.
func TestCreateTsIndexOrder(t *testing.T) {
	ids := []id.ID{testID(1), testID(2), testID(3)}
	slices.SortFunc(ids, id.ID.Compare)
	ts := []int64{math.MinInt64, -1, 0, 1, 1700000000000, 1700000000001, math.MaxInt64}
	var active []ActiveRunnerKey
	var all []AllRunnerKey
	var byName []ActiveRunnerByNameKey
	var allByName []AllRunnerByNameKey
	var actors []ActiveActorKey
	var allActors []AllActorKey
	var byKey []ActorByKeyKey
	var envoys []ActiveEnvoyKey
	var envoysByName []ActiveEnvoyByNameKey
	for _, c := range ts {
		for _, i := range ids {
			active = append(active, ActiveRunnerKey{Namespace: ns1, CreateTs: c, RunnerID: i})
			all = append(all, AllRunnerKey{Namespace: ns1, CreateTs: c, RunnerID: i})
			byName = append(byName, ActiveRunnerByNameKey{Namespace: ns1, Name: "p", CreateTs: c, RunnerID: i})
			allByName = append(allByName, AllRunnerByNameKey{Namespace: ns1, Name: "p", CreateTs: c, RunnerID: i})
			actors = append(actors, ActiveActorKey{Namespace: ns1, Name: "a", CreateTs: c, ActorID: i})
			allActors = append(allActors, AllActorKey{Namespace: ns1, Name: "a", CreateTs: c, ActorID: i})
			byKey = append(byKey, ActorByKeyKey{Namespace: ns1, Name: "a", Key: "k", CreateTs: c, ActorID: i})
		}
		for _, ek := range []string{"", "a", "a\x00", "ab", "b"} {
			envoys = append(envoys, ActiveEnvoyKey{Namespace: ns1, CreateTs: c, EnvoyKey: ek})
			envoysByName = append(envoysByName, ActiveEnvoyByNameKey{Namespace: ns1, PoolName: "p", CreateTs: c, EnvoyKey: ek})
		}
	}
	t.Run("ActiveRunnerKey", func(t *testing.T) { checkOrder(t, active) })
	t.Run("AllRunnerKey", func(t *testing.T) { checkOrder(t, all) })
	t.Run("ActiveRunnerByNameKey", func(t *testing.T) { checkOrder(t, byName) })
	t.Run("AllRunnerByNameKey", func(t *testing.T) { checkOrder(t, allByName) })
	t.Run("ActiveActorKey", func(t *testing.T) { checkOrder(t, actors) })
	t.Run("AllActorKey", func(t *testing.T) { checkOrder(t, allActors) })
	t.Run("ActorByKeyKey", func(t *testing.T) { checkOrder(t, byKey) })
	t.Run("ActiveEnvoyKey", func(t *testing.T) { checkOrder(t, envoys) })
	t.Run("ActiveEnvoyByNameKey", func(t *testing.T) { checkOrder(t, envoysByName) })
}

// TestNameIndexOrder: name indexes sort by name bytes.
func TestNameIndexOrder(t *testing.T) {
	var runners []RunnerNameKey
	var actors []ActorNameKey
	var nss []NamespaceByNameKey
	for _, n := range []string{"", "a", "a\x00b", "a-b", "ab", "b", "é"} {
		runners = append(runners, RunnerNameKey{Namespace: ns1, Name: n})
		actors = append(actors, ActorNameKey{Namespace: ns1, Name: n})
		nss = append(nss, NamespaceByNameKey{Name: n})
	}
	checkOrder(t, runners)
	checkOrder(t, actors)
	checkOrder(t, nss)
}

func inRange(k, begin, end []byte) bool {
	return bytes.Compare(k, begin) >= 0 && bytes.Compare(k, end) < 0
}

// TestRanges checks which keys each range helper holds, byte-wise.
func TestRanges(t *testing.T) {
	r1, r2 := testID(1), testID(2)
	cursor := ActiveRunnerKey{Namespace: ns1, CreateTs: 100, RunnerID: r2}
	tests := []struct {
		name       string
		begin, end []byte
		in, out    []packer
	}{
		{
			name: "ActiveRunnerKeyRange.All", begin: first(ActiveRunnerKeyRange(ns1).All()), end: second(ActiveRunnerKeyRange(ns1).All()),
			in:  []packer{ActiveRunnerKey{Namespace: ns1, CreateTs: math.MinInt64, RunnerID: r1}, ActiveRunnerKey{Namespace: ns1, CreateTs: math.MaxInt64, RunnerID: r2}},
			out: []packer{ActiveRunnerKey{Namespace: ns2, CreateTs: 1, RunnerID: r1}, AllRunnerKey{Namespace: ns1, CreateTs: 1, RunnerID: r1}, RunnerNameKey{Namespace: ns1, Name: "x"}},
		},
		{
			name: "ActiveRunnerKeyRange.Before", begin: first(ActiveRunnerKeyRange(ns1).Before(100, r2)), end: second(ActiveRunnerKeyRange(ns1).Before(100, r2)),
			in:  []packer{ActiveRunnerKey{Namespace: ns1, CreateTs: 100, RunnerID: r1}, ActiveRunnerKey{Namespace: ns1, CreateTs: 99, RunnerID: r2}},
			out: []packer{cursor, ActiveRunnerKey{Namespace: ns1, CreateTs: 100, RunnerID: testID(3)}, ActiveRunnerKey{Namespace: ns1, CreateTs: 101, RunnerID: r1}, ActiveRunnerKey{Namespace: ns2, CreateTs: 1, RunnerID: r1}},
		},
		{
			name: "ActiveRunnerKeyRange.BeforeTs", begin: first(ActiveRunnerKeyRange(ns1).BeforeTs(100)), end: second(ActiveRunnerKeyRange(ns1).BeforeTs(100)),
			in:  []packer{ActiveRunnerKey{Namespace: ns1, CreateTs: 99, RunnerID: r2}},
			out: []packer{ActiveRunnerKey{Namespace: ns1, CreateTs: 100, RunnerID: r1}, cursor},
		},
		{
			name: "ActiveRunnerByNameKeyRange", begin: first(ActiveRunnerByNameKeyRange(ns1, "p").All()), end: second(ActiveRunnerByNameKeyRange(ns1, "p").All()),
			in:  []packer{ActiveRunnerByNameKey{Namespace: ns1, Name: "p", CreateTs: 1, RunnerID: r1}},
			out: []packer{ActiveRunnerByNameKey{Namespace: ns1, Name: "p2", CreateTs: 1, RunnerID: r1}, ActiveRunnerByNameKey{Namespace: ns1, Name: "", CreateTs: 1, RunnerID: r1}, AllRunnerByNameKey{Namespace: ns1, Name: "p", CreateTs: 1, RunnerID: r1}},
		},
		{
			name: "AllRunnerByNameKeyRange", begin: first(AllRunnerByNameKeyRange(ns1, "p").All()), end: second(AllRunnerByNameKeyRange(ns1, "p").All()),
			in:  []packer{AllRunnerByNameKey{Namespace: ns1, Name: "p", CreateTs: 1, RunnerID: r1}},
			out: []packer{ActiveRunnerByNameKey{Namespace: ns1, Name: "p", CreateTs: 1, RunnerID: r1}},
		},
		{
			name: "AllRunnerKeyRange", begin: first(AllRunnerKeyRange(ns1).All()), end: second(AllRunnerKeyRange(ns1).All()),
			in:  []packer{AllRunnerKey{Namespace: ns1, CreateTs: 1, RunnerID: r1}},
			out: []packer{ActiveRunnerKey{Namespace: ns1, CreateTs: 1, RunnerID: r1}},
		},
		{
			name: "RunnerAllocIdxOlderRange", begin: first(RunnerAllocIdxOlderRange(ns1, "p", 5)), end: second(RunnerAllocIdxOlderRange(ns1, "p", 5)),
			in: []packer{RunnerAllocIdxKey{Namespace: ns1, Name: "p", Version: 4, RemainingMillislots: 1000, LastPingTs: math.MaxInt64, RunnerID: r2},
				RunnerAllocIdxKey{Namespace: ns1, Name: "p", Version: 0, RunnerID: r1}},
			out: []packer{RunnerAllocIdxKey{Namespace: ns1, Name: "p", Version: 5, RunnerID: r1}, RunnerAllocIdxKey{Namespace: ns1, Name: "p", Version: 6, RunnerID: r1},
				RunnerAllocIdxKey{Namespace: ns1, Name: "p2", Version: 1, RunnerID: r1}, RunnerAllocIdxKey{Namespace: ns2, Name: "p", Version: 1, RunnerID: r1}},
		},
		{
			name: "RunnerCommandsUpTo", begin: first(RunnerCommandsUpTo(r1, r2, 3, 5)), end: second(RunnerCommandsUpTo(r1, r2, 3, 5)),
			in: []packer{RunnerCommandKey{RunnerID: r1, ActorID: r2, Generation: 3, Index: 0}, RunnerCommandKey{RunnerID: r1, ActorID: r2, Generation: 3, Index: 5},
				RunnerCommandKey{RunnerID: r1, ActorID: r2, Generation: 3, Index: -1}},
			out: []packer{RunnerCommandKey{RunnerID: r1, ActorID: r2, Generation: 3, Index: 6}, RunnerCommandKey{RunnerID: r1, ActorID: r2, Generation: 4, Index: 0},
				RunnerCommandKey{RunnerID: r1, ActorID: r2, Generation: 2, Index: 9}, RunnerCommandKey{RunnerID: r1, ActorID: r1, Generation: 3, Index: 1}},
		},
		{
			name: "RunnerActorCommandRange", begin: first(RunnerActorCommandRange(r1, r2)), end: second(RunnerActorCommandRange(r1, r2)),
			in:  []packer{RunnerCommandKey{RunnerID: r1, ActorID: r2, Generation: 0, Index: 0}, RunnerCommandKey{RunnerID: r1, ActorID: r2, Generation: 9, Index: 9}},
			out: []packer{RunnerCommandKey{RunnerID: r1, ActorID: r1, Generation: 0, Index: 0}, RunnerCommandKey{RunnerID: r2, ActorID: r2, Generation: 0, Index: 0}, RunnerCreateTsKey{RunnerID: r1}},
		},
		{
			name: "PendingActorKeyRange", begin: first(PendingActorKeyRange(ns1, "p")), end: second(PendingActorKeyRange(ns1, "p")),
			in:  []packer{PendingActorKey{Namespace: ns1, Selector: "p", Ts: math.MinInt64, ActorID: r1}, PendingActorKey{Namespace: ns1, Selector: "p", Ts: math.MaxInt64, ActorID: r2}},
			out: []packer{PendingActorKey{Namespace: ns1, Selector: "p2", Ts: 1, ActorID: r1}, PendingActorKey{Namespace: ns2, Selector: "p", Ts: 1, ActorID: r1}},
		},
		{
			name: "ActorTimerRange.BeforeTs", begin: first(ActorTimerRange().BeforeTs(100)), end: second(ActorTimerRange().BeforeTs(100)),
			in:  []packer{ActorTimerKey{DueTs: 99, ActorID: r1}, ActorTimerKey{DueTs: math.MinInt64, ActorID: r2}},
			out: []packer{ActorTimerKey{DueTs: 100, ActorID: r1}, ActorStateKey{ActorID: r1}},
		},
		{
			name: "RunnerActorKeyRange", begin: first(RunnerActorKeyRange(r1)), end: second(RunnerActorKeyRange(r1)),
			in:  []packer{RunnerActorKey{RunnerID: r1, ActorID: r1}, RunnerActorKey{RunnerID: r1, ActorID: r2}},
			out: []packer{RunnerActorKey{RunnerID: r2, ActorID: r1}, RunnerCreateTsKey{RunnerID: r1}, RunnerPingIdxKey{LastPingTs: 1, RunnerID: r1}},
		},
		{
			name: "RunnerPingIdxRange.BeforeTs", begin: first(RunnerPingIdxRange().BeforeTs(100)), end: second(RunnerPingIdxRange().BeforeTs(100)),
			in:  []packer{RunnerPingIdxKey{LastPingTs: math.MinInt64, RunnerID: r1}, RunnerPingIdxKey{LastPingTs: 99, RunnerID: r2}},
			out: []packer{RunnerPingIdxKey{LastPingTs: 100, RunnerID: r1}, RunnerDrainIdxKey{DrainTs: 1, RunnerID: r1}, RunnerAllocIdxKey{Namespace: ns1, Name: "p", Version: 1, RunnerID: r1}},
		},
		{
			name: "RunnerDrainIdxRange.BeforeTs", begin: first(RunnerDrainIdxRange().BeforeTs(100)), end: second(RunnerDrainIdxRange().BeforeTs(100)),
			in:  []packer{RunnerDrainIdxKey{DrainTs: 99, RunnerID: r2}},
			out: []packer{RunnerDrainIdxKey{DrainTs: 100, RunnerID: r1}, RunnerPingIdxKey{LastPingTs: 1, RunnerID: r1}},
		},
		{
			name: "RunnerAllocIdxKeyRange", begin: first(RunnerAllocIdxKeyRange(ns1, "p")), end: second(RunnerAllocIdxKeyRange(ns1, "p")),
			in:  []packer{RunnerAllocIdxKey{Namespace: ns1, Name: "p", Version: 1, RunnerID: r1}, RunnerAllocIdxKey{Namespace: ns1, Name: "p", Version: math.MaxUint32, RemainingMillislots: 1000, RunnerID: r1}},
			out: []packer{RunnerAllocIdxKey{Namespace: ns1, Name: "q", Version: 1, RunnerID: r1}, RunnerAllocIdxKey{Namespace: ns2, Name: "p", Version: 1, RunnerID: r1}},
		},
		{
			name: "EnvoyLoadBalancerIdxKeyRange", begin: first(EnvoyLoadBalancerIdxKeyRange(ns1, "p")), end: second(EnvoyLoadBalancerIdxKeyRange(ns1, "p")),
			in:  []packer{EnvoyLoadBalancerIdxKey{Namespace: ns1, PoolName: "p", Version: 2, LastPingTs: 5, EnvoyKey: "e"}},
			out: []packer{EnvoyLoadBalancerIdxKey{Namespace: ns1, PoolName: "pp", Version: 2, LastPingTs: 5, EnvoyKey: "e"}},
		},
		{
			name: "ActiveEnvoyKeyRange.Before", begin: first(ActiveEnvoyKeyRange(ns1).Before(7, "m")), end: second(ActiveEnvoyKeyRange(ns1).Before(7, "m")),
			in:  []packer{ActiveEnvoyKey{Namespace: ns1, CreateTs: 7, EnvoyKey: "l"}, ActiveEnvoyKey{Namespace: ns1, CreateTs: 6, EnvoyKey: "z"}},
			out: []packer{ActiveEnvoyKey{Namespace: ns1, CreateTs: 7, EnvoyKey: "m"}, ActiveEnvoyKey{Namespace: ns1, CreateTs: 7, EnvoyKey: "m\x00"}, ActiveEnvoyKey{Namespace: ns1, CreateTs: 8, EnvoyKey: ""}},
		},
		{
			name: "ActiveEnvoyByNameKeyRange", begin: first(ActiveEnvoyByNameKeyRange(ns1, "p").All()), end: second(ActiveEnvoyByNameKeyRange(ns1, "p").All()),
			in:  []packer{ActiveEnvoyByNameKey{Namespace: ns1, PoolName: "p", CreateTs: 7, EnvoyKey: "l"}},
			out: []packer{ActiveEnvoyKey{Namespace: ns1, CreateTs: 7, EnvoyKey: "l"}, ActiveEnvoyByNameKey{Namespace: ns1, PoolName: "q", CreateTs: 7, EnvoyKey: "l"}},
		},
		{
			name: "ActiveActorKeyRange", begin: first(ActiveActorKeyRange(ns1, "a").All()), end: second(ActiveActorKeyRange(ns1, "a").All()),
			in:  []packer{ActiveActorKey{Namespace: ns1, Name: "a", CreateTs: 1, ActorID: r1}},
			out: []packer{AllActorKey{Namespace: ns1, Name: "a", CreateTs: 1, ActorID: r1}, ActiveActorKey{Namespace: ns1, Name: "b", CreateTs: 1, ActorID: r1}},
		},
		{
			name: "AllActorKeyRange", begin: first(AllActorKeyRange(ns1, "a").All()), end: second(AllActorKeyRange(ns1, "a").All()),
			in:  []packer{AllActorKey{Namespace: ns1, Name: "a", CreateTs: 1, ActorID: r1}},
			out: []packer{ActiveActorKey{Namespace: ns1, Name: "a", CreateTs: 1, ActorID: r1}},
		},
		{
			name: "ActorByKeyKeyRange", begin: first(ActorByKeyKeyRange(ns1, "a", "k").All()), end: second(ActorByKeyKeyRange(ns1, "a", "k").All()),
			in:  []packer{ActorByKeyKey{Namespace: ns1, Name: "a", Key: "k", CreateTs: 1, ActorID: r1}},
			out: []packer{ActorByKeyKey{Namespace: ns1, Name: "a", Key: "k2", CreateTs: 1, ActorID: r1}, ActorByKeyKey{Namespace: ns1, Name: "ak", Key: "", CreateTs: 1, ActorID: r1}},
		},
		{
			name: "RunnerNameKeyRange.After", begin: first(RunnerNameKeyRange(ns1).After("b")), end: second(RunnerNameKeyRange(ns1).After("b")),
			in:  []packer{RunnerNameKey{Namespace: ns1, Name: "b\x00"}, RunnerNameKey{Namespace: ns1, Name: "ba"}, RunnerNameKey{Namespace: ns1, Name: "c"}},
			out: []packer{RunnerNameKey{Namespace: ns1, Name: "b"}, RunnerNameKey{Namespace: ns1, Name: "a"}, RunnerNameKey{Namespace: ns2, Name: "c"}},
		},
		{
			name: "ActorNameKeyRange", begin: first(ActorNameKeyRange(ns1).All()), end: second(ActorNameKeyRange(ns1).All()),
			in:  []packer{ActorNameKey{Namespace: ns1, Name: ""}, ActorNameKey{Namespace: ns1, Name: "\xff"}},
			out: []packer{RunnerNameKey{Namespace: ns1, Name: "a"}},
		},
		{
			name: "NamespaceByNameKeyRange", begin: first(NamespaceByNameKeyRange().All()), end: second(NamespaceByNameKeyRange().All()),
			in:  []packer{NamespaceByNameKey{Name: "default"}},
			out: []packer{NamespaceNameKey{NamespaceID: ns1}},
		},
	}
	for _, tc := range tests {
		for _, k := range tc.in {
			if !inRange(k.Pack(), tc.begin, tc.end) {
				t.Errorf("%s: %+v not in range", tc.name, k)
			}
		}
		for _, k := range tc.out {
			if inRange(k.Pack(), tc.begin, tc.end) {
				t.Errorf("%s: %+v in range", tc.name, k)
			}
		}
	}
}

func first(a, _ []byte) []byte  { return a }
func second(_, b []byte) []byte { return b }
