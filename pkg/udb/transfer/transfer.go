package transfer

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/berthhq/berth/pkg/udb"
)

// Options tune Export and Import. The zero value is ready to use.
type Options struct {
	// Progress, if set, is called after each chunk with the totals so far,
	// and once more at the end. It runs on the calling goroutine.
	Progress func(Stats)
	// Overwrite lets Import write into a database that already holds keys:
	// it clears the database's whole key space first. Without it, Import
	// refuses a non-empty destination. Export ignores it.
	Overwrite bool
	// RequireSnapshot makes Export fail when its read version falls out of
	// the store's MVCC window, instead of going on at a newer read version
	// (see the package documentation on consistency). Import ignores it.
	RequireSnapshot bool
}

// Stats counts what was transferred: keys, and the bytes of their keys and
// values (not the size of the stream).
type Stats struct {
	Keys  int64
	Bytes int64
}

// Chunk sizes; variables so that tests can make them small.
var (
	// exportChunkBytes bounds the keys and values one export transaction
	// reads (and one block holds).
	exportChunkBytes = 1 << 20
	// importTxnBytes bounds the keys and values one import transaction
	// writes: far below FoundationDB's 10 MB limit, and quick to commit.
	importTxnBytes = 1 << 20
)

// keySpaceEnd is the end of the normal key space.
var keySpaceEnd = []byte{0xff}

// Export writes every key and value of db's normal key space to w in the
// format described in the package documentation. On error the stream is
// incomplete (it lacks its trailer), so Import rejects it.
func Export(ctx context.Context, db udb.Database, w io.Writer, opts Options) (Stats, error) {
	tr, err := db.CreateTransaction()
	if err != nil {
		return Stats{}, fmt.Errorf("transfer: export: opening a transaction: %w", err)
	}
	defer tr.Cancel()
	version, err := freshReadVersion(ctx, tr)
	if err != nil {
		return Stats{}, err
	}
	firstVersion := version
	enc, err := newEncoder(w, version)
	if err != nil {
		return Stats{}, err
	}
	stats := func() Stats { return Stats{Keys: enc.keys, Bytes: enc.bytes} }
	cursor := []byte{}
	for cursor != nil {
		if err := ctx.Err(); err != nil {
			return stats(), fmt.Errorf("transfer: export stopped after %d keys: %w", enc.keys, err)
		}
		next, err := exportChunk(ctx, tr, enc, cursor, version)
		if udb.HasCode(err, udb.CodeTransactionTooOld) {
			if opts.RequireSnapshot {
				return stats(), fmt.Errorf("transfer: export: read version %d fell out of the store's MVCC window (about 5 s) after %d keys, "+
					"so the key space cannot be read as one snapshot; stop the writers, or allow a newer read version: %w", firstVersion, enc.keys, err)
			}
			tr.Reset()
			if version, err = freshReadVersion(ctx, tr); err != nil {
				return stats(), err
			}
			continue
		}
		if err != nil {
			return stats(), fmt.Errorf("transfer: export stopped after %d keys: %w", enc.keys, err)
		}
		if err := enc.flush(); err != nil {
			return stats(), err
		}
		if opts.Progress != nil {
			opts.Progress(stats())
		}
		cursor = next
	}
	if err := enc.finish(version); err != nil {
		return stats(), err
	}
	if opts.Progress != nil {
		opts.Progress(stats())
	}
	return stats(), nil
}

// freshReadVersion takes a new read version on tr, retrying what the store
// says may be retried.
func freshReadVersion(ctx context.Context, tr udb.Transaction) (int64, error) {
	for {
		v, err := tr.GetReadVersion(ctx)
		if err == nil {
			return v, nil
		}
		if err := tr.OnError(ctx, err); err != nil {
			return 0, fmt.Errorf("transfer: taking a read version: %w", err)
		}
	}
}

// exportChunk reads keys from cursor on, at version, into enc's current
// block until it holds exportChunkBytes. It returns where the next chunk
// starts, nil at the end of the key space. On transaction_too_old it returns
// that error with the block emptied, for the caller to choose a newer
// version; other retryable errors are retried here.
func exportChunk(ctx context.Context, tr udb.Transaction, enc *encoder, cursor []byte, version int64) ([]byte, error) {
	start := enc.mark()
	for {
		tr.Reset()
		tr.SetReadVersion(version)
		next, err := readChunk(ctx, tr, enc, cursor)
		if err == nil {
			return next, nil
		}
		// Drop what this attempt added; the retry reads it again.
		enc.rewind(start)
		if udb.HasCode(err, udb.CodeTransactionTooOld) {
			return nil, err
		}
		if err := tr.OnError(ctx, err); err != nil {
			return nil, err
		}
	}
}

func readChunk(ctx context.Context, tr udb.Transaction, enc *encoder, cursor []byte) ([]byte, error) {
	// Snapshot reads: the transaction is never committed, so read conflict
	// ranges would only cost memory.
	it := tr.Snapshot().GetRange(udb.FirstGreaterOrEqual(cursor), udb.FirstGreaterOrEqual(keySpaceEnd), udb.RangeOptions{})
	n := 0
	for it.Next(ctx) {
		kv := it.KeyValue()
		enc.add(kv.Key, kv.Value)
		n += len(kv.Key) + len(kv.Value)
		if n >= exportChunkBytes {
			return udb.KeyAfter(kv.Key), nil
		}
	}
	return nil, it.Err()
}

// mark is the state of an encoder's current block, to rewind to.
type mark struct {
	blockLen, records int
	keys, bytes       int64
}

func (e *encoder) mark() mark { return mark{len(e.block), e.records, e.keys, e.bytes} }

// rewind drops the records added since m.
func (e *encoder) rewind(m mark) {
	e.block, e.records, e.keys, e.bytes = e.block[:m.blockLen], m.records, m.keys, m.bytes
}

// Import loads a stream written by Export into db. It refuses a database
// that holds any key unless opts.Overwrite is set. If the stream is
// truncated or corrupt, or writing fails, Import clears what it wrote before
// returning the error, so the destination is left empty.
func Import(ctx context.Context, db udb.Database, r io.Reader, opts Options) (Stats, error) {
	dec := newDecoder(r)
	if err := dec.header(); err != nil {
		return Stats{}, fmt.Errorf("transfer: import: %w", err)
	}
	if err := prepareDestination(ctx, db, opts.Overwrite); err != nil {
		return Stats{}, err
	}
	var stats Stats
	var pending []udb.KeyValue
	pendingBytes := 0
	wrote := false
	fail := func(err error) (Stats, error) {
		err = fmt.Errorf("transfer: import stopped after %d keys: %w", stats.Keys, err)
		if !wrote {
			return stats, err
		}
		if cerr := clearKeySpace(context.WithoutCancel(ctx), db); cerr != nil {
			return stats, fmt.Errorf("%w; clearing the %d keys already written also failed, so the destination holds part of the stream: clear it before importing again: %v",
				err, stats.Keys, cerr)
		}
		return stats, fmt.Errorf("%w (the %d keys already written were cleared; the destination is empty)", err, stats.Keys)
	}
	commit := func() error {
		for len(pending) > 0 {
			// One transaction for at most importTxnBytes (and at least one
			// record, which is always under the limits).
			n, size := 0, 0
			for n < len(pending) && (n == 0 || size+len(pending[n].Key)+len(pending[n].Value) <= importTxnBytes) {
				size += len(pending[n].Key) + len(pending[n].Value)
				n++
			}
			batch := pending[:n]
			wrote = true
			if _, err := db.Transact(ctx, func(tx udb.Transaction) (any, error) {
				for _, kv := range batch {
					tx.Set(kv.Key, kv.Value)
				}
				return nil, nil
			}); err != nil {
				return fmt.Errorf("writing keys %q to %q: %w", batch[0].Key, batch[n-1].Key, err)
			}
			stats.Keys += int64(n)
			stats.Bytes += int64(size)
			pending = pending[n:]
			if opts.Progress != nil {
				opts.Progress(stats)
			}
		}
		pending, pendingBytes = nil, 0
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		recs, end, err := dec.next()
		if err != nil {
			return fail(err)
		}
		if end {
			break
		}
		for _, kv := range recs {
			pending = append(pending, kv)
			pendingBytes += len(kv.Key) + len(kv.Value)
		}
		if pendingBytes >= importTxnBytes {
			if err := commit(); err != nil {
				return fail(err)
			}
		}
	}
	if err := commit(); err != nil {
		return fail(err)
	}
	if opts.Progress != nil {
		opts.Progress(stats)
	}
	return stats, nil
}

// prepareDestination refuses a non-empty db, or clears it with overwrite.
func prepareDestination(ctx context.Context, db udb.Database, overwrite bool) error {
	if overwrite {
		if err := clearKeySpace(ctx, db); err != nil {
			return fmt.Errorf("transfer: import: clearing the destination (Overwrite): %w", err)
		}
		return nil
	}
	first, err := db.ReadTransact(ctx, func(tr udb.ReadTransaction) (any, error) {
		kvs, err := tr.Snapshot().GetRange(udb.FirstGreaterOrEqual(nil), udb.FirstGreaterOrEqual(keySpaceEnd), udb.RangeOptions{Limit: 1}).All(ctx)
		if err != nil || len(kvs) == 0 {
			return nil, err
		}
		return kvs[0].Key, nil
	})
	if err != nil {
		return fmt.Errorf("transfer: import: checking that the destination is empty: %w", err)
	}
	if first != nil {
		return fmt.Errorf("transfer: import: the destination is not empty (it holds key %q, among others); import into an empty store, or set Overwrite to replace its contents", first)
	}
	return nil
}

// clearKeySpace removes every key of db's normal key space.
func clearKeySpace(ctx context.Context, db udb.Database) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err := db.Transact(ctx, func(tx udb.Transaction) (any, error) {
		tx.ClearRange(nil, keySpaceEnd)
		return nil, nil
	})
	return err
}
