package runner

import (
	"context"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// GetInput names a runner.
type GetInput struct {
	RunnerID id.ID
	// Datacenter is this datacenter's name, reported in the runner object.
	Datacenter string
}

// Get returns the runner, or runner.not_found.
//
// Snapshot reads: an information read for the API, where a value a few
// milliseconds stale is harmless, and it must not make pings and
// registrations retry. A snapshot still sees a registration whole or not
// at all.
func Get(ctx context.Context, r udb.ReadTransaction, in GetInput) (Runner, error) {
	snap := r.Snapshot()
	out, found, err := startRecord(snap, in.RunnerID).finish(ctx, snap, in.Datacenter, &scratch{})
	if err != nil {
		return Runner{}, err
	}
	if !found {
		return Runner{}, rerr.RunnerNotFound(in.RunnerID.String())
	}
	return out, nil
}
