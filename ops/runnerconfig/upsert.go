package runnerconfig

import (
	"context"
	"errors"
	"maps"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// UpsertInput is the config of one runner name in this datacenter.
type UpsertInput struct {
	Namespace id.ID
	Name      string
	// Config is the config to store, every field set (ParseRequest fills the
	// API's defaults).
	Config keys.RunnerConfig
	// ActorStopThresholdMs is the engine's actor_stop_threshold, which
	// bounds a serverless drain_grace_period; 0 means
	// DefaultActorStopThresholdMs.
	ActorStopThresholdMs int64
}

// UpsertOutput says what the write changed.
type UpsertOutput struct {
	// EndpointConfigChanged is false only when a serverless config replaced
	// a serverless config with the same url and headers, as in Rivet: the
	// pool's runners need not be restarted.
	EndpointConfigChanged bool
	// Created is true when the name had no config.
	Created bool
}

// Upsert writes the config of (namespace, name): the data key and its copy
// under the config's variant, clearing the copy under the other variant (a
// config may change variant). The protocol version, if any, is kept.
//
// The name is checked (CheckName, field "runner_name") and the config
// validated (Validate); nothing is written on failure. The old config is
// read serializably: a concurrent upsert or delete of the same name
// conflicts, so endpoint_config_changed is computed against the config this
// write replaces. An old config that does not decode is store.corrupt;
// Delete, which does not decode, clears it.
func Upsert(ctx context.Context, tx udb.Transaction, in UpsertInput) (UpsertOutput, error) {
	if in.Namespace.IsZero() {
		return UpsertOutput{}, rerr.Internal(errors.New("runnerconfig.Upsert: zero namespace id"))
	}
	if err := CheckName("runner_name", in.Name); err != nil {
		return UpsertOutput{}, err
	}
	if err := Validate(in.Config, "", in.ActorStopThresholdMs); err != nil {
		return UpsertOutput{}, err
	}
	data := keys.RunnerConfigDataKey{Namespace: in.Namespace, Name: in.Name}
	old, found, err := keys.Get(ctx, tx, data) // serializable: see above
	if err != nil {
		return UpsertOutput{}, corrupt.Mark("runner config", err)
	}
	variant := in.Config.Variant()
	for _, v := range keys.RunnerConfigVariants {
		if v != variant {
			keys.Clear(tx, keys.RunnerConfigByVariantKey{Namespace: in.Namespace, Variant: v, Name: in.Name})
		}
	}
	keys.Set(tx, data, in.Config)
	keys.Set(tx, keys.RunnerConfigByVariantKey{Namespace: in.Namespace, Variant: variant, Name: in.Name}, in.Config)
	return UpsertOutput{EndpointConfigChanged: !found || endpointChanged(old, in.Config), Created: !found}, nil
}

// endpointChanged is Rivet's rule: only serverless → serverless with the same
// url and headers leaves the endpoint unchanged.
func endpointChanged(old, cur keys.RunnerConfig) bool {
	if old.Serverless == nil || cur.Serverless == nil {
		return true
	}
	return old.Serverless.URL != cur.Serverless.URL || !maps.Equal(old.Serverless.Headers, cur.Serverless.Headers)
}
