// Package lease gives a named task to one engine node of a datacenter at a time: a record
// in the store names the holding node and an expiry; the holder renews it, and another node
// takes it once it has expired. The serverless runner-pool scaler and the /metadata poller
// each take one per pool (docs/serverless.md, § 11).
package lease

import (
	"context"
	"errors"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/udb"
)

// Input asks for the lease name on behalf of node Holder at NowMs, for TTLMs.
type Input struct {
	Name   string
	Holder string
	NowMs  int64
	TTLMs  int64
}

// Acquire takes or renews the lease: it is Holder's when nobody holds it, when its
// previous holder let it expire, or when Holder holds it already; the expiry then moves to
// NowMs + TTLMs. It reports whether Holder holds the lease, and the holder it found
// otherwise. The read is serializable: two nodes taking an expired lease at once conflict
// and only one commits.
func Acquire(ctx context.Context, tx udb.Transaction, in Input) (held bool, other keys.Lease, err error) {
	if in.Holder == "" || in.TTLMs <= 0 {
		return false, keys.Lease{}, errors.New("lease: a holder and a positive TTL are required")
	}
	k := keys.LeaseKey{Name: in.Name}
	cur, found, err := keys.Get(ctx, tx, k)
	if err != nil {
		return false, keys.Lease{}, corrupt.Mark("lease", err)
	}
	if found && cur.Holder != in.Holder && cur.ExpiresMs > in.NowMs {
		return false, cur, nil
	}
	keys.Set(tx, k, keys.Lease{ExpiresMs: in.NowMs + in.TTLMs, Holder: in.Holder})
	return true, keys.Lease{}, nil
}

// Release gives the lease up if holder holds it, so that another node may take it at once.
func Release(ctx context.Context, tx udb.Transaction, name, holder string) error {
	k := keys.LeaseKey{Name: name}
	cur, found, err := keys.Get(ctx, tx, k)
	if err != nil {
		return corrupt.Mark("lease", err)
	}
	if found && cur.Holder == holder {
		keys.Clear(tx, k)
	}
	return nil
}
