package runnerconfig

import (
	"context"
	"encoding/json"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// GetInput names one config.
type GetInput struct {
	Namespace id.ID
	Name      string
	// Serializable reads at serializable isolation, for a caller that acts
	// on the config in the same transaction (an envoy joining the pool) and
	// must conflict with a concurrent change of it. The default is a
	// snapshot read, for information reads.
	Serializable bool
}

// Get returns the config of (namespace, name) with its protocol version, or
// runner_config.not_found naming the name.
func Get(ctx context.Context, r udb.ReadTransaction, in GetInput) (Entry, error) {
	if err := CheckName("runner_name", in.Name); err != nil {
		return Entry{}, err
	}
	if !in.Serializable {
		r = r.Snapshot()
	}
	e, found, err := load(ctx, r, in.Namespace, in.Name)
	if err != nil {
		return Entry{}, err
	}
	if !found {
		return Entry{}, rerr.RunnerConfigNotFound(in.Name)
	}
	es := []Entry{e}
	err = withPoolErrors(ctx, r, in.Namespace, es)
	return es[0], err
}

// load reads the config and protocol version of one name through r.
func load(ctx context.Context, r udb.ReadTransaction, ns id.ID, name string) (Entry, bool, error) {
	cfg, found, err := keys.Get(ctx, r, keys.RunnerConfigDataKey{Namespace: ns, Name: name})
	if err != nil || !found {
		return Entry{}, false, corrupt.Mark("runner config", err)
	}
	e := Entry{Name: name, Config: cfg}
	if err := checkStored(e); err != nil {
		return Entry{}, false, err
	}
	pv, found, err := keys.Get(ctx, r, keys.RunnerConfigProtocolVersionKey{Namespace: ns, Name: name})
	if err != nil {
		return Entry{}, false, corrupt.Mark("runner config", err)
	}
	if found {
		e.ProtocolVersion = &pv
	}
	return e, true, nil
}

// checkStored reports a stored config the API could not return: metadata
// that is not JSON (the value codec does not parse it).
func checkStored(e Entry) error {
	if m := e.Config.Metadata; m != nil && !json.Valid([]byte(*m)) {
		return rerr.Corrupt("runner config", "metadata of %q is not JSON", e.Name)
	}
	return nil
}
