package runnerconfig

import (
	"context"
	"encoding/json"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// SuccessesToClearError is how many consecutive successes clear a pool's error, as on
// the reference (docs/serverless.md § 6).
const SuccessesToClearError = 3

// SetPoolError records err, a runner_pool_error value, as pool (ns, name)'s error: it
// replaces the previous one and restarts the count of successes.
func SetPoolError(tx udb.Transaction, ns id.ID, name string, err json.RawMessage) {
	keys.Set(tx, keys.RunnerPoolErrorKey{Namespace: ns, Name: name}, keys.PoolError{Error: err})
}

// PoolSuccess counts a success of pool (ns, name) (a serverless host that connected);
// the third in a row clears its error. A pool without an error is left alone.
func PoolSuccess(ctx context.Context, tx udb.Transaction, ns id.ID, name string) error {
	k := keys.RunnerPoolErrorKey{Namespace: ns, Name: name}
	pe, found, err := keys.Get(ctx, tx, k)
	if err != nil || !found {
		return corrupt.Mark("runner pool", err)
	}
	if pe.Successes+1 >= SuccessesToClearError {
		keys.Clear(tx, k)
		return nil
	}
	pe.Successes++
	keys.Set(tx, k, pe)
	return nil
}

// withPoolErrors fills in the pool error of each entry.
func withPoolErrors(ctx context.Context, r udb.ReadTransaction, ns id.ID, es []Entry) error {
	for i := range es {
		pe, found, err := keys.Get(ctx, r, keys.RunnerPoolErrorKey{Namespace: ns, Name: es[i].Name})
		if err != nil {
			return corrupt.Mark("runner pool", err)
		}
		if found {
			es[i].PoolError = pe.Error
		}
	}
	return nil
}
