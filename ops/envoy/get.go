package envoy

import (
	"context"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// GetInput names an envoy.
type GetInput struct {
	Namespace id.ID
	EnvoyKey  string
	// Datacenter is this datacenter's name, reported in the envoy object.
	Datacenter string
}

// Get returns the envoy, expired or not, or envoy.not_found if the key was
// never registered in the namespace. Missing ping fields read as 0.
//
// Snapshot reads: an information read for the API, where a value a few
// milliseconds stale is harmless, and it must not make pings retry.
func Get(ctx context.Context, r udb.ReadTransaction, in GetInput) (Envoy, error) {
	if checkEnvoyKey(in.EnvoyKey) != nil {
		return Envoy{}, rerr.EnvoyNotFound(in.EnvoyKey) // no such key can be registered
	}
	out, found, err := load(ctx, r.Snapshot(), in.Namespace, in.EnvoyKey, in.Datacenter)
	if err != nil {
		return Envoy{}, err
	}
	if !found {
		return Envoy{}, rerr.EnvoyNotFound(in.EnvoyKey)
	}
	return out, nil
}
