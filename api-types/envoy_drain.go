package apitypes

import "github.com/berthhq/berth/ops/envoy"

// EnvoysDrainQuery is the query of POST /envoys/{envoy_key}/drain (a berth extension).
type EnvoysDrainQuery struct {
	Namespace string `query:"namespace,required"`
}

// EnvoysDrainResponse is the body of POST /envoys/{envoy_key}/drain: the envoy as the
// drain left it (stop_ts set).
type EnvoysDrainResponse struct {
	Envoy envoy.Envoy `json:"envoy"`
}
