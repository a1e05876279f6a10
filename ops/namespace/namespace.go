package namespace

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Namespace is the public namespace object, with Rivet's JSON field names.
type Namespace struct {
	NamespaceID id.ID  `json:"namespace_id"`
	Name        string `json:"name"`
	DisplayName string `json:"display_name"`
	CreateTs    int64  `json:"create_ts"`
}

// load reads namespace nid through r (the caller picks the isolation).
// found is false when it does not exist. Stored bytes that do not decode are
// store.corrupt.
func load(ctx context.Context, r udb.ReadTransaction, nid id.ID) (ns Namespace, found bool, err error) {
	name, found, err := keys.Get(ctx, r, keys.NamespaceNameKey{NamespaceID: nid})
	if err != nil || !found {
		return Namespace{}, false, corrupt.Mark("namespace", err)
	}
	display, _, err := keys.Get(ctx, r, keys.NamespaceDisplayNameKey{NamespaceID: nid})
	if err != nil {
		return Namespace{}, false, corrupt.Mark("namespace", err)
	}
	createTs, ok, err := keys.Get(ctx, r, keys.NamespaceCreateTsKey{NamespaceID: nid})
	switch {
	case err != nil:
		return Namespace{}, false, corrupt.Mark("namespace", err)
	case !ok:
		return Namespace{}, false, rerr.Corrupt("namespace", "%s has a name but no create_ts", nid)
	}
	return Namespace{NamespaceID: nid, Name: name, DisplayName: display, CreateTs: createTs}, true, nil
}
