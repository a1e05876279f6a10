package embedded

import (
	"bytes"

	"github.com/berthhq/berth/pkg/udb/internal/txn"
	"github.com/tidwall/btree"
)

// resolver decides commits with FoundationDB's rule: a transaction conflicts
// when a range it read serializably was written by a transaction that
// committed after its read version. It keeps, for every key, the version of
// the last commit that wrote it, as a step function: each boundary says that
// keys from it up to the next boundary were last written at that version.
// Versions at or below the horizon have been forgotten and read as 0; the
// caller rejects read versions below the horizon as too old.
//
// Forgetting only saves memory: a boundary whose version is at or below the
// horizon can never be newer than an accepted read version, whether it reads
// as 0 or not. So forget visits only the boundaries set by the writes that
// left the window, which touched records per write version, and costs in
// proportion to the writes, not to the whole tree (it runs on the committer,
// once per commit group).
type resolver struct {
	bounds  *btree.BTreeG[bound]
	horizon int64

	// touched holds, oldest first from head, the keys at which each write
	// version set a boundary, while that version is above the horizon.
	touched []touchedKeys
	head    int

	it      btree.IterG[bound] // reused by expire
	scratch []bound            // reused for boundaries to delete
}

type bound struct {
	key     []byte
	version int64
}

// touchedKeys are the keys at which the writes of one version set boundaries.
type touchedKeys struct {
	version int64
	keys    [][]byte
}

func newResolver() *resolver {
	r := &resolver{bounds: btree.NewBTreeGOptions(func(a, b bound) bool {
		return bytes.Compare(a.key, b.key) < 0
	}, btree.Options{NoLocks: true})}
	r.bounds.Set(bound{key: []byte{}, version: 0})
	return r
}

// versionAt is the last write version of key.
func (r *resolver) versionAt(key []byte) int64 {
	v := int64(0)
	r.bounds.Descend(bound{key: key}, func(b bound) bool {
		v = b.version
		return false
	})
	return v
}

// conflicts reports whether any of ranges was written after readVersion.
func (r *resolver) conflicts(readVersion int64, ranges []txn.KeyRange) bool {
	for _, rg := range ranges {
		if bytes.Compare(rg.Begin, rg.End) >= 0 {
			continue
		}
		if r.versionAt(rg.Begin) > readVersion {
			return true
		}
		hit := false
		r.bounds.Ascend(bound{key: rg.Begin}, func(b bound) bool {
			if bytes.Compare(b.key, rg.End) >= 0 {
				return false
			}
			if b.version > readVersion {
				hit = true
				return false
			}
			return true
		})
		if hit {
			return true
		}
	}
	return false
}

// write records that ranges were written at version, which must be newer
// than every version recorded before.
func (r *resolver) write(version int64, ranges []txn.KeyRange) {
	var touched *touchedKeys
	for _, rg := range ranges {
		if bytes.Compare(rg.Begin, rg.End) >= 0 {
			continue
		}
		// One pass over the boundaries in [Begin, End]: those strictly inside
		// go; one at Begin is replaced; one at End stays, and its version is
		// what End keeps. after is the version of the last boundary at or
		// before End, that is, what the keys from End on were written at.
		after, atEnd := int64(-1), false
		drop := r.scratch[:0]
		r.bounds.Ascend(bound{key: rg.Begin}, func(b bound) bool {
			c := bytes.Compare(b.key, rg.End)
			if c > 0 {
				return false
			}
			after = b.version
			if c == 0 {
				atEnd = true
				return false
			}
			if !bytes.Equal(b.key, rg.Begin) {
				drop = append(drop, b)
			}
			return true
		})
		if after < 0 {
			after = r.versionAt(rg.Begin) // no boundary in [Begin, End]
		}
		for _, b := range drop {
			r.bounds.Delete(b)
		}
		clear(drop)
		r.scratch = drop[:0]
		r.bounds.Set(bound{key: rg.Begin, version: version})
		if !atEnd {
			r.bounds.Set(bound{key: rg.End, version: after})
		}
		if touched == nil {
			touched = r.touchedAt(version)
		}
		touched.keys = append(touched.keys, rg.Begin, rg.End)
	}
}

// touchedAt is the record of the keys written at version, the newest.
func (r *resolver) touchedAt(version int64) *touchedKeys {
	if n := len(r.touched); n > r.head && r.touched[n-1].version == version {
		return &r.touched[n-1]
	}
	r.touched = append(r.touched, touchedKeys{version: version})
	return &r.touched[len(r.touched)-1]
}

// forget drops history at or below horizon, merging the boundaries it no
// longer needs. It visits the keys written at versions that left the
// window: each boundary there that is now old reads 0, or goes when the
// boundary before it is old too. A boundary set after horizon that kept an
// old version (the end of a written range) is merged when its own write
// leaves the window; until then it costs memory, never a false conflict.
func (r *resolver) forget(horizon int64) {
	if horizon <= r.horizon {
		return
	}
	r.horizon = horizon
	for r.head < len(r.touched) && r.touched[r.head].version <= horizon {
		for _, k := range r.touched[r.head].keys {
			r.expire(k, horizon)
		}
		r.touched[r.head] = touchedKeys{}
		r.head++
	}
	// Reuse the queue's space once its live part is at most half of it.
	if r.head > 0 && r.head >= len(r.touched)/2 {
		n := copy(r.touched, r.touched[r.head:])
		clear(r.touched[n:])
		r.touched, r.head = r.touched[:n], 0
	}
}

// expire forgets the boundary at key if its version is at or below horizon:
// it reads 0, or goes if the boundary before it is also old, and any old
// boundaries right after it go, since the old one before them covers them.
func (r *resolver) expire(key []byte, horizon int64) {
	it := &r.it
	it.Init(r.bounds, false)
	defer it.Release()
	if !it.Seek(bound{key: key}) || !bytes.Equal(it.Item().key, key) {
		return // gone
	}
	b := it.Item()
	if b.version > horizon {
		return // set again since
	}
	drop := r.scratch[:0]
	for it.Next() && it.Item().version <= horizon {
		drop = append(drop, it.Item())
	}
	it.Seek(b)
	prevOld := it.Prev() && it.Item().version <= horizon
	switch {
	case prevOld:
		r.bounds.Delete(b)
	case b.version != 0:
		r.bounds.Set(bound{key: b.key, version: 0})
	}
	for _, n := range drop {
		r.bounds.Delete(n)
	}
	clear(drop)
	r.scratch = drop[:0]
}

// size is the number of boundaries held.
func (r *resolver) size() int { return r.bounds.Len() }
