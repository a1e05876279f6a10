package actorkv

import (
	"context"
	"math"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// ListQuery selects the keys of a list: ListAll, ListRange or ListPrefix.
type ListQuery interface {
	// rows returns the key range of the query's rows, after checking its keys' sizes.
	rows(aid id.ID) (begin, end []byte, err error)
}

// ListAll selects every key.
type ListAll struct{}

// ListRange selects the keys from Start to End in byte order: Start is always included, End
// only when Exclusive is false (Rivet's KvListRangeQuery). Start after End selects nothing.
type ListRange struct {
	Start, End []byte
	Exclusive  bool
}

// ListPrefix selects the keys that start with Prefix (every key for an empty one), including
// keys whose next byte is 0xFF, which the Rivet engine's prefix query misses.
type ListPrefix struct{ Prefix []byte }

func (ListAll) rows(aid id.ID) ([]byte, []byte, error) {
	b, e := keys.ActorKVEntriesRange(aid)
	return b, e, nil
}

func (q ListRange) rows(aid id.ID) ([]byte, []byte, error) {
	if err := checkRange(q.Start, q.End); err != nil {
		return nil, nil, err
	}
	b, e := keys.ActorKVBetween(aid, q.Start, q.End, !q.Exclusive)
	return b, e, nil
}

func (q ListPrefix) rows(aid id.ID) ([]byte, []byte, error) {
	if keySize(q.Prefix) > MaxKeySize {
		return nil, nil, errKeyTooLong("prefix key")
	}
	b, e := keys.ActorKVPrefixRange(aid, q.Prefix)
	return b, e, nil
}

func checkRange(start, end []byte) error {
	if keySize(start) > MaxKeySize {
		return errKeyTooLong("start key")
	}
	if keySize(end) > MaxKeySize {
		return errKeyTooLong("end key")
	}
	return nil
}

// ListInput is a list request.
type ListInput struct {
	ActorID id.ID
	Query   ListQuery // nil lists every key
	Reverse bool      // descending key order
	Limit   *uint64   // at most this many entries; nil means DefaultListLimit
}

// List returns the entries the query selects in key order (descending when Reverse), at most
// Limit of them; a limit of 0 returns none.
func List(ctx context.Context, r udb.ReadTransaction, in ListInput) ([]Entry, error) {
	q := in.Query
	if q == nil {
		q = ListAll{}
	}
	begin, end, err := q.rows(in.ActorID)
	if err != nil {
		return nil, err
	}
	limit := DefaultListLimit
	if in.Limit != nil {
		limit = int(min(*in.Limit, math.MaxInt32))
	}
	if limit == 0 || string(begin) >= string(end) {
		return []Entry{}, nil
	}
	var out []Entry
	b := builder{aid: in.ActorID}
	it := r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Reverse: in.Reverse})
	for it.Next(ctx) {
		e, ok, err := b.add(it.KeyValue())
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, e)
			if len(out) == limit {
				return out, nil
			}
		}
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	e, ok, err := b.flush()
	if err != nil {
		return nil, err
	}
	if ok {
		out = append(out, e)
	}
	if out == nil {
		out = []Entry{}
	}
	return out, nil
}

// ListPrefixAfter selects the keys that start with Prefix and sort after After (every
// such key for an empty After): the pages of a prefix search whose last key was After.
type ListPrefixAfter struct{ Prefix, After []byte }

func (q ListPrefixAfter) rows(aid id.ID) ([]byte, []byte, error) {
	if keySize(q.Prefix) > MaxKeySize {
		return nil, nil, errKeyTooLong("prefix key")
	}
	if keySize(q.After) > MaxKeySize {
		return nil, nil, errKeyTooLong("after key")
	}
	b, e := keys.ActorKVPrefixRange(aid, q.Prefix)
	if len(q.After) > 0 {
		if _, past := keys.ActorKVKeyRange(aid, q.After); string(past) > string(b) {
			b = past
		}
	}
	return b, e, nil
}
