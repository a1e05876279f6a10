package runnerconfig

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// Pool is one serverless pool of the datacenter, for the metadata poller.
type Pool struct {
	Namespace id.ID
	Name      string
	Config    keys.ServerlessRunnerConfig
}

// ListServerless returns up to limit serverless pools of every namespace,
// in key order, after the pool after (nil for the first). Snapshot reads.
func ListServerless(ctx context.Context, r udb.ReadTransaction, after *Pool, limit int) ([]Pool, error) {
	begin, end := keys.RunnerConfigByVariantAllRange()
	if after != nil {
		begin = udb.KeyAfter(keys.RunnerConfigByVariantKey{Namespace: after.Namespace, Variant: keys.RunnerConfigServerless, Name: after.Name}.Pack())
	}
	it := r.Snapshot().GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{})
	var out []Pool
	for len(out) < limit && it.Next(ctx) {
		kv := it.KeyValue()
		k, err := keys.UnpackRunnerConfigByVariantKey(kv.Key)
		if err != nil {
			return nil, corrupt.Mark("runner config index", err)
		}
		if k.Variant != keys.RunnerConfigServerless {
			continue
		}
		cfg, err := k.Decode(kv.Value)
		if err != nil || cfg.Serverless == nil {
			return nil, corrupt.Mark("runner config index", err)
		}
		out = append(out, Pool{Namespace: k.Namespace, Name: k.Name, Config: *cfg.Serverless})
	}
	return out, it.Err()
}

// SetProtocolVersion records the envoy protocol version the endpoint at url
// reported for pool (namespace, name), if the pool is still a serverless
// pool of that url (a config rewritten meanwhile keeps its own). It reports
// whether it wrote.
func SetProtocolVersion(ctx context.Context, tx udb.Transaction, ns id.ID, name, url string, pv uint16) (bool, error) {
	cfg, found, err := keys.Get(ctx, tx, keys.RunnerConfigDataKey{Namespace: ns, Name: name})
	if err != nil {
		return false, corrupt.Mark("runner config", err)
	}
	if !found || cfg.Serverless == nil || cfg.Serverless.URL != url {
		return false, nil
	}
	k := keys.RunnerConfigProtocolVersionKey{Namespace: ns, Name: name}
	cur, found, err := keys.Get(ctx, tx.Snapshot(), k)
	if err != nil {
		return false, corrupt.Mark("runner config", err)
	}
	if found && cur == pv {
		return false, nil
	}
	keys.Set(tx, k, pv)
	return true, nil
}

// SetDowngrade records err (the downgrade runner_pool_error) as pool (namespace, name)'s
// error when its endpoint at url stopped reporting an envoy protocol version while the
// pool has one (docs/serverless.md § 3.2), unless that is its error already. It reports
// whether it wrote.
func SetDowngrade(ctx context.Context, tx udb.Transaction, ns id.ID, name, url string, downgrade json.RawMessage) (bool, error) {
	cfg, found, err := keys.Get(ctx, tx, keys.RunnerConfigDataKey{Namespace: ns, Name: name})
	if err != nil {
		return false, corrupt.Mark("runner config", err)
	}
	if !found || cfg.Serverless == nil || cfg.Serverless.URL != url {
		return false, nil
	}
	_, had, err := keys.Get(ctx, tx.Snapshot(), keys.RunnerConfigProtocolVersionKey{Namespace: ns, Name: name})
	if err != nil || !had {
		return false, corrupt.Mark("runner config", err)
	}
	cur, found, err := keys.Get(ctx, tx, keys.RunnerPoolErrorKey{Namespace: ns, Name: name})
	if err != nil {
		return false, corrupt.Mark("runner pool", err)
	}
	if found && bytes.Equal(cur.Error, downgrade) {
		return false, nil
	}
	SetPoolError(tx, ns, name, downgrade)
	return true, nil
}
