package engine

import (
	"context"

	"github.com/berthhq/berth/engine/samples"
	"github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/udb"
)

// maxSampledHosts bounds the hosts whose slots a sample keeps.
const maxSampledHosts = 200

// EnvoySampleID is how a sample names envoy key of namespace ns (a runner is named by its id).
func EnvoySampleID(ns, key string) string { return ns + "/" + key }

// sampleHosts reads the slots of the live runners and envoys of the first namespaces, at
// most maxSampledHosts, for the inspector's slots-over-time charts.
func (e *Engine) sampleHosts(ctx context.Context) (map[string]samples.Host, error) {
	return udb.ReadTransact(ctx, e.db, func(rt udb.ReadTransaction) (map[string]samples.Host, error) {
		out := map[string]samples.Host{}
		nss, err := namespace.List(ctx, rt, namespace.ListInput{Limit: namespace.MaxListLimit})
		if err != nil {
			return nil, err
		}
		for _, ns := range nss.Namespaces {
			left := maxSampledHosts - len(out)
			if left <= 0 {
				break
			}
			rs, err := runner.ListForNs(ctx, rt, runner.ListForNsInput{Namespace: ns.NamespaceID, Limit: min(left, runner.MaxListLimit)})
			if err != nil {
				return nil, err
			}
			for _, r := range rs.Runners {
				out[r.RunnerID.String()] = samples.Host{Used: int64(r.TotalSlots) - int64(r.RemainingSlots), Total: int64(r.TotalSlots)}
			}
			if left = maxSampledHosts - len(out); left <= 0 {
				break
			}
			es, err := envoy.List(ctx, rt, envoy.ListInput{Namespace: ns.NamespaceID, Limit: min(left, envoy.MaxListLimit)})
			if err != nil {
				return nil, err
			}
			for _, v := range es.Envoys {
				out[EnvoySampleID(ns.NamespaceID.String(), v.EnvoyKey)] = samples.Host{Used: int64(v.Slots)}
			}
		}
		return out, nil
	})
}
