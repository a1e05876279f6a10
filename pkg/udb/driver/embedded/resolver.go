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
type resolver struct {
	bounds  *btree.BTreeG[bound]
	horizon int64
}

type bound struct {
	key     []byte
	version int64
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
	for _, rg := range ranges {
		if bytes.Compare(rg.Begin, rg.End) >= 0 {
			continue
		}
		after := r.versionAt(rg.End)
		var drop []bound
		r.bounds.Ascend(bound{key: rg.Begin}, func(b bound) bool {
			if bytes.Compare(b.key, rg.End) > 0 {
				return false
			}
			drop = append(drop, b)
			return true
		})
		for _, b := range drop {
			r.bounds.Delete(b)
		}
		r.bounds.Set(bound{key: rg.Begin, version: version})
		r.bounds.Set(bound{key: rg.End, version: after})
	}
}

// forget drops history at or below horizon, merging the boundaries it no
// longer needs.
func (r *resolver) forget(horizon int64) {
	if horizon <= r.horizon {
		return
	}
	r.horizon = horizon
	var drop []bound
	var keepSet []bound
	prevOld := false
	r.bounds.Scan(func(b bound) bool {
		old := b.version <= horizon
		switch {
		case old && prevOld:
			drop = append(drop, b)
		case old && b.version != 0:
			keepSet = append(keepSet, bound{key: b.key, version: 0})
		}
		prevOld = old
		return true
	})
	for _, b := range drop {
		r.bounds.Delete(b)
	}
	for _, b := range keepSet {
		r.bounds.Set(b)
	}
}

// size is the number of boundaries held.
func (r *resolver) size() int { return r.bounds.Len() }
