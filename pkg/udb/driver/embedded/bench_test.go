package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/cockroachdb/pebble/v2"
)

// Benchmarks of the embedded driver against raw pebble. Run without -race:
//
//	go test -run '^$' -bench . -benchtime 3s ./pkg/udb/driver/embedded
//
// The durable ones fsync in b.TempDir(): point TMPDIR at the disk to measure.

var benchWriterCounts = []int{1, 64}

// runWriters splits b.N operations across writers goroutines, times them and
// reports the rate under unit.
func runWriters(b *testing.B, writers int, unit string, op func(w int) error) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	b.ResetTimer()
	start := time.Now()
	for w := range writers {
		n := b.N / writers
		if w < b.N%writers {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				if err := op(w); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), unit)
}

func benchKey(prefix string, i int) []byte { return []byte(fmt.Sprintf("%s/%05d", prefix, i)) }

func decodeCount(v []byte) (uint64, error) {
	switch len(v) {
	case 0:
		return 0, nil
	case 8:
		return binary.LittleEndian.Uint64(v), nil
	}
	return 0, fmt.Errorf("counter is %x", v)
}

// BenchmarkDurableRMW: each writer loops Transact { Get its own key; Set it
// to the value plus one }, fsync on.
func BenchmarkDurableRMW(b *testing.B) {
	for _, writers := range benchWriterCounts {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			ctx := context.Background()
			db, err := udb.Open(ctx, "file://"+b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			runWriters(b, writers, "commits/s", func(w int) error {
				key := benchKey("rmw", w)
				_, err := db.Transact(ctx, func(tx udb.Transaction) (any, error) {
					v, err := tx.Get(ctx, key)
					if err != nil {
						return nil, err
					}
					n, err := decodeCount(v)
					if err != nil {
						return nil, err
					}
					tx.Set(key, le64(n+1))
					return nil, nil
				})
				return err
			})
			// Every commit counted once.
			sum, err := db.ReadTransact(ctx, func(tx udb.ReadTransaction) (any, error) {
				var sum uint64
				for w := range writers {
					v, err := tx.Get(ctx, benchKey("rmw", w))
					if err != nil {
						return nil, err
					}
					n, err := decodeCount(v)
					if err != nil {
						return nil, err
					}
					sum += n
				}
				return sum, nil
			})
			if err != nil {
				b.Fatal(err)
			}
			if sum.(uint64) != uint64(b.N) {
				b.Fatalf("counters sum to %d after %d commits", sum, b.N)
			}
		})
	}
}

// BenchmarkRawPebble is BenchmarkDurableRMW's baseline: pebble with the
// driver's options, each writer looping Get its own key, then a batch with
// one Set committed with pebble.Sync. Pebble group-commits concurrent synced
// batches itself.
func BenchmarkRawPebble(b *testing.B) {
	for _, writers := range benchWriterCounts {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			pdb, err := pebble.Open(b.TempDir(), &pebble.Options{
				Logger:                quietLogger{},
				MemTableSize:          64 << 20,
				L0CompactionThreshold: 4,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer pdb.Close()
			runWriters(b, writers, "commits/s", func(w int) error {
				key := benchKey("rmw", w)
				var n uint64
				v, closer, err := pdb.Get(key)
				switch {
				case errors.Is(err, pebble.ErrNotFound):
				case err != nil:
					return err
				default:
					n, err = decodeCount(v)
					_ = closer.Close()
					if err != nil {
						return err
					}
				}
				batch := pdb.NewBatch()
				defer batch.Close()
				if err := batch.Set(key, le64(n+1), nil); err != nil {
					return err
				}
				return batch.Commit(pebble.Sync)
			})
		})
	}
}

const benchReadKeys = 10_000

// openReadDB opens a durable database holding benchReadKeys keys.
func openReadDB(b *testing.B) udb.Database {
	b.Helper()
	ctx := context.Background()
	db, err := udb.Open(ctx, "file://"+b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for lo := 0; lo < benchReadKeys; lo += 1000 {
		_, err := db.Transact(ctx, func(tx udb.Transaction) (any, error) {
			for i := lo; i < min(lo+1000, benchReadKeys); i++ {
				tx.Set(benchKey("read", i), []byte(fmt.Sprintf("value-%05d-%s", i, "0123456789abcdef0123456789abcdef")))
			}
			return nil, nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return db
}

// BenchmarkPointRead reads random existing keys, in parallel, one or 100
// Gets per transaction. An op is one transaction.
func BenchmarkPointRead(b *testing.B) {
	for _, gets := range []int{1, 100} {
		b.Run(fmt.Sprintf("gets=%d", gets), func(b *testing.B) {
			ctx := context.Background()
			db := openReadDB(b)
			defer db.Close()
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
				for pb.Next() {
					_, err := db.ReadTransact(ctx, func(tx udb.ReadTransaction) (any, error) {
						for range gets {
							v, err := tx.Get(ctx, benchKey("read", rng.IntN(benchReadKeys)))
							if err != nil {
								return nil, err
							}
							if v == nil {
								return nil, errors.New("preloaded key missing")
							}
						}
						return nil, nil
					})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N*gets)/elapsed.Seconds(), "reads/s")
		})
	}
}

// BenchmarkRangeRead1000 reads 1,000 consecutive keys with one GetRange per
// transaction, from one goroutine and in parallel. An op is one range read.
func BenchmarkRangeRead1000(b *testing.B) {
	const n = 1000
	for _, parallel := range []bool{false, true} {
		name := "goroutines=1"
		if parallel {
			name = "parallel"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			db := openReadDB(b)
			defer db.Close()
			read := func(rng *rand.Rand) error {
				first := rng.IntN(benchReadKeys - n + 1)
				res, err := db.ReadTransact(ctx, func(tx udb.ReadTransaction) (any, error) {
					return tx.GetRange(udb.FirstGreaterOrEqual(benchKey("read", first)), udb.FirstGreaterOrEqual(benchKey("read", first+n)), udb.RangeOptions{}).All(ctx)
				})
				if err != nil {
					return err
				}
				if got := len(res.([]udb.KeyValue)); got != n {
					return fmt.Errorf("range read returned %d rows, want %d", got, n)
				}
				return nil
			}
			b.ResetTimer()
			start := time.Now()
			if parallel {
				b.RunParallel(func(pb *testing.PB) {
					rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
					for pb.Next() {
						if err := read(rng); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else {
				rng := rand.New(rand.NewPCG(1, 0))
				for range b.N {
					if err := read(rng); err != nil {
						b.Fatal(err)
					}
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N*n)/elapsed.Seconds(), "keys/s")
		})
	}
}

// BenchmarkDurableWrite: 64 writers each loop Transact { Set 16 keys of its
// own to 256-byte values }, fsync on, over a key space of 1,000 keys a
// writer, so that the store rewrites keys as a pinging fleet does and moves
// enough bytes (4 KiB a commit) to fill and flush memtables.
func BenchmarkDurableWrite(b *testing.B) {
	const writers, perTxn, keysPerWriter = 64, 16, 1000
	ctx := context.Background()
	db, err := udb.Open(ctx, "file://"+b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	value := make([]byte, 256)
	next := make([]int, writers)
	b.SetBytes(perTxn * int64(len(value)))
	runWriters(b, writers, "commits/s", func(w int) error {
		_, err := db.Transact(ctx, func(tx udb.Transaction) (any, error) {
			for i := range perTxn {
				tx.Set(benchKey(fmt.Sprintf("write/%02d", w), (next[w]+i)%keysPerWriter), value)
			}
			return nil, nil
		})
		next[w] += perTxn
		return err
	})
}

// BenchmarkRangeOverRewrittenKey reads a 3-key range whose middle key was
// rewritten 10,000 times (all versions still in the memtable), as a runner's
// record is read while its free-slot count changes with every placement. An
// op is one range read.
func BenchmarkRangeOverRewrittenKey(b *testing.B) {
	ctx := context.Background()
	db, err := udb.Open(ctx, "file://"+b.TempDir()+"?sync=false")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for i := range 10_000 {
		_, err := db.Transact(ctx, func(tx udb.Transaction) (any, error) {
			if i == 0 {
				tx.Set([]byte("r/a"), []byte("a"))
				tx.Set([]byte("r/c"), []byte("c"))
			}
			tx.Set([]byte("r/b"), binary.LittleEndian.AppendUint32(nil, uint32(i)))
			return nil, nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		_, err := db.ReadTransact(ctx, func(tx udb.ReadTransaction) (any, error) {
			kvs, err := tx.GetRange(udb.FirstGreaterOrEqual([]byte("r/")), udb.FirstGreaterOrEqual([]byte("r0")), udb.RangeOptions{}).All(ctx)
			if err == nil && len(kvs) != 3 {
				err = fmt.Errorf("read %d keys, want 3", len(kvs))
			}
			return nil, err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
