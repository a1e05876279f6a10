package namespace

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// ResolveByNameInput names a namespace by name.
type ResolveByNameInput struct {
	Name string
}

// ResolveByName returns the namespace with that name, or namespace.not_found
// naming it.
//
// Snapshot reads, as for Get: every API call resolves its namespace, and a
// namespace is never renamed or deleted, so staleness can only miss one
// created in the last moments.
func ResolveByName(ctx context.Context, r udb.ReadTransaction, in ResolveByNameInput) (Namespace, error) {
	snap := r.Snapshot()
	nid, found, err := keys.Get(ctx, snap, keys.NamespaceByNameKey{Name: in.Name})
	if err != nil {
		return Namespace{}, corrupt.Mark("namespace", err)
	}
	if !found {
		return Namespace{}, rerr.NamespaceNotFound(in.Name)
	}
	ns, found, err := load(ctx, snap, nid)
	switch {
	case err != nil:
		return Namespace{}, err
	case !found:
		return Namespace{}, rerr.Corrupt("namespace", "name %q points at %s, which has no record", in.Name, nid)
	}
	return ns, nil
}
