package keys

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// testID returns a fixed valid ID that sorts by n.
func testID(n byte) id.ID { return id.FromParts([16]byte{n, 0xa0, 0x00, n}, uint16(n)) }

var (
	ns1  = testID(1)
	ns2  = testID(2)
	rid1 = testID(10)
	aid1 = testID(20)
)

type packer interface{ Pack() []byte }

// keyCase is one key type: a sample key and its Unpack function.
type keyCase struct {
	name   string
	key    packer
	want   any // what unpack must return for key.Pack()
	unpack func([]byte) (any, error)
}

func kc[K packer](k K, unpack func([]byte) (K, error)) keyCase {
	return keyCase{name: fmt.Sprintf("%T", k), key: k, want: k, unpack: func(b []byte) (any, error) { return unpack(b) }}
}

type chunkRef struct {
	key   any
	chunk int
}

type rawKey []byte

func (k rawKey) Pack() []byte { return k }

func chunkCase[K interface {
	packer
	ChunkKey(int) []byte
}](k K, chunk int, unpack func([]byte) (K, int, error)) keyCase {
	return keyCase{
		name: fmt.Sprintf("%T chunk", k), key: rawKey(k.ChunkKey(chunk)), want: chunkRef{k, chunk},
		unpack: func(b []byte) (any, error) {
			k, c, err := unpack(b)
			return chunkRef{k, c}, err
		},
	}
}

// allKeyCases lists every key type with a sample whose fields are all set.
func allKeyCases() []keyCase {
	const ek = "envoy-a"
	return []keyCase{
		// Namespaces.
		kc(NamespaceNameKey{NamespaceID: ns1}, UnpackNamespaceNameKey),
		kc(NamespaceDisplayNameKey{NamespaceID: ns1}, UnpackNamespaceDisplayNameKey),
		kc(NamespaceCreateTsKey{NamespaceID: ns1}, UnpackNamespaceCreateTsKey),
		kc(NamespaceByNameKey{Name: "default"}, UnpackNamespaceByNameKey),
		// Runner data.
		kc(RunnerCreateTsKey{RunnerID: rid1}, UnpackRunnerCreateTsKey),
		kc(RunnerLastPingTsKey{RunnerID: rid1}, UnpackRunnerLastPingTsKey),
		kc(RunnerStopTsKey{RunnerID: rid1}, UnpackRunnerStopTsKey),
		kc(RunnerDrainTsKey{RunnerID: rid1}, UnpackRunnerDrainTsKey),
		kc(RunnerConnectedTsKey{RunnerID: rid1}, UnpackRunnerConnectedTsKey),
		kc(RunnerExpiredTsKey{RunnerID: rid1}, UnpackRunnerExpiredTsKey),
		kc(RunnerRemainingSlotsKey{RunnerID: rid1}, UnpackRunnerRemainingSlotsKey),
		kc(RunnerTotalSlotsKey{RunnerID: rid1}, UnpackRunnerTotalSlotsKey),
		kc(RunnerVersionKey{RunnerID: rid1}, UnpackRunnerVersionKey),
		kc(RunnerLastRttKey{RunnerID: rid1}, UnpackRunnerLastRttKey),
		kc(RunnerProtocolVersionKey{RunnerID: rid1}, UnpackRunnerProtocolVersionKey),
		kc(RunnerWorkflowIDKey{RunnerID: rid1}, UnpackRunnerWorkflowIDKey),
		kc(RunnerNamespaceIDKey{RunnerID: rid1}, UnpackRunnerNamespaceIDKey),
		kc(RunnerDataNameKey{RunnerID: rid1}, UnpackRunnerDataNameKey),
		kc(RunnerKeyKey{RunnerID: rid1}, UnpackRunnerKeyKey),
		kc(RunnerConnIDKey{RunnerID: rid1}, UnpackRunnerConnIDKey),
		chunkCase(RunnerMetadataKey{RunnerID: rid1}, 3, UnpackRunnerMetadataChunkKey),
		// Runner indexes.
		kc(ActiveRunnerKey{Namespace: ns1, CreateTs: 1700000000123, RunnerID: rid1}, UnpackActiveRunnerKey),
		kc(AllRunnerKey{Namespace: ns1, CreateTs: 1700000000123, RunnerID: rid1}, UnpackAllRunnerKey),
		kc(ActiveRunnerByNameKey{Namespace: ns1, Name: "pool", CreateTs: 5, RunnerID: rid1}, UnpackActiveRunnerByNameKey),
		kc(AllRunnerByNameKey{Namespace: ns1, Name: "pool", CreateTs: 5, RunnerID: rid1}, UnpackAllRunnerByNameKey),
		kc(RunnerByKeyKey{Namespace: ns1, Name: "pool", Key: "host-1"}, UnpackRunnerByKeyKey),
		kc(RunnerNameKey{Namespace: ns1, Name: "pool"}, UnpackRunnerNameKey),
		kc(RunnerAllocIdxKey{Namespace: ns1, Name: "pool", Version: 7, RemainingMillislots: 250, LastPingTs: 99, RunnerID: rid1}, UnpackRunnerAllocIdxKey),
		kc(RunnerActorKey{RunnerID: rid1, ActorID: testID(9)}, UnpackRunnerActorKey),
		kc(RunnerCommandKey{RunnerID: rid1, ActorID: testID(9), Generation: 1<<32 - 1, Index: 7}, UnpackRunnerCommandKey),
		kc(ActorStateKey{ActorID: testID(9)}, UnpackActorStateKey),
		kc(HibernatingRequestKey{ActorID: testID(9), GatewayID: [4]byte{0xff, 1, 2, 3}, RequestID: [4]byte{4, 5, 6, 0xff}}, UnpackHibernatingRequestKey),
		kc(ActorHistoryKey{ActorID: testID(9), Slot: 63}, UnpackActorHistoryKey),
		kc(ActorTimerKey{DueTs: 1700000000123, ActorID: testID(9)}, UnpackActorTimerKey),
		kc(PendingActorKey{Namespace: ns1, Selector: "pool", Ts: 5, ActorID: testID(9)}, UnpackPendingActorKey),
		kc(RunnerPingIdxKey{LastPingTs: 1700000000123, RunnerID: rid1}, UnpackRunnerPingIdxKey),
		kc(RunnerDrainIdxKey{DrainTs: 1700000000123, RunnerID: rid1}, UnpackRunnerDrainIdxKey),
		// Envoy data.
		kc(EnvoyCreateTsKey{Namespace: ns1, EnvoyKey: ek}, UnpackEnvoyCreateTsKey),
		kc(EnvoyExpiredTsKey{Namespace: ns1, EnvoyKey: ek}, UnpackEnvoyExpiredTsKey),
		kc(EnvoyStopTsKey{Namespace: ns1, EnvoyKey: ek}, UnpackEnvoyStopTsKey),
		kc(EnvoyConnectedTsKey{Namespace: ns1, EnvoyKey: ek}, UnpackEnvoyConnectedTsKey),
		kc(EnvoyLastPingTsKey{Namespace: ns1, EnvoyKey: ek}, UnpackEnvoyLastPingTsKey),
		kc(EnvoyPoolNameKey{Namespace: ns1, EnvoyKey: ek}, UnpackEnvoyPoolNameKey),
		kc(EnvoyVersionKey{Namespace: ns1, EnvoyKey: ek}, UnpackEnvoyVersionKey),
		kc(EnvoyVirtualNodesKey{Namespace: ns1, EnvoyKey: ek}, UnpackEnvoyVirtualNodesKey),
		kc(EnvoyProtocolVersionKey{Namespace: ns1, EnvoyKey: ek}, UnpackEnvoyProtocolVersionKey),
		kc(EnvoyLastRttKey{Namespace: ns1, EnvoyKey: ek}, UnpackEnvoyLastRttKey),
		kc(EnvoySlotsKey{Namespace: ns1, EnvoyKey: ek}, UnpackEnvoySlotsKey),
		kc(EnvoyConnIDKey{Namespace: ns1, EnvoyKey: ek}, UnpackEnvoyConnIDKey),
		chunkCase(EnvoyMetadataKey{Namespace: ns1, EnvoyKey: ek}, 0, UnpackEnvoyMetadataChunkKey),
		// Envoy indexes.
		kc(ActiveEnvoyKey{Namespace: ns1, CreateTs: 42, EnvoyKey: ek}, UnpackActiveEnvoyKey),
		kc(ActiveEnvoyByNameKey{Namespace: ns1, PoolName: "pool", CreateTs: 42, EnvoyKey: ek}, UnpackActiveEnvoyByNameKey),
		kc(EnvoyLoadBalancerIdxKey{Namespace: ns1, PoolName: "pool", Version: 3, LastPingTs: 77, EnvoyKey: ek}, UnpackEnvoyLoadBalancerIdxKey),
		kc(EnvoyHashIdxKey{Namespace: ns1, PoolName: "pool", Version: 3, Position: []byte{0, 0xff, 7}, EnvoyKey: ek}, UnpackEnvoyHashIdxKey),
		kc(EnvoyActorKey{Namespace: ns1, EnvoyKey: ek, ActorID: testID(9)}, UnpackEnvoyActorKey),
		kc(EnvoyCommandKey{Namespace: ns1, EnvoyKey: ek, ActorID: testID(9), Generation: 1<<32 - 1, Index: 7}, UnpackEnvoyCommandKey),
		// Actor data.
		kc(ActorCreateTsKey{ActorID: aid1}, UnpackActorCreateTsKey),
		kc(ActorWorkflowIDKey{ActorID: aid1}, UnpackActorWorkflowIDKey),
		kc(ActorNamespaceIDKey{ActorID: aid1}, UnpackActorNamespaceIDKey),
		kc(ActorDataNameKey{ActorID: aid1}, UnpackActorDataNameKey),
		kc(ActorKeyKey{ActorID: aid1}, UnpackActorKeyKey),
		kc(ActorRunnerNameSelectorKey{ActorID: aid1}, UnpackActorRunnerNameSelectorKey),
		kc(ActorPoolNameKey{ActorID: aid1}, UnpackActorPoolNameKey),
		kc(ActorVersionKey{ActorID: aid1}, UnpackActorVersionKey),
		kc(ActorGenerationKey{ActorID: aid1}, UnpackActorGenerationKey),
		kc(ActorRunnerIDKey{ActorID: aid1}, UnpackActorRunnerIDKey),
		kc(ActorEnvoyKeyKey{ActorID: aid1}, UnpackActorEnvoyKeyKey),
		kc(ActorConnectableKey{ActorID: aid1}, UnpackActorConnectableKey),
		kc(ActorSleepTsKey{ActorID: aid1}, UnpackActorSleepTsKey),
		kc(ActorDestroyTsKey{ActorID: aid1}, UnpackActorDestroyTsKey),
		// Actor indexes.
		kc(ActiveActorKey{Namespace: ns1, Name: "counter", CreateTs: 8, ActorID: aid1}, UnpackActiveActorKey),
		kc(AllActorKey{Namespace: ns1, Name: "counter", CreateTs: 8, ActorID: aid1}, UnpackAllActorKey),
		kc(ActorByKeyKey{Namespace: ns1, Name: "counter", Key: "k", CreateTs: 8, ActorID: aid1}, UnpackActorByKeyKey),
		kc(ActorNameKey{Namespace: ns1, Name: "counter"}, UnpackActorNameKey),
		// Engine nodes: ownership records of runner and envoy sockets.
		kc(NodeLeaseKey{NodeID: "n1"}, UnpackNodeLeaseKey),
		kc(SocketOwnerKey{Socket: RunnerSocket(rid1)}, UnpackSocketOwnerKey),
		kc(SocketOwnerKey{Socket: EnvoySocket(ns1, ek)}, UnpackSocketOwnerKey),
		kc(NodeSocketKey{NodeID: "n1", Socket: RunnerSocket(rid1)}, UnpackNodeSocketKey),
		kc(NodeSocketKey{NodeID: "n1", Socket: EnvoySocket(ns1, ek)}, UnpackNodeSocketKey),
		// Serverless pools.
		kc(PoolActorsKey{Namespace: ns1, Name: "pool"}, UnpackPoolActorsKey),
		// Keys across datacenters.
		kc(KeyReservationKey{Namespace: ns1, Name: "counter", Key: "k"}, UnpackKeyReservationKey),
		kc(KeyFenceKey{ActorID: aid1}, UnpackKeyFenceKey),
		// Leases and serverless runner pools.
		kc(LeaseKey{Name: "serverless/x"}, UnpackLeaseKey),
		kc(ServerlessDemandKey{Namespace: ns1, Name: "sl"}, UnpackServerlessDemandKey),
	}
}

func TestKeysRoundTrip(t *testing.T) {
	seen := map[string]string{}
	for _, c := range allKeyCases() {
		t.Run(c.name, func(t *testing.T) {
			k := c.key.Pack()
			if other, dup := seen[string(k)]; dup {
				t.Fatalf("packs to the same bytes as %s", other)
			}
			seen[string(k)] = c.name
			got, err := c.unpack(k)
			if err != nil {
				t.Fatalf("Unpack(Pack()) = %v", err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Unpack(Pack()) = %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestKeysRejectOtherFamilies checks each Unpack against every other key
// type's sample, and against damaged forms of its own key.
func TestKeysRejectOtherFamilies(t *testing.T) {
	cases := allKeyCases()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for j, o := range cases {
				if i == j || o.name == c.name { // one family may have samples of several shapes
					continue
				}
				if got, err := c.unpack(o.key.Pack()); !errors.Is(err, ErrBadKey) {
					t.Errorf("accepted a %s: %+v, %v", o.name, got, err)
				}
			}
			k := c.key.Pack()
			damaged := map[string][]byte{
				"empty":           nil,
				"extra element":   append(bytes.Clone(k), 0x14),
				"extra bytes":     append(bytes.Clone(k), 0xff),
				"other subspace":  append([]byte{0x14, 0x15, 0x01}, k[3:]...), // GASOLINE instead of PEGBOARD or NAMESPACE
				"namespace space": append(namespaceSub.Bytes(), k[len(pegboard.Bytes()):]...),
			}
			for n := 1; n < len(k); n++ {
				damaged[fmt.Sprintf("prefix %d", n)] = k[:n]
			}
			if strings.HasPrefix(c.name, "keys.Namespace") {
				damaged["namespace space"] = append(pegboard.Bytes(), k[len(namespaceSub.Bytes()):]...)
			}
			for what, b := range damaged {
				if got, err := c.unpack(b); !errors.Is(err, ErrBadKey) {
					t.Errorf("%s %x: accepted as %+v, %v", what, b, got, err)
				} else if !strings.Contains(err.Error(), strings.TrimSuffix(strings.TrimPrefix(c.name, "keys."), " chunk")) {
					t.Errorf("%s: error %q does not name the key type", what, err)
				}
			}
		})
	}
}

// TestKeyBytes pins a few keys to bytes derived by hand from the tuple
// encoding and Rivet's segment numbers.
func TestKeyBytes(t *testing.T) {
	r := hex.EncodeToString(append([]byte{0x40}, rid1[:]...))
	n := hex.EncodeToString(append([]byte{0x40}, ns1[:]...))
	tests := []struct {
		name string
		key  packer
		want string
	}{
		// (RIVET=0, PEGBOARD=3, RUNNER=46, DATA=4, id, LAST_PING_TS=24)
		{"runner last ping", RunnerLastPingTsKey{RunnerID: rid1}, "14" + "1503" + "152e" + "1504" + r + "1518"},
		// (RIVET, NAMESPACE=39, DATA, id, DISPLAY_NAME=41)
		{"namespace display name", NamespaceDisplayNameKey{NamespaceID: ns1}, "14" + "1527" + "1504" + n + "1529"},
		// (RIVET, NAMESPACE, BY_NAME=33, "default")
		{"namespace by name", NamespaceByNameKey{Name: "default"}, "14" + "1527" + "1521" + "02" + hex.EncodeToString([]byte("default")) + "00"},
		// CONN_ID = 1000 = 0x03e8, berth's tag.
		{"envoy conn id", EnvoyConnIDKey{Namespace: ns1, EnvoyKey: "e"}, "14" + "1503" + "1527" + "1573" + "1504" + n + "026500" + "1603e8"},
		// (NAMESPACE=39, RUNNER_ALLOC_IDX=47, ns, "p", -2, -500, 1000, id): -2 is 13 fd, -500 is 12 fe0b.
		{"alloc idx", RunnerAllocIdxKey{Namespace: ns1, Name: "p", Version: 2, RemainingMillislots: 500, LastPingTs: 1000, RunnerID: rid1},
			"14" + "1503" + "1527" + "152f" + n + "027000" + "13fd" + "12fe0b" + "1603e8" + r},
		// Metadata chunk 1: base key then the integer 1.
		{"metadata chunk", rawKey(RunnerMetadataKey{RunnerID: rid1}.ChunkKey(1)), "14" + "1503" + "152e" + "1504" + r + "152c" + "1501"},
	}
	for _, tc := range tests {
		if got := hex.EncodeToString(tc.key.Pack()); got != tc.want {
			t.Errorf("%s: Pack = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestUnpackRejectsOutOfRangeFields(t *testing.T) {
	alloc := func(version, slots int64) []byte {
		return pegboard.Pack(tuple.Tuple{tagNamespace, tagRunnerAllocIdx, ns1, "p", version, slots, int64(1), rid1})
	}
	lb := func(version int64) []byte {
		return pegboard.Pack(tuple.Tuple{tagNamespace, tagEnvoyLoadBalancerIdx, ns1, "p", version, int64(1), "e"})
	}
	chunk := func(i int64) []byte {
		return tuple.Tuple{i}.AppendPack(RunnerMetadataKey{RunnerID: rid1}.Pack())
	}
	for name, b := range map[string][]byte{
		"alloc positive version": alloc(1, 0),
		"alloc huge version":     alloc(-(1 << 32), 0),
		"alloc positive slots":   alloc(-1, 5),
		"lb positive version":    lb(3),
		"negative chunk":         chunk(-1),
		"huge chunk":             chunk(maxChunks + 1),
	} {
		var err error
		switch {
		case strings.HasPrefix(name, "alloc"):
			_, err = UnpackRunnerAllocIdxKey(b)
		case strings.HasPrefix(name, "lb"):
			_, err = UnpackEnvoyLoadBalancerIdxKey(b)
		default:
			_, _, err = UnpackRunnerMetadataChunkKey(b)
		}
		if !errors.Is(err, ErrBadKey) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The extremes that are in range round-trip.
	k := RunnerAllocIdxKey{Namespace: ns1, Name: "p", Version: 1<<32 - 1, RemainingMillislots: 1<<32 - 1, LastPingTs: -5, RunnerID: rid1}
	if got, err := UnpackRunnerAllocIdxKey(k.Pack()); err != nil || got != k {
		t.Fatalf("max fields: %+v, %v", got, err)
	}
}

func TestRemainingMillislots(t *testing.T) {
	tests := []struct{ remaining, total, want uint32 }{
		{0, 0, 0}, {5, 0, 0}, {0, 10, 0}, {10, 10, 1000}, {1, 3, 334}, {2, 3, 667},
		{1, 10000, 1}, {9, 10000, 1}, {10, 10000, 1}, {11, 10000, 2}, {9999, 10000, 1000}, // rounded up: never 0 while a slot is free
		{12, 10, 1000},               // more free than total (a total lowered at reconnect) counts as empty
		{1<<32 - 1, 1<<32 - 1, 1000}, // no overflow in remaining*1000
	}
	for _, tc := range tests {
		if got := RemainingMillislots(tc.remaining, tc.total); got != tc.want {
			t.Errorf("RemainingMillislots(%d, %d) = %d, want %d", tc.remaining, tc.total, got, tc.want)
		}
	}
}

// TestUnpackKeepsTheCause checks that a malformed id inside a key is
// reported as ErrBadKey and still matches the id package's error class.
func TestUnpackKeepsTheCause(t *testing.T) {
	k := RunnerCreateTsKey{RunnerID: rid1}.Pack()
	at := bytes.IndexByte(k, id.TupleCode) + 1
	k[at] = 2 // the id's version byte
	_, err := UnpackRunnerCreateTsKey(k)
	if !errors.Is(err, ErrBadKey) || !errors.Is(err, id.ErrVersion) {
		t.Fatalf("Unpack with a version-2 id = %v; want ErrBadKey and id.ErrVersion", err)
	}
}
