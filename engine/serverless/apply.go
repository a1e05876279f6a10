package serverless

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/berthhq/berth/keys"
	oprunner "github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// PoolHosts drains the hosts of a pool (engine/pegboard.Lifecycle).
type PoolHosts interface {
	// DrainEnvoys drains the pool's envoys whose version is below version (all for 0).
	DrainEnvoys(ctx context.Context, ns id.ID, pool string, version uint32) (int, error)
	// DrainRunners drains the pool's runners whose version is below version.
	DrainRunners(ctx context.Context, ns id.ID, pool string, version uint32) error
	// CloseStarts closes this node's open /start requests of the pool.
	CloseStarts(ctx context.Context, ns id.ID, pool string) (int, error)
}

// poolDowngrade is the runner_pool_error of a pool whose /metadata stopped reporting an
// envoy protocol version (docs/serverless.md § 6).
var poolDowngrade = json.RawMessage(`"downgrade"`)

// apply stores what a pool's /metadata says (docs/serverless.md § 3.2): its envoy
// protocol version, or the downgrade error when the pool had one and lost it; its actor
// names; and, with drain_on_version_upgrade, drains the pool's hosts older than the
// envoy or runner version it reports. Failures are logged: the next poll tries again.
func (s *Service) apply(ctx context.Context, ns id.ID, name string, cfg keys.ServerlessRunnerConfig, m Metadata) {
	if _, err := udb.Transact(ctx, s.DB, func(tx udb.Transaction) (bool, error) {
		if m.EnvoyProtocolVersion == nil {
			return runnerconfig.SetDowngrade(ctx, tx, ns, name, cfg.URL, poolDowngrade)
		}
		return runnerconfig.SetProtocolVersion(ctx, tx, ns, name, cfg.URL, *m.EnvoyProtocolVersion)
	}); err != nil {
		s.Log.Warn("serverless: storing the protocol version failed", "pool", name, "error", err.Error())
	}
	if len(m.ActorNames) > 0 {
		names := make([]oprunner.ActorName, 0, len(m.ActorNames))
		for n, md := range m.ActorNames {
			names = append(names, oprunner.ActorName{Name: n, Metadata: md})
		}
		sort.Slice(names, func(i, j int) bool { return names[i].Name < names[j].Name })
		if _, err := udb.Transact(ctx, s.DB, func(tx udb.Transaction) (struct{}, error) {
			return struct{}{}, oprunner.AnnounceActorNames(tx, ns, names)
		}); err != nil {
			s.Log.Warn("serverless: storing the actor names of /metadata failed", "pool", name, "error", err.Error())
		}
	}
	if s.Hosts == nil || !cfg.DrainOnVersionUpgrade {
		return
	}
	if v := m.EnvoyVersion; v != nil && *v > 0 {
		if _, err := s.Hosts.DrainEnvoys(ctx, ns, name, *v); err != nil {
			s.Log.Warn("serverless: draining older envoys failed", "pool", name, "error", err.Error())
		}
	}
	if v := m.RunnerVersion; v != nil && *v > 0 {
		if err := s.Hosts.DrainRunners(ctx, ns, name, *v); err != nil {
			s.Log.Warn("serverless: draining older runners failed", "pool", name, "error", err.Error())
		}
	}
}

// hostVersion is the u32 version of an envoy or runner object of /metadata, nil when
// absent or of another shape.
func hostVersion(raw json.RawMessage) *uint32 {
	var h struct {
		Version *uint32 `json:"version"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &h) != nil {
		return nil
	}
	return h.Version
}

// actorNames are the names of an actorNames object whose metadata is a JSON object.
func actorNames(raw json.RawMessage) map[string]json.RawMessage {
	var all map[string]struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &all) != nil {
		return nil
	}
	out := map[string]json.RawMessage{}
	for n, v := range all {
		var obj map[string]json.RawMessage
		if json.Unmarshal(v.Metadata, &obj) == nil && obj != nil {
			out[n] = v.Metadata
		}
	}
	return out
}

// gone drains the hosts of a serverless pool whose config this node saw deleted: its
// envoys are drained (their actors move away, their sockets close once empty) and the
// /start requests this node has open for it are closed. Every node closes its own
// requests; the envoys' drains are idempotent. A pool rewritten as a normal one keeps its
// hosts.
func (s *Service) gone(ctx context.Context, ns id.ID, name string) {
	if s.Hosts == nil {
		return
	}
	exists, err := udb.ReadTransact(ctx, s.DB, func(r udb.ReadTransaction) (bool, error) {
		_, found, err := keys.Get(ctx, r.Snapshot(), keys.RunnerConfigDataKey{Namespace: ns, Name: name})
		return found, err
	})
	if err != nil || exists {
		return
	}
	envoys, err := s.Hosts.DrainEnvoys(ctx, ns, name, 0)
	if err != nil {
		s.Log.Warn("serverless: draining the envoys of a deleted pool failed", "pool", name, "error", err.Error())
	}
	starts, err := s.Hosts.CloseStarts(ctx, ns, name)
	if err != nil {
		s.Log.Warn("serverless: closing the /start requests of a deleted pool failed", "pool", name, "error", err.Error())
	}
	s.Log.Info("serverless pool deleted: hosts drained", "namespace_id", ns.String(), "pool", name, "envoys", envoys, "starts", starts)
}
