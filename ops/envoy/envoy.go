package envoy

import (
	"context"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/metadata"
	"github.com/berthhq/berth/ops/internal/record"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Envoy is the public envoy object: the 12 fields of Rivet's Envoy, with its
// JSON names. Optional fields are null when absent, as the Rivet engine
// writes them.
type Envoy struct {
	EnvoyKey    string `json:"envoy_key"`
	NamespaceID id.ID  `json:"namespace_id"`
	Datacenter  string `json:"datacenter"`
	PoolName    string `json:"pool_name"`
	Version     uint32 `json:"version"`
	// Slots is the envoy's slot counter (actors placed on it).
	Slots    uint64 `json:"slots"`
	CreateTs int64  `json:"create_ts"`
	// StopTs is when the envoy began stopping (Drain).
	StopTs          *int64          `json:"stop_ts"`
	LastPingTs      int64           `json:"last_ping_ts"`
	LastConnectedTs *int64          `json:"last_connected_ts"`
	LastRtt         uint32          `json:"last_rtt"`
	Metadata        json.RawMessage `json:"metadata"`
}

// Input limits: the Rivet engine's for the envoy key (3 to 128 characters
// of [a-zA-Z0-9_-], not starting or ending with '-') and pool name (at most
// 128 bytes), berth's for metadata.
const (
	MinEnvoyKeyLen = 3
	MaxEnvoyKeyLen = 128
	MaxPoolNameLen = 128
)

// load reads envoy (ns, key) for the API through r, which the caller passes
// as a snapshot. found is false when the envoy was never registered. An
// envoy is registered in one transaction, so one read version sees all of
// its fields or none.
func load(ctx context.Context, r udb.ReadTransaction, ns id.ID, key, datacenter string) (Envoy, bool, error) {
	return startLoad(ctx, r, ns, key).finish(datacenter)
}

// loader is a load whose reads have started; see record.Reader.Prefetch.
type loader struct {
	rd  *record.Reader
	ns  id.ID
	key string
}

// startLoad starts reading envoy (ns, key), so that a list can start the
// reads of a whole page before it waits for any.
func startLoad(ctx context.Context, r udb.ReadTransaction, ns id.ID, key string) loader {
	return startLoadOf(ctx, r, ns, key, dataRanges(ns, key))
}

// startLoads starts reading envoys keys of ns after fetching all of their records together
// (udb Prefetch: one round trip on PostgreSQL for a page, not one per envoy).
func startLoads(ctx context.Context, r udb.ReadTransaction, ns id.ID, envoyKeys []string) []loader {
	ranges := make([][]udb.KeyRange, len(envoyKeys))
	var all []udb.KeyRange
	for i, key := range envoyKeys {
		ranges[i] = dataRanges(ns, key)
		all = append(all, ranges[i]...)
	}
	r.Prefetch(ctx, nil, all)
	loads := make([]loader, len(envoyKeys))
	for i, key := range envoyKeys {
		loads[i] = startLoadOf(ctx, r, ns, key, ranges[i])
	}
	return loads
}

// startLoadOf starts reading envoy (ns, key) whose fields are in ranges (dataRanges).
func startLoadOf(ctx context.Context, r udb.ReadTransaction, ns id.ID, key string, ranges []udb.KeyRange) loader {
	rd := record.NewReader(ctx, r, "envoy")
	rd.Prefetch(ranges...)
	return loader{rd: rd, ns: ns, key: key}
}

func (l loader) finish(datacenter string) (Envoy, bool, error) {
	rd, ns, key := l.rd, l.ns, l.key
	// Registered ⇔ the pool name is set, as in Rivet.
	pool, found := record.Opt(rd, keys.EnvoyPoolNameKey{Namespace: ns, EnvoyKey: key})
	if !found {
		return Envoy{}, false, rd.Err()
	}
	out := Envoy{
		EnvoyKey:        key,
		NamespaceID:     ns,
		Datacenter:      datacenter,
		PoolName:        pool,
		Version:         record.Must(rd, keys.EnvoyVersionKey{Namespace: ns, EnvoyKey: key}, "version"),
		CreateTs:        record.Must(rd, keys.EnvoyCreateTsKey{Namespace: ns, EnvoyKey: key}, "create_ts"),
		StopTs:          record.Ptr(rd, keys.EnvoyStopTsKey{Namespace: ns, EnvoyKey: key}),
		LastConnectedTs: record.Ptr(rd, keys.EnvoyConnectedTsKey{Namespace: ns, EnvoyKey: key}),
	}
	// Missing ping fields and slot counter read as 0, as in Rivet. The
	// counter is changed by atomic adds only; a negative value (more
	// releases than placements) reads as 0 too.
	out.LastPingTs, _ = record.Opt(rd, keys.EnvoyLastPingTsKey{Namespace: ns, EnvoyKey: key})
	out.LastRtt, _ = record.Opt(rd, keys.EnvoyLastRttKey{Namespace: ns, EnvoyKey: key})
	slots, _ := record.Opt(rd, keys.EnvoySlotsKey{Namespace: ns, EnvoyKey: key})
	out.Slots = uint64(max(slots, 0))
	if md, found := record.Chunked(rd, keys.EnvoyMetadataKey{Namespace: ns, EnvoyKey: key}); found {
		out.Metadata = json.RawMessage(md)
	}
	if err := rd.Err(); err != nil {
		return Envoy{}, false, err
	}
	return out, true, nil
}

// dataRanges are the two key ranges that hold every field load reads. The
// envoy's data keys (NAMESPACE, ENVOY, DATA, ns, envoy_key, tag) sort by
// segment tag: the first range runs from CREATE_TS (15) to LAST_PING_TS
// (24), the second from METADATA (44, with its chunks) to berth's CONN_ID
// (1000), leaving out the actor command subspace (ACTOR, 32) between them.
// A field outside both is still read, one read of its own
// (TestLoadReadsTwoRanges checks that none is).
func dataRanges(ns id.ID, key string) []udb.KeyRange {
	return []udb.KeyRange{
		{Begin: keys.EnvoyCreateTsKey{Namespace: ns, EnvoyKey: key}.Pack(), End: udb.KeyAfter(keys.EnvoyLastPingTsKey{Namespace: ns, EnvoyKey: key}.Pack())},
		{Begin: keys.EnvoyMetadataKey{Namespace: ns, EnvoyKey: key}.Pack(), End: udb.KeyAfter(keys.EnvoyConnIDKey{Namespace: ns, EnvoyKey: key}.Pack())},
	}
}

// state is what the state-changing ops read of an envoy, serializably.
type state struct {
	ns         id.ID
	key        string
	pool       string
	version    uint32
	createTs   int64
	lastPingTs int64
	connID     id.ID
	stopped    bool // drained: stop_ts is set
	expired    bool
	// virtualNodes is the envoy's hash-ring size as registered (VirtualNodes for an
	// envoy registered before the ring existed).
	virtualNodes uint8
}

// readState reads envoy (ns, key) through tx serializably: a concurrent
// change to any of these fields makes the caller's transaction conflict and
// retry. found is false when the envoy was never registered.
func readState(ctx context.Context, tx udb.ReadTransaction, ns id.ID, key string) (state, bool, error) {
	rd := record.NewReader(ctx, tx, "envoy")
	pool, found := record.Opt(rd, keys.EnvoyPoolNameKey{Namespace: ns, EnvoyKey: key})
	if !found {
		return state{}, false, rd.Err()
	}
	s := state{
		ns:         ns,
		key:        key,
		pool:       pool,
		version:    record.Must(rd, keys.EnvoyVersionKey{Namespace: ns, EnvoyKey: key}, "version"),
		createTs:   record.Must(rd, keys.EnvoyCreateTsKey{Namespace: ns, EnvoyKey: key}, "create_ts"),
		lastPingTs: record.Must(rd, keys.EnvoyLastPingTsKey{Namespace: ns, EnvoyKey: key}, "last_ping_ts"),
		stopped:    record.Has(rd, keys.EnvoyStopTsKey{Namespace: ns, EnvoyKey: key}),
		expired:    record.Has(rd, keys.EnvoyExpiredTsKey{Namespace: ns, EnvoyKey: key}),
	}
	s.connID, _ = record.Opt(rd, keys.EnvoyConnIDKey{Namespace: ns, EnvoyKey: key})
	vn, found := record.Opt(rd, keys.EnvoyVirtualNodesKey{Namespace: ns, EnvoyKey: key})
	if !found {
		vn = VirtualNodes
	}
	s.virtualNodes = vn
	if err := rd.Err(); err != nil {
		return state{}, false, err
	}
	return s, true, nil
}

// indexed reports whether the envoy has a load-balancer entry: it is
// registered, not expired and not draining. It then has exactly one, lbKey().
func (s state) indexed() bool { return !s.expired && !s.stopped }

// lbKey is the envoy's load-balancer entry for its current fields.
func (s state) lbKey() keys.EnvoyLoadBalancerIdxKey {
	return keys.EnvoyLoadBalancerIdxKey{Namespace: s.ns, PoolName: s.pool, Version: s.version, LastPingTs: s.lastPingTs, EnvoyKey: s.key}
}

// unindex removes the envoy's load-balancer entry, if it has one, adding a
// read conflict on it first: an allocator that chose this envoy from a
// snapshot of the index (and added a read conflict on its choice) then
// conflicts with this transaction, as in Rivet.
func (s state) unindex(tx udb.Transaction) error {
	if !s.indexed() {
		return nil
	}
	old := s.lbKey().Pack()
	if err := udb.AddReadConflictKey(tx, old); err != nil {
		return err
	}
	tx.Clear(old)
	return nil
}

// index writes the envoy's load-balancer entry for its current fields.
func (s state) index(tx udb.Transaction) { keys.Set(tx, s.lbKey(), keys.Empty{}) }

// activate writes the envoy's active index entries (by namespace and by
// pool); deactivate removes them.
func (s state) activate(tx udb.Transaction) {
	keys.Set(tx, keys.ActiveEnvoyKey{Namespace: s.ns, CreateTs: s.createTs, EnvoyKey: s.key}, keys.Empty{})
	keys.Set(tx, keys.ActiveEnvoyByNameKey{Namespace: s.ns, PoolName: s.pool, CreateTs: s.createTs, EnvoyKey: s.key}, keys.Empty{})
}

func (s state) deactivate(tx udb.Transaction) {
	keys.Clear(tx, keys.ActiveEnvoyKey{Namespace: s.ns, CreateTs: s.createTs, EnvoyKey: s.key})
	keys.Clear(tx, keys.ActiveEnvoyByNameKey{Namespace: s.ns, PoolName: s.pool, CreateTs: s.createTs, EnvoyKey: s.key})
}

// fenced returns envoy.stale_connection when connID is set and is not the
// envoy's current connection.
func (s state) fenced(connID id.ID) error {
	if !connID.IsZero() && s.connID != connID {
		return rerr.EnvoyStaleConnection(s.key)
	}
	return nil
}

// checkEnvoyKey validates an envoy key as the Rivet engine does.
func checkEnvoyKey(k string) error {
	if len(k) < MinEnvoyKeyLen || len(k) > MaxEnvoyKeyLen {
		return rerr.BadRequest("envoy_key", "must be "+strconv.Itoa(MinEnvoyKeyLen)+" to "+strconv.Itoa(MaxEnvoyKeyLen)+" characters")
	}
	if k[0] == '-' || k[len(k)-1] == '-' {
		return rerr.BadRequest("envoy_key", "must not start or end with '-'")
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return rerr.BadRequest("envoy_key", "may hold only letters, digits, '-' and '_'")
		}
	}
	return nil
}

func checkPoolName(p string) error {
	switch {
	case p == "":
		return rerr.BadRequest("pool_name", "must not be empty")
	case len(p) > MaxPoolNameLen:
		return rerr.BadRequest("pool_name", "longer than "+strconv.Itoa(MaxPoolNameLen)+" bytes")
	case !utf8.ValidString(p):
		return rerr.BadRequest("pool_name", "not valid UTF-8")
	}
	return nil
}

// MaxMetadataLen bounds the metadata given at registration, in bytes.
const MaxMetadataLen = metadata.MaxLen
