package keys

import (
	"bytes"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/subspace"
	"github.com/berthhq/berth/pkg/tuple"
	"github.com/berthhq/berth/pkg/udb"
)

// prefixRange returns [prefix+0x00, prefix+0xFF): every key that extends the
// packed prefix by at least one tuple element (every chunk of a chunked
// value, every entry of an index). Both are new slices.
func prefixRange(prefix []byte) (begin, end []byte) {
	begin = append(append(make([]byte, 0, len(prefix)+1), prefix...), 0x00)
	end = append(append(make([]byte, 0, len(prefix)+1), prefix...), 0xff)
	return begin, end
}

// CreateTsRange is the key range of one index whose entries end in
// (create_ts, T): T is the id (runners, actors) or the envoy key that breaks
// ties between entries created in the same millisecond. Entries sort by
// create_ts, then by T; lists scan them in reverse, newest first.
type CreateTsRange[T id.ID | string] struct {
	prefix []byte // packed, subspace included, without create_ts
}

func newCreateTsRange[T id.ID | string](sub subspace.Subspace, t tuple.Tuple) CreateTsRange[T] {
	return CreateTsRange[T]{prefix: sub.Pack(t)}
}

// All returns the range of every entry.
func (r CreateTsRange[T]) All() (begin, end []byte) { return prefixRange(r.prefix) }

// Before returns the range of the entries strictly before (createTs, tie) in
// index order. A reverse scan of it continues a listing after the item
// (createTs, tie): the end key is that item's own key, which the range
// excludes, so every item is returned exactly once even when many share one
// millisecond.
func (r CreateTsRange[T]) Before(createTs int64, tie T) (begin, end []byte) {
	begin, _ = r.All()
	return begin, tuple.Tuple{createTs, any(tie)}.AppendPack(bytes.Clone(r.prefix))
}

// BeforeTs returns the range of the entries created strictly before
// createTs: the bare create_ts cursor of the Rivet engine, kept for
// compatibility. (Paging with it skips the rest of a millisecond that a page
// ended inside; use Before.)
func (r CreateTsRange[T]) BeforeTs(createTs int64) (begin, end []byte) {
	begin, _ = r.All()
	return begin, tuple.Tuple{createTs}.AppendPack(bytes.Clone(r.prefix))
}

// NameRange is the key range of one index whose entries end in a name, in
// name order (byte order of the UTF-8).
type NameRange struct {
	prefix []byte
}

// All returns the range of every entry.
func (r NameRange) All() (begin, end []byte) { return prefixRange(r.prefix) }

// After returns the range of the entries whose name sorts strictly after
// name, for a forward scan continuing after the cursor name.
func (r NameRange) After(name string) (begin, end []byte) {
	_, end = r.All()
	return udb.KeyAfter(tuple.Tuple{name}.AppendPack(bytes.Clone(r.prefix))), end
}
