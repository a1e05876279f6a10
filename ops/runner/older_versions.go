package runner

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// ListOlderVersions returns the connected, eligible runners of (namespace,
// name) whose version is below version: what a version-upgrade drain
// drains (Rivet's DrainOlderVersions reads the same allocation index). A
// snapshot read; Drain checks each runner again.
func ListOlderVersions(ctx context.Context, r udb.ReadTransaction, ns id.ID, name string, version uint32) ([]id.ID, error) {
	begin, end := keys.RunnerAllocIdxOlderRange(ns, name, version)
	kvs, err := r.Snapshot().GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end),
		udb.RangeOptions{Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]id.ID, 0, len(kvs))
	for _, kv := range kvs {
		k, err := keys.UnpackRunnerAllocIdxKey(kv.Key)
		if err != nil {
			return nil, corrupt.Mark("runner", err)
		}
		out = append(out, k.RunnerID)
	}
	return out, nil
}
