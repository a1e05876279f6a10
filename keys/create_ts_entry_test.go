package keys

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

var entryTimes = []int64{0, 1, 255, 256, 1 << 40, 1700000000123, math.MaxInt64, -1, -255, -256, -(1 << 40), math.MinInt64}

// Entry reads the (create_ts, tie) that the index's Unpack function reads.
func TestCreateTsRangeEntry(t *testing.T) {
	type idCase struct {
		name string
		rng  CreateTsRange[id.ID]
		pack func(ts int64, rid id.ID) []byte
	}
	for _, c := range []idCase{
		{"ActiveRunnerKey", ActiveRunnerKeyRange(ns1), func(ts int64, rid id.ID) []byte {
			return ActiveRunnerKey{Namespace: ns1, CreateTs: ts, RunnerID: rid}.Pack()
		}},
		{"AllRunnerKey", AllRunnerKeyRange(ns1), func(ts int64, rid id.ID) []byte {
			return AllRunnerKey{Namespace: ns1, CreateTs: ts, RunnerID: rid}.Pack()
		}},
		{"ActiveRunnerByNameKey", ActiveRunnerByNameKeyRange(ns1, "pool\x00x"), func(ts int64, rid id.ID) []byte {
			return ActiveRunnerByNameKey{Namespace: ns1, Name: "pool\x00x", CreateTs: ts, RunnerID: rid}.Pack()
		}},
		{"AllRunnerByNameKey", AllRunnerByNameKeyRange(ns1, "pool"), func(ts int64, rid id.ID) []byte {
			return AllRunnerByNameKey{Namespace: ns1, Name: "pool", CreateTs: ts, RunnerID: rid}.Pack()
		}},
		{"ActiveActorKey", ActiveActorKeyRange(ns1, "a"), func(ts int64, rid id.ID) []byte {
			return ActiveActorKey{Namespace: ns1, Name: "a", CreateTs: ts, ActorID: rid}.Pack()
		}},
	} {
		for _, ts := range entryTimes {
			for _, rid := range []id.ID{rid1, id.New(7)} {
				key := c.pack(ts, rid)
				gotTs, gotID, err := c.rng.Entry(key)
				if err != nil || gotTs != ts || gotID != rid {
					t.Errorf("%s (%d, %s): Entry = %d, %s, %v", c.name, ts, rid, gotTs, gotID, err)
				}
			}
		}
		key := c.pack(5, rid1)
		if n := testing.AllocsPerRun(100, func() { _, _, _ = c.rng.Entry(key) }); n != 0 {
			t.Errorf("%s: Entry makes %v allocations; want none", c.name, n)
		}
		begin, _ := c.rng.All()
		prefix := begin[:len(begin)-1]
		for name, key := range map[string][]byte{
			"another namespace": ActiveRunnerKey{Namespace: ns2, CreateTs: 5, RunnerID: rid1}.Pack(),
			"no create_ts":      append(bytes.Clone(prefix), 0x02, 'x', 0x00),
			"a string tie":      tuple.Tuple{int64(5), "x"}.AppendPack(bytes.Clone(prefix)),
			"no tie":            tuple.Tuple{int64(5)}.AppendPack(bytes.Clone(prefix)),
			"two ties":          tuple.Tuple{int64(5), rid1, rid1}.AppendPack(bytes.Clone(prefix)),
			"a short id":        append(tuple.Tuple{int64(5)}.AppendPack(bytes.Clone(prefix)), id.TupleCode, 1, 2),
			"a bad id version":  append(append(tuple.Tuple{int64(5)}.AppendPack(bytes.Clone(prefix)), id.TupleCode), make([]byte, id.Size)...),
			"a truncated int":   append(bytes.Clone(prefix), 0x18, 1, 2),
			"a big int":         append(bytes.Clone(prefix), 0x1d, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9),
			"2^63":              tuple.Tuple{uint64(1 << 63), rid1}.AppendPack(bytes.Clone(prefix)),
		} {
			if _, _, err := c.rng.Entry(key); !errors.Is(err, ErrBadKey) {
				t.Errorf("%s, %s: Entry error %v; want ErrBadKey", c.name, name, err)
			}
		}
	}

	for _, ts := range entryTimes {
		for _, ek := range []string{"", "envoy-1", "a\x00b\xff"} {
			k := ActiveEnvoyKey{Namespace: ns1, CreateTs: ts, EnvoyKey: ek}
			if gotTs, got, err := ActiveEnvoyKeyRange(ns1).Entry(k.Pack()); err != nil || gotTs != ts || got != ek {
				t.Errorf("ActiveEnvoyKey (%d, %q): Entry = %d, %q, %v", ts, ek, gotTs, got, err)
			}
			kn := ActiveEnvoyByNameKey{Namespace: ns1, PoolName: "p", CreateTs: ts, EnvoyKey: ek}
			if gotTs, got, err := ActiveEnvoyByNameKeyRange(ns1, "p").Entry(kn.Pack()); err != nil || gotTs != ts || got != ek {
				t.Errorf("ActiveEnvoyByNameKey (%d, %q): Entry = %d, %q, %v", ts, ek, gotTs, got, err)
			}
		}
	}
	if _, _, err := ActiveEnvoyKeyRange(ns1).Entry(ActiveRunnerKey{Namespace: ns1, CreateTs: 5, RunnerID: rid1}.Pack()); !errors.Is(err, ErrBadKey) {
		t.Errorf("a runner entry read as an envoy entry: %v", err)
	}
}

// FuzzCreateTsRangeEntry: Entry never panics, and reads what UnpackActiveRunnerKey reads
// whenever that accepts the key.
func FuzzCreateTsRangeEntry(f *testing.F) {
	rng := ActiveRunnerKeyRange(ns1)
	begin, _ := rng.All()
	prefix := begin[:len(begin)-1]
	for _, ts := range entryTimes {
		f.Add(ActiveRunnerKey{Namespace: ns1, CreateTs: ts, RunnerID: rid1}.Pack()[len(prefix):])
	}
	f.Fuzz(func(t *testing.T, suffix []byte) {
		key := append(bytes.Clone(prefix), suffix...)
		ts, rid, err := rng.Entry(key)
		k, uerr := UnpackActiveRunnerKey(key)
		switch {
		case err != nil && !errors.Is(err, ErrBadKey):
			t.Fatalf("%x: error %v does not wrap ErrBadKey", key, err)
		case err == nil && (uerr != nil || k.CreateTs != ts || k.RunnerID != rid):
			t.Fatalf("%x: Entry = %d, %s; Unpack = %+v, %v", key, ts, rid, k, uerr)
		}
	})
}
