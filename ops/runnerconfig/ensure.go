package runnerconfig

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// DefaultNormal is the config a runner name gets when a runner of that name
// registers and the name has none, as in Rivet's EnsureRunnerConfig: no
// version-upgrade drain, evictions unpaced.
func DefaultNormal() keys.RunnerConfig {
	return keys.RunnerConfig{Normal: &keys.NormalRunnerConfig{RunnerConfigCommon: keys.RunnerConfigCommon{
		DrainOnVersionUpgrade: false, ActorEvictionRate: 1,
	}}}
}

// EnsureInput names the pool of a registering runner.
type EnsureInput struct {
	Namespace id.ID
	Name      string
}

// Ensure returns the config of (namespace, name), first writing
// DefaultNormal if the name has none, so that the pool's config exists
// before its first runner is told it is connected. The name is checked as
// by Upsert. A serializable read: a concurrent upsert conflicts.
func Ensure(ctx context.Context, tx udb.Transaction, in EnsureInput) (keys.RunnerConfig, error) {
	cfg, found, err := keys.Get(ctx, tx, keys.RunnerConfigDataKey{Namespace: in.Namespace, Name: in.Name})
	if err != nil {
		return keys.RunnerConfig{}, corrupt.Mark("runner config", err)
	}
	if found {
		return cfg, nil
	}
	cfg = DefaultNormal()
	if _, err := Upsert(ctx, tx, UpsertInput{Namespace: in.Namespace, Name: in.Name, Config: cfg}); err != nil {
		return keys.RunnerConfig{}, err
	}
	return cfg, nil
}
