package envoy

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/metadata"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// RegisterInput is an envoy socket's registration: the connect URL's
// namespace, envoy key, pool and version, its init's metadata, and the
// socket's connection id.
type RegisterInput struct {
	Namespace       id.ID
	EnvoyKey        string
	PoolName        string
	Version         uint32
	ProtocolVersion uint16
	// Metadata is a JSON object, or nil for none. It replaces the stored
	// metadata at every registration.
	Metadata json.RawMessage
	// ConnID identifies the registering socket: the fencing token its later
	// pings must carry.
	ConnID id.ID
	NowMs  int64
}

// RegisterOutput says what the registration replaced.
type RegisterOutput struct {
	// New is true on the envoy key's first registration in the namespace.
	New bool
	// PrevConnID is the connection this registration replaced, zero if
	// none: the caller closes that socket with ws.eviction. Its pings are
	// refused from now on.
	PrevConnID id.ID
}

// Register registers an envoy socket. A new connection id replaces the old
// one (fencing), and the op reports the old one for eviction.
//
// It writes the pool name, version, protocol version (also the pool's runner-config
// protocol version, which marks the pool as hosted by envoys), the slot counter
// (an atomic add of 0, so it exists without a read conflict), create_ts on
// the first registration only, last ping and connected time, the active
// indexes by namespace and by pool, the load-balancer entry at the new ping
// time, the hash-ring entries and the chunked metadata. A re-registration clears expired_ts and
// stop_ts (a new socket is a running envoy), moves the active-by-pool entry
// if the pool changed, and replaces the old load-balancer entry with a
// read conflict on it.
//
// Serializable reads of the envoy's fields: two sockets registering one
// key at once conflict, and the one retried evicts the other.
func Register(ctx context.Context, tx udb.Transaction, in RegisterInput) (RegisterOutput, error) {
	if in.Namespace.IsZero() || in.ConnID.IsZero() {
		return RegisterOutput{}, rerr.Internal(errors.New("envoy.Register: zero namespace or connection id"))
	}
	if err := checkEnvoyKey(in.EnvoyKey); err != nil {
		return RegisterOutput{}, err
	}
	if err := checkPoolName(in.PoolName); err != nil {
		return RegisterOutput{}, err
	}
	if err := metadata.Check(in.Metadata); err != nil {
		return RegisterOutput{}, err
	}
	old, found, err := readState(ctx, tx, in.Namespace, in.EnvoyKey)
	if err != nil {
		return RegisterOutput{}, err
	}
	ns, key := in.Namespace, in.EnvoyKey
	s := state{ns: ns, key: key, pool: in.PoolName, version: in.Version, createTs: in.NowMs, lastPingTs: in.NowMs, connID: in.ConnID, virtualNodes: VirtualNodes}
	var out RegisterOutput
	if found {
		s.createTs = old.createTs
		if old.connID != in.ConnID {
			out.PrevConnID = old.connID
		}
		if err := old.leave(tx); err != nil {
			return RegisterOutput{}, err
		}
		if !old.expired {
			old.deactivate(tx) // re-activated below, under the new pool
		}
		keys.Clear(tx, keys.EnvoyExpiredTsKey{Namespace: ns, EnvoyKey: key})
		keys.Clear(tx, keys.EnvoyStopTsKey{Namespace: ns, EnvoyKey: key})
	} else {
		out.New = true
		keys.Set(tx, keys.EnvoyCreateTsKey{Namespace: ns, EnvoyKey: key}, s.createTs)
	}
	keys.Set(tx, keys.EnvoyPoolNameKey{Namespace: ns, EnvoyKey: key}, s.pool)
	keys.Set(tx, keys.EnvoyVersionKey{Namespace: ns, EnvoyKey: key}, s.version)
	keys.Set(tx, keys.EnvoyProtocolVersionKey{Namespace: ns, EnvoyKey: key}, in.ProtocolVersion)
	keys.Add(tx, keys.EnvoySlotsKey{Namespace: ns, EnvoyKey: key}, 0)
	keys.Set(tx, keys.EnvoyLastPingTsKey{Namespace: ns, EnvoyKey: key}, s.lastPingTs)
	keys.Set(tx, keys.EnvoyConnectedTsKey{Namespace: ns, EnvoyKey: key}, in.NowMs)
	keys.Set(tx, keys.EnvoyConnIDKey{Namespace: ns, EnvoyKey: key}, s.connID)
	if in.Metadata != nil {
		keys.SetChunked(tx, keys.EnvoyMetadataKey{Namespace: ns, EnvoyKey: key}, string(in.Metadata))
	} else {
		keys.ClearChunked(tx, keys.EnvoyMetadataKey{Namespace: ns, EnvoyKey: key})
	}
	s.activate(tx)
	s.join(tx)
	// The pool now has envoys: its actors are placed on envoys (ops/actor). Written only
	// when it changes, so that registrations do not conflict with placements reading it.
	pv := keys.RunnerConfigProtocolVersionKey{Namespace: ns, Name: s.pool}
	cur, found, err := keys.Get(ctx, tx.Snapshot(), pv)
	if err != nil {
		return RegisterOutput{}, err
	}
	if !found || cur != in.ProtocolVersion {
		keys.Set(tx, pv, in.ProtocolVersion)
	}
	return out, nil
}
