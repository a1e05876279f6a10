package keys

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded"
)

func openDB(t *testing.T) udb.Database {
	t.Helper()
	db, err := udb.Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// write runs f in a committed transaction.
func write(t *testing.T, db udb.Database, f func(tx udb.Transaction) error) {
	t.Helper()
	if err := udb.Update(context.Background(), db, f); err != nil {
		t.Fatal(err)
	}
}

// read runs f in a read transaction and returns its result.
func read[T any](t *testing.T, db udb.Database, f func(r udb.ReadTransaction) (T, error)) T {
	t.Helper()
	v, err := udb.ReadTransact(context.Background(), db, func(r udb.ReadTransaction) (T, error) { return f(r) })
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestGetSetClearAdd(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	ping := RunnerLastPingTsKey{RunnerID: rid1}
	slots := EnvoySlotsKey{Namespace: ns1, EnvoyKey: "e"}
	byKey := RunnerByKeyKey{Namespace: ns1, Name: "p", Key: "k"}
	byKeyVal := RunnerByKeyValue{RunnerID: rid1, WorkflowID: rid1}

	if _, found, err := Get(ctx, mustTx(t, db), ping); found || err != nil {
		t.Fatalf("absent key: found %v, %v", found, err)
	}
	write(t, db, func(tx udb.Transaction) error {
		Set(tx, ping, 1234)
		Set(tx, byKey, byKeyVal)
		Add(tx, slots, 0) // makes sure the counter exists
		Add(tx, slots, 1)
		Add(tx, slots, 1)
		return nil
	})
	write(t, db, func(tx udb.Transaction) error { Add(tx, slots, -3); return nil })

	r := mustTx(t, db)
	if v, found, err := Get(ctx, r, ping); !found || err != nil || v != 1234 {
		t.Fatalf("Get(ping) = %d, %v, %v", v, found, err)
	}
	if v, found, err := Get(ctx, r.Snapshot(), byKey); !found || err != nil || v != byKeyVal {
		t.Fatalf("Get(byKey) = %+v, %v, %v", v, found, err)
	}
	if v, found, err := Get(ctx, r, slots); !found || err != nil || v != -1 {
		t.Fatalf("Get(slots) = %d, %v, %v; want -1 after 0+1+1-3", v, found, err)
	}

	write(t, db, func(tx udb.Transaction) error { Clear(tx, ping); return nil })
	if _, found, err := Get(ctx, mustTx(t, db), ping); found || err != nil {
		t.Fatalf("cleared key: found %v, %v", found, err)
	}

	// A corrupt value is an error naming the key type.
	write(t, db, func(tx udb.Transaction) error { tx.Set(ping.Pack(), []byte{1, 2, 3}); return nil })
	if _, found, err := Get(ctx, mustTx(t, db), ping); found || !errors.Is(err, ErrBadValue) || !strings.Contains(err.Error(), "RunnerLastPingTsKey") {
		t.Fatalf("corrupt value: found %v, %v", found, err)
	}
}

func mustTx(t *testing.T, db udb.Database) udb.Transaction {
	t.Helper()
	tx, err := db.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tx.Cancel)
	return tx
}

// TestChunkedMetadata writes metadata of sizes around the 10,000-byte chunk
// boundary and reads it back, checking the chunk layout.
func TestChunkedMetadata(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	rk := RunnerMetadataKey{RunnerID: rid1}
	ek := EnvoyMetadataKey{Namespace: ns1, EnvoyKey: "e"}
	// The encoding is 2 version bytes, a uvarint length (2 bytes from 128 to
	// 16383, 3 bytes above), then the JSON.
	sizes := []int{0, 1, 9995, 9996, 9997, 19996, 19997, 100_000}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			json := randomJSON(rng, n)
			encoded := rk.Encode(json)
			wantChunks := max(1, (len(encoded)+ChunkSize-1)/ChunkSize)
			write(t, db, func(tx udb.Transaction) error {
				SetChunked(tx, rk, json)
				SetChunked(tx, ek, json)
				return nil
			})
			for _, k := range []ChunkedKey[string]{rk, ek} {
				begin, end := prefixRange(k.Pack())
				kvs := read(t, db, func(r udb.ReadTransaction) ([]udb.KeyValue, error) {
					return r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{}).All(ctx)
				})
				if len(kvs) != wantChunks {
					t.Fatalf("%T: %d chunks for %d encoded bytes, want %d", k, len(kvs), len(encoded), wantChunks)
				}
				var joined []byte
				for i, kv := range kvs {
					if len(kv.Value) > ChunkSize || (i < len(kvs)-1 && len(kv.Value) != ChunkSize) {
						t.Fatalf("chunk %d is %d bytes", i, len(kv.Value))
					}
					if !bytes.Equal(kv.Key, k.ChunkKey(i)) {
						t.Fatalf("chunk %d at %x, want %x", i, kv.Key, k.ChunkKey(i))
					}
					joined = append(joined, kv.Value...)
				}
				if !bytes.Equal(joined, encoded) {
					t.Fatal("chunks do not concatenate to the encoding")
				}
				got, found := read(t, db, func(r udb.ReadTransaction) (chunkedResult, error) {
					v, found, err := GetChunked(ctx, r, k)
					return chunkedResult{v, found}, err
				}).unpack()
				if !found || got != json {
					t.Fatalf("%T: GetChunked found %v, %d bytes, want %d", k, found, len(got), len(json))
				}
			}
		})
	}
	// Overwriting a long value with a short one leaves no stale chunk.
	write(t, db, func(tx udb.Transaction) error { SetChunked(tx, rk, "{}"); return nil })
	if got, found := readChunked(t, db, rk); !found || got != "{}" {
		t.Fatalf("after overwrite: %q, %v", got, found)
	}
	// The neighbouring data keys are untouched by the chunk range.
	write(t, db, func(tx udb.Transaction) error { Set(tx, RunnerCreateTsKey{RunnerID: rid1}, 5); return nil })
	write(t, db, func(tx udb.Transaction) error { ClearChunked(tx, rk); return nil })
	if _, found := readChunked(t, db, rk); found {
		t.Fatal("ClearChunked left chunks")
	}
	if v, found, err := Get(ctx, mustTx(t, db), RunnerCreateTsKey{RunnerID: rid1}); !found || err != nil || v != 5 {
		t.Fatalf("ClearChunked touched another key: %d, %v, %v", v, found, err)
	}
}

type chunkedResult struct {
	v     string
	found bool
}

func (c chunkedResult) unpack() (string, bool) { return c.v, c.found }

func readChunked(t *testing.T, db udb.Database, k ChunkedKey[string]) (string, bool) {
	t.Helper()
	return read(t, db, func(r udb.ReadTransaction) (chunkedResult, error) {
		v, found, err := GetChunked(context.Background(), r, k)
		return chunkedResult{v, found}, err
	}).unpack()
}

func randomJSON(rng *rand.Rand, n int) string {
	if n == 0 {
		return ""
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[rng.IntN(36)]
	}
	return string(b)
}

func TestChunkedCorruption(t *testing.T) {
	ctx := context.Background()
	k := RunnerMetadataKey{RunnerID: rid1}
	big := strings.Repeat("x", 25_000)
	tests := []struct {
		name   string
		damage func(tx udb.Transaction)
	}{
		{"missing middle chunk", func(tx udb.Transaction) { tx.Clear(k.ChunkKey(1)) }},
		{"missing first chunk", func(tx udb.Transaction) { tx.Clear(k.ChunkKey(0)) }},
		{"stray key in the chunk range", func(tx udb.Transaction) { tx.Set(append(k.Pack(), 0x02, 'x', 0x00), []byte("x")) }},
		{"truncated last chunk", func(tx udb.Transaction) { tx.Set(k.ChunkKey(2), []byte("x")) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			write(t, db, func(tx udb.Transaction) error { SetChunked(tx, k, big); tc.damage(tx); return nil })
			err := udb.View(ctx, db, func(r udb.ReadTransaction) error {
				_, _, err := GetChunked(ctx, r, k)
				return err
			})
			if !errors.Is(err, ErrBadValue) {
				t.Fatalf("GetChunked = %v, want ErrBadValue", err)
			}
		})
	}
}

// pageReverse lists r newest first in pages of limit, continuing each page
// with Before(last item), as the list ops do.
func pageReverse[T id.ID | string](t *testing.T, db udb.Database, r CreateTsRange[T], limit int, decode func([]byte) (int64, T)) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	begin, end := r.All()
	for pages := 0; ; pages++ {
		if pages > 10_000 {
			t.Fatal("paging does not end")
		}
		kvs := read(t, db, func(rt udb.ReadTransaction) ([]udb.KeyValue, error) {
			return rt.Snapshot().GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Limit: limit, Reverse: true}).All(ctx)
		})
		for _, kv := range kvs {
			ts, tie := decode(kv.Key)
			out = append(out, fmt.Sprintf("%020d/%v", ts+1<<62, tie))
		}
		if len(kvs) < limit {
			return out
		}
		ts, tie := decode(kvs[len(kvs)-1].Key)
		begin, end = r.Before(ts, tie)
	}
}

// TestPagingExactlyOnce stores hundreds of index entries created within the
// same few milliseconds and pages through them in reverse with several page
// sizes: every entry appears exactly once, newest first.
func TestPagingExactlyOnce(t *testing.T) {
	db := openDB(t)
	rng := rand.New(rand.NewPCG(9, 10))
	var runnerKeys []ActiveRunnerKey
	var envoyKeys []ActiveEnvoyByNameKey
	write(t, db, func(tx udb.Transaction) error {
		for i := range 300 {
			ts := int64(1700000000000 + rng.IntN(3))
			rid := id.New(1)
			k := ActiveRunnerKey{Namespace: ns1, CreateTs: ts, RunnerID: rid}
			Set(tx, k, rid)
			runnerKeys = append(runnerKeys, k)
			// Noise in a neighbouring namespace and index.
			Set(tx, ActiveRunnerKey{Namespace: ns2, CreateTs: ts, RunnerID: rid}, rid)
			Set(tx, AllRunnerKey{Namespace: ns1, CreateTs: ts, RunnerID: rid}, rid)
			ek := ActiveEnvoyByNameKey{Namespace: ns1, PoolName: "p", CreateTs: ts, EnvoyKey: fmt.Sprintf("envoy-%d", i)}
			Set(tx, ek, Empty{})
			envoyKeys = append(envoyKeys, ek)
			Set(tx, ActiveEnvoyByNameKey{Namespace: ns1, PoolName: "q", CreateTs: ts, EnvoyKey: ek.EnvoyKey}, Empty{})
		}
		return nil
	})
	// Newest first: the reverse of index order, (create_ts, tiebreak).
	desc := func(a, b []byte) int { return bytes.Compare(b, a) }
	slices.SortFunc(runnerKeys, func(a, b ActiveRunnerKey) int { return desc(a.Pack(), b.Pack()) })
	slices.SortFunc(envoyKeys, func(a, b ActiveEnvoyByNameKey) int { return desc(a.Pack(), b.Pack()) })
	var runners, envoys []string
	for _, k := range runnerKeys {
		runners = append(runners, fmt.Sprintf("%020d/%v", k.CreateTs+1<<62, k.RunnerID))
	}
	for _, k := range envoyKeys {
		envoys = append(envoys, fmt.Sprintf("%020d/%v", k.CreateTs+1<<62, k.EnvoyKey))
	}

	decodeRunner := func(b []byte) (int64, id.ID) {
		k, err := UnpackActiveRunnerKey(b)
		if err != nil {
			t.Fatal(err)
		}
		return k.CreateTs, k.RunnerID
	}
	decodeEnvoy := func(b []byte) (int64, string) {
		k, err := UnpackActiveEnvoyByNameKey(b)
		if err != nil {
			t.Fatal(err)
		}
		return k.CreateTs, k.EnvoyKey
	}
	for _, limit := range []int{1, 7, 100, 299, 300, 301} {
		gotR := pageReverse(t, db, ActiveRunnerKeyRange(ns1), limit, decodeRunner)
		checkExactlyOnce(t, fmt.Sprintf("runners, limit %d", limit), gotR, runners)
		gotE := pageReverse(t, db, ActiveEnvoyByNameKeyRange(ns1, "p"), limit, decodeEnvoy)
		checkExactlyOnce(t, fmt.Sprintf("envoys, limit %d", limit), gotE, envoys)
	}
}

// checkExactlyOnce requires got to be want: every item once, in order.
func checkExactlyOnce(t *testing.T, what string, got, want []string) {
	t.Helper()
	seen := map[string]int{}
	for _, g := range got {
		if seen[g]++; seen[g] > 1 {
			t.Fatalf("%s: %s twice", what, g)
		}
	}
	for _, w := range want {
		if seen[w] != 1 {
			t.Fatalf("%s: %s missing", what, w)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: same items, wrong order", what)
	}
}

// TestBeforeTsSkipsTheMillisecond shows why the (create_ts, id) cursor
// exists: the legacy create_ts cursor excludes the whole millisecond.
func TestBeforeTsSkipsTheMillisecond(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	a, b, c := testID(1), testID(2), testID(3)
	write(t, db, func(tx udb.Transaction) error {
		for _, k := range []ActiveRunnerKey{{ns1, 10, a}, {ns1, 11, a}, {ns1, 11, b}, {ns1, 11, c}} {
			Set(tx, k, k.RunnerID)
		}
		return nil
	})
	count := func(begin, end []byte) int {
		return len(read(t, db, func(r udb.ReadTransaction) ([]udb.KeyValue, error) {
			return r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{}).All(ctx)
		}))
	}
	r := ActiveRunnerKeyRange(ns1)
	if n := count(r.Before(11, c)); n != 3 {
		t.Fatalf("Before(11, c) holds %d entries, want 3", n)
	}
	if n := count(r.BeforeTs(11)); n != 1 {
		t.Fatalf("BeforeTs(11) holds %d entries, want 1", n)
	}
}

// TestNameRangeAfter pages through runner names forward.
func TestNameRangeAfter(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	names := []string{"a", "a\x00", "ab", "b", "c"}
	write(t, db, func(tx udb.Transaction) error {
		for _, n := range names {
			Set(tx, RunnerNameKey{Namespace: ns1, Name: n}, Empty{})
			Set(tx, RunnerNameKey{Namespace: ns2, Name: n}, Empty{})
		}
		return nil
	})
	var got []string
	begin, end := RunnerNameKeyRange(ns1).All()
	for {
		kvs := read(t, db, func(r udb.ReadTransaction) ([]udb.KeyValue, error) {
			return r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Limit: 2}).All(ctx)
		})
		for _, kv := range kvs {
			k, err := UnpackRunnerNameKey(kv.Key)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, k.Name)
		}
		if len(kvs) < 2 {
			break
		}
		begin, end = RunnerNameKeyRange(ns1).After(got[len(got)-1])
	}
	if !slices.Equal(got, names) {
		t.Fatalf("names %q, want %q", got, names)
	}
}
