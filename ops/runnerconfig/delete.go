package runnerconfig

import (
	"context"
	"errors"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// DeleteInput names the config to delete.
type DeleteInput struct {
	Namespace id.ID
	Name      string
}

// DeleteOutput says whether there was a config.
type DeleteOutput struct {
	Existed bool
}

// Delete removes the config of (namespace, name): the data key and the
// by-variant copies of both variants. Deleting a name without config is not
// an error (the API answers {} either way, as Rivet does). The stored value
// is not decoded, so Delete also clears a corrupt config. The protocol
// version is kept, as in Rivet: it describes the pool's envoys, which may
// still be connected, and a config written again for the pool should find
// it.
//
// The existence read is serializable, so Existed is exact: a concurrent
// upsert of the name makes one of the two retry.
func Delete(ctx context.Context, tx udb.Transaction, in DeleteInput) (DeleteOutput, error) {
	if in.Namespace.IsZero() {
		return DeleteOutput{}, rerr.Internal(errors.New("runnerconfig.Delete: zero namespace id"))
	}
	if err := CheckName("runner_name", in.Name); err != nil {
		return DeleteOutput{}, err
	}
	data := keys.RunnerConfigDataKey{Namespace: in.Namespace, Name: in.Name}
	b, err := tx.Get(ctx, data.Pack())
	if err != nil {
		return DeleteOutput{}, err
	}
	keys.Clear(tx, data)
	for _, v := range keys.RunnerConfigVariants {
		keys.Clear(tx, keys.RunnerConfigByVariantKey{Namespace: in.Namespace, Variant: v, Name: in.Name})
	}
	return DeleteOutput{Existed: b != nil}, nil
}
