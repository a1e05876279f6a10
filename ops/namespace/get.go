package namespace

import (
	"context"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// GetInput names a namespace by id.
type GetInput struct {
	NamespaceID id.ID
}

// Get returns the namespace, or namespace.not_found.
//
// Snapshot reads: this is an information read for the API, where a value a
// few milliseconds stale is harmless, and it must not make writers retry.
// A namespace is written in one transaction, so a snapshot sees all of it or
// none.
func Get(ctx context.Context, r udb.ReadTransaction, in GetInput) (Namespace, error) {
	ns, found, err := load(ctx, r.Snapshot(), in.NamespaceID)
	if err != nil {
		return Namespace{}, err
	}
	if !found {
		return Namespace{}, rerr.NamespaceNotFound(in.NamespaceID.String())
	}
	return ns, nil
}
