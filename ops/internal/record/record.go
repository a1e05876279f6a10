package record

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Reader reads fields through one read view (tx for serializable reads,
// tx.Snapshot() for snapshot reads). After the first error every read
// returns the zero value; Err reports it.
type Reader struct {
	ctx     context.Context
	r       udb.ReadTransaction
	what    string // the record, for errors: "runner 0a1b…"
	err     error
	missing string
	fetched []span // ranges read by Prefetch
}

// span is one prefetched range and its rows, in key order.
type span struct {
	begin, end []byte
	it         udb.RangeIterator // until the rows are read
	rows       []udb.KeyValue
}

// covers reports whether key lies in the span.
func (s *span) covers(key []byte) bool {
	return bytes.Compare(key, s.begin) >= 0 && bytes.Compare(key, s.end) < 0
}

// Prefetch reads each range; later reads of keys inside a prefetched range
// are served from its rows, reads of other keys go to the store as before.
// A record whose fields sit in a few contiguous ranges is then read in a
// few range reads instead of one per field, and the store is asked for all
// of them together (udb.ReadTransaction.Prefetch): one round trip.
//
// The ranges are read through the Reader's view: with a snapshot view they
// add no read conflicts. Through a serializable view the whole range
// becomes a read conflict, so prefetch only what the op would read anyway.
func (rd *Reader) Prefetch(ranges ...udb.KeyRange) {
	rd.r.Prefetch(rd.ctx, nil, ranges)
	for _, rg := range ranges {
		it := rd.r.GetRange(udb.FirstGreaterOrEqual(rg.Begin), udb.FirstGreaterOrEqual(rg.End),
			udb.RangeOptions{Mode: udb.StreamingModeWantAll})
		rd.fetched = append(rd.fetched, span{begin: rg.Begin, end: rg.End, it: it})
	}
}

// prefetched returns the span covering key, its rows read, or nil.
func (rd *Reader) prefetched(key []byte) *span {
	for i := range rd.fetched {
		s := &rd.fetched[i]
		if !s.covers(key) {
			continue
		}
		if s.it != nil {
			rows, err := s.it.All(rd.ctx)
			if err != nil {
				rd.err = err
				return nil
			}
			s.rows, s.it = rows, nil
		}
		return s
	}
	return nil
}

// value reads key's value: nil when absent.
func (rd *Reader) value(key []byte) ([]byte, error) {
	s := rd.prefetched(key)
	if rd.err != nil {
		return nil, rd.err
	}
	if s == nil {
		return rd.r.Get(rd.ctx, key)
	}
	i, found := slices.BinarySearchFunc(s.rows, key, func(kv udb.KeyValue, k []byte) int { return bytes.Compare(kv.Key, k) })
	if !found {
		return nil, nil
	}
	return s.rows[i].Value, nil
}

// NewReader reads the record named what through r.
func NewReader(ctx context.Context, r udb.ReadTransaction, what string) *Reader {
	return &Reader{ctx: ctx, r: r, what: what}
}

// Opt reads a field that may be absent.
func Opt[V any](rd *Reader, k keys.Key[V]) (v V, found bool) {
	if rd.err != nil {
		return v, false
	}
	key := k.Pack()
	b, err := rd.value(key)
	if err != nil || b == nil {
		rd.err = err
		return v, false
	}
	if v, err = k.Decode(b); err != nil {
		rd.err = fmt.Errorf("%w (key %x)", err, key)
		var zero V
		return zero, false
	}
	return v, true
}

// Must reads a field every record has; its absence is reported by Err.
func Must[V any](rd *Reader, k keys.Key[V], field string) V {
	v, found := Opt(rd, k)
	if rd.err == nil && !found && rd.missing == "" {
		rd.missing = field
	}
	return v
}

// Ptr reads an optional int64 field (a timestamp), nil when absent.
func Ptr(rd *Reader, k keys.Key[int64]) *int64 {
	v, found := Opt(rd, k)
	if !found {
		return nil
	}
	return &v
}

// Has reports whether a field is present.
func Has[V any](rd *Reader, k keys.Key[V]) bool {
	_, found := Opt(rd, k)
	return found
}

// Chunked reads a chunked field that may be absent.
func Chunked[V any](rd *Reader, k keys.ChunkedKey[V]) (v V, found bool) {
	if rd.err != nil {
		return v, false
	}
	base := k.Pack()
	s := rd.prefetched(base)
	if rd.err != nil {
		return v, false
	}
	if s == nil || !s.covers(k.ChunkKey(maxChunkIndex)) {
		v, found, err := keys.GetChunked(rd.ctx, rd.r, k)
		if err != nil {
			rd.err = err
		}
		return v, found
	}
	// The rows of the chunks: every row that extends base, in order. They
	// must be chunks 0, 1, 2, ... as SetChunked writes them.
	lo, _ := slices.BinarySearchFunc(s.rows, base, func(kv udb.KeyValue, k []byte) int { return bytes.Compare(kv.Key, k) })
	var buf []byte
	n := 0
	for _, kv := range s.rows[lo:] {
		if !bytes.HasPrefix(kv.Key, base) {
			break
		}
		if len(kv.Key) == len(base) {
			continue // base itself is not a chunk
		}
		if want := k.ChunkKey(n); !bytes.Equal(kv.Key, want) {
			rd.err = fmt.Errorf("%w: %T %x: row %d has key %x, want chunk %d", keys.ErrBadValue, k, base, n, kv.Key, n)
			return v, false
		}
		buf = append(buf, kv.Value...)
		n++
	}
	if n == 0 {
		return v, false
	}
	v, err := k.Decode(buf)
	if err != nil {
		rd.err = fmt.Errorf("%w (key %x)", err, base)
		var zero V
		return zero, false
	}
	return v, true
}

// maxChunkIndex is a chunk number past any stored one: a prefetched range
// that covers it and the base key covers every chunk.
const maxChunkIndex = udb.MaxTxnSize / keys.ChunkSize

// Err is the first read error (store.corrupt for stored bytes that do not
// decode; udb errors unchanged, for the retry loop), else store.corrupt if
// a required field was missing, else nil.
func (rd *Reader) Err() error {
	switch {
	case rd.err != nil:
		return corrupt.Mark(rd.what, rd.err)
	case rd.missing != "":
		return rerr.Corrupt(rd.what, "the record has no %s", rd.missing)
	}
	return nil
}
