package record

import (
	"context"

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
	v, found, err := keys.Get(rd.ctx, rd.r, k)
	if err != nil {
		rd.err = err
	}
	return v, found
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
	v, found, err := keys.GetChunked(rd.ctx, rd.r, k)
	if err != nil {
		rd.err = err
	}
	return v, found
}

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
