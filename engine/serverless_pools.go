package engine

import (
	"context"

	"github.com/berthhq/berth/engine/serverless"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
)

// scaledPools is the serverless service api-peer's runner-config handlers use: a config
// write also wakes the runner-pool scaler, so that a new pool's min_runners are started at
// once rather than at its next scan.
type scaledPools struct {
	*serverless.Service
	scaler *serverless.Scaler
}

func (p scaledPools) Written(ctx context.Context, ns id.ID, name string, cfg keys.RunnerConfig) {
	p.Service.Written(ctx, ns, name, cfg)
	p.scaler.Wake()
}
