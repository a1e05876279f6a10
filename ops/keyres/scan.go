package keyres

import (
	"bytes"
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// Entry is a live keyed actor of this datacenter.
type Entry struct {
	Key      Key
	ActorID  id.ID
	CreateTs int64
}

// LiveKeyed returns up to limit live keyed actors of this datacenter's store, every
// namespace, after the cursor from (nil: from the start), and the cursor of the next page
// (nil at the end). It reads at snapshot isolation: the keys of actors created meanwhile are
// reserved by their creates. It skips whole scopes of pegboard's per-namespace keys, so a
// page costs one read per namespace and pool index it passes plus the key index entries.
func LiveKeyed(ctx context.Context, r udb.ReadTransaction, from []byte, limit int) ([]Entry, []byte, error) {
	snap := r.Snapshot()
	begin, end := keys.NamespaceScopesRange()
	if bytes.Compare(from, begin) > 0 {
		begin = from
	}
	var out []Entry
	for len(out) < limit {
		kvs, err := snap.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Limit: 1}).All(ctx)
		if err != nil || len(kvs) == 0 {
			return out, nil, err
		}
		ns, isNS, scopeEnd, err := keys.NamespaceScopeOf(kvs[0].Key)
		if err != nil {
			return out, nil, corrupt.Mark("actor", err)
		}
		if bytes.Compare(scopeEnd, kvs[0].Key) <= 0 { // a non-canonical element: step over it
			scopeEnd = udb.KeyAfter(kvs[0].Key)
		}
		if !isNS {
			begin = scopeEnd
			continue
		}
		idxBegin, idxEnd := keys.ActorByKeyNamespaceRange(ns)
		if bytes.Compare(begin, idxBegin) > 0 {
			idxBegin = begin
		}
		if bytes.Compare(idxBegin, idxEnd) < 0 {
			page, next, err := scanIndex(ctx, snap, idxBegin, idxEnd, limit-len(out))
			out = append(out, page...)
			if err != nil || next != nil {
				return out, next, err
			}
		}
		begin = scopeEnd
	}
	return out, begin, nil
}

// scanIndex reads the live entries of one namespace's key index in [begin, end), at most
// limit, and the key to continue from when it stopped early.
func scanIndex(ctx context.Context, snap udb.ReadTransaction, begin, end []byte, limit int) ([]Entry, []byte, error) {
	var out []Entry
	it := snap.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Mode: udb.StreamingModeIterator})
	for it.Next(ctx) {
		kv := it.KeyValue()
		if len(out) == limit {
			return out, kv.Key, nil
		}
		k, err := keys.UnpackActorByKeyKey(kv.Key)
		if err != nil {
			return out, nil, corrupt.Mark("actor", err)
		}
		v, err := keys.ActorByKeyKey{}.Decode(kv.Value)
		if err != nil {
			return out, nil, corrupt.Mark("actor", err)
		}
		if !v.IsDestroyed {
			out = append(out, Entry{Key: Key{Namespace: k.Namespace, Name: k.Name, Key: k.Key}, ActorID: k.ActorID, CreateTs: k.CreateTs})
		}
	}
	return out, nil, it.Err()
}
