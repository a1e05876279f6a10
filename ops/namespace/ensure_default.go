package namespace

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// The namespace every engine has from its first start, as in Rivet's
// bootstrap.
const (
	DefaultName        = "default"
	DefaultDisplayName = "Default"
)

// EnsureDefaultInput is what EnsureDefault needs if it has to create the
// namespace.
type EnsureDefaultInput struct {
	// NamespaceID is used only if the namespace is created (see CreateInput).
	NamespaceID id.ID
	NowMs       int64
}

// EnsureDefaultOutput is the default namespace.
type EnsureDefaultOutput struct {
	Namespace Namespace
	// Created is true when this call created it.
	Created bool
}

// EnsureDefault returns the "default" namespace, creating it if absent. It
// is idempotent: once the namespace exists, it writes nothing.
//
// Serializable read of the by-name key, so two engines starting at once
// create it once: the second retries and finds the first's.
func EnsureDefault(ctx context.Context, tx udb.Transaction, in EnsureDefaultInput) (EnsureDefaultOutput, error) {
	nid, found, err := keys.Get(ctx, tx, keys.NamespaceByNameKey{Name: DefaultName})
	if err != nil {
		return EnsureDefaultOutput{}, corrupt.Mark("namespace", err)
	}
	if found {
		ns, ok, err := load(ctx, tx, nid)
		switch {
		case err != nil:
			return EnsureDefaultOutput{}, err
		case !ok:
			return EnsureDefaultOutput{}, rerr.Corrupt("namespace", "name %q points at %s, which has no record", DefaultName, nid)
		}
		return EnsureDefaultOutput{Namespace: ns}, nil
	}
	ns, err := Create(ctx, tx, CreateInput{NamespaceID: in.NamespaceID, Name: DefaultName, DisplayName: DefaultDisplayName, NowMs: in.NowMs})
	if err != nil {
		return EnsureDefaultOutput{}, err
	}
	return EnsureDefaultOutput{Namespace: ns, Created: true}, nil
}
