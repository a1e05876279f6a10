package envoy

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// ListBelowVersion returns the keys of pool's envoys that can take actors (connected, not
// stopping, not expired) whose version is below version, or all of them when version is
// 0: what a version-upgrade drain, or the deletion of the pool's serverless config, drains.
// A snapshot read of the load-balancer index; Drain checks each envoy again.
func ListBelowVersion(ctx context.Context, r udb.ReadTransaction, ns id.ID, pool string, version uint32) ([]string, error) {
	begin, end := keys.EnvoyLoadBalancerIdxKeyRange(ns, pool)
	kvs, err := r.Snapshot().GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end),
		udb.RangeOptions{Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, kv := range kvs {
		k, err := keys.UnpackEnvoyLoadBalancerIdxKey(kv.Key)
		if err != nil {
			return nil, corrupt.Mark("envoy", err)
		}
		if version == 0 || k.Version < version {
			out = append(out, k.EnvoyKey)
		}
	}
	return out, nil
}
