package runner

import (
	"context"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/ops/internal/metadata"
	"github.com/berthhq/berth/ops/internal/record"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Runner is the public runner object, with Rivet's JSON field names. Optional
// fields are null when absent, as the Rivet engine writes them.
type Runner struct {
	RunnerID        id.ID           `json:"runner_id"`
	NamespaceID     id.ID           `json:"namespace_id"`
	Datacenter      string          `json:"datacenter"`
	Name            string          `json:"name"`
	Key             string          `json:"key"`
	Version         uint32          `json:"version"`
	TotalSlots      uint32          `json:"total_slots"`
	RemainingSlots  uint32          `json:"remaining_slots"`
	CreateTs        int64           `json:"create_ts"`
	DrainTs         *int64          `json:"drain_ts"`
	StopTs          *int64          `json:"stop_ts"`
	LastPingTs      int64           `json:"last_ping_ts"`
	LastConnectedTs *int64          `json:"last_connected_ts"`
	LastRtt         uint32          `json:"last_rtt"`
	Metadata        json.RawMessage `json:"metadata"`
}

// Input limits. Rivet does not bound runner names and keys; berth does, so
// that every key that embeds them stays far below udb's 10,000-byte limit.
const (
	MaxNameLen = 128
	MaxKeyLen  = 512
)

// load reads runner rid for the API through r, which the caller passes as a
// snapshot. found is false when the runner does not exist. A runner is
// registered in one transaction, so one read version sees all of its
// fields or none.
func load(ctx context.Context, r udb.ReadTransaction, rid id.ID, datacenter string) (Runner, bool, error) {
	return startLoad(ctx, r, rid).finish(datacenter)
}

// loader is a load whose reads have started; see record.Reader.Prefetch.
type loader struct {
	rd  *record.Reader
	rid id.ID
}

// startLoad starts reading runner rid, so that a list can start the reads
// of a whole page before it waits for any.
func startLoad(ctx context.Context, r udb.ReadTransaction, rid id.ID) loader {
	rd := record.NewReader(ctx, r, "runner")
	rd.Prefetch(dataRanges(rid)...)
	return loader{rd: rd, rid: rid}
}

func (l loader) finish(datacenter string) (Runner, bool, error) {
	rd, rid := l.rd, l.rid
	createTs, found := record.Opt(rd, keys.RunnerCreateTsKey{RunnerID: rid})
	if !found {
		return Runner{}, false, rd.Err()
	}
	out := Runner{
		RunnerID:        rid,
		NamespaceID:     record.Must(rd, keys.RunnerNamespaceIDKey{RunnerID: rid}, "namespace_id"),
		Datacenter:      datacenter,
		Name:            record.Must(rd, keys.RunnerDataNameKey{RunnerID: rid}, "name"),
		Key:             record.Must(rd, keys.RunnerKeyKey{RunnerID: rid}, "key"),
		Version:         record.Must(rd, keys.RunnerVersionKey{RunnerID: rid}, "version"),
		TotalSlots:      record.Must(rd, keys.RunnerTotalSlotsKey{RunnerID: rid}, "total_slots"),
		RemainingSlots:  record.Must(rd, keys.RunnerRemainingSlotsKey{RunnerID: rid}, "remaining_slots"),
		CreateTs:        createTs,
		DrainTs:         record.Ptr(rd, keys.RunnerDrainTsKey{RunnerID: rid}),
		StopTs:          record.Ptr(rd, keys.RunnerStopTsKey{RunnerID: rid}),
		LastConnectedTs: record.Ptr(rd, keys.RunnerConnectedTsKey{RunnerID: rid}),
	}
	// A missing ping or RTT reads as 0, as in Rivet.
	out.LastPingTs, _ = record.Opt(rd, keys.RunnerLastPingTsKey{RunnerID: rid})
	out.LastRtt, _ = record.Opt(rd, keys.RunnerLastRttKey{RunnerID: rid})
	if md, found := record.Chunked(rd, keys.RunnerMetadataKey{RunnerID: rid}); found {
		out.Metadata = json.RawMessage(md)
	}
	if err := rd.Err(); err != nil {
		return Runner{}, false, err
	}
	return out, true, nil
}

// dataRanges are the two key ranges that hold every field load reads, so
// that a runner is loaded in two range reads rather than one read per
// field. The runner's data keys (RUNNER, DATA, runner_id, tag) sort by
// segment tag: the first range runs from CREATE_TS (15) to LAST_PING_TS
// (24), the second from METADATA (44, with its chunks) to berth's CONN_ID
// (1000), leaving out the actor command subspace (ACTOR, 32) between them,
// which may be large. A field outside both ranges is still read, one read
// of its own (TestLoadReadsTwoRanges checks that none is).
func dataRanges(rid id.ID) []udb.KeyRange {
	return []udb.KeyRange{
		{Begin: keys.RunnerCreateTsKey{RunnerID: rid}.Pack(), End: udb.KeyAfter(keys.RunnerLastPingTsKey{RunnerID: rid}.Pack())},
		{Begin: keys.RunnerMetadataKey{RunnerID: rid}.Pack(), End: udb.KeyAfter(keys.RunnerConnIDKey{RunnerID: rid}.Pack())},
	}
}

// state is what the state-changing ops read of a runner, serializably.
type state struct {
	id         id.ID
	namespace  id.ID
	name, key  string
	version    uint32
	remaining  uint32
	total      uint32
	protocol   uint16
	createTs   int64
	lastPingTs int64
	connID     id.ID // zero when no socket is current
	drainTs    int64 // when draining
	draining   bool
	stopped    bool
	expired    bool
}

// readState reads runner rid through r, serializably when r is a transaction
// (the state-changing ops pass theirs): a concurrent change to any of its
// fields makes the caller's transaction conflict and retry. found is false
// when the runner does not exist.
//
// The fields come from two range reads, of the spans that hold them
// (dataRanges), rather than one read per field. A transaction's reads go
// through its snapshot view and the spans become read conflicts: together a
// serializable read of exactly the fields, leaving out the actor command
// subspace between the spans, so that a command stored for the runner does
// not make its ping retry.
func readState(ctx context.Context, r udb.ReadTransaction, rid id.ID) (state, bool, error) {
	tx, serializable := r.(udb.Transaction)
	if serializable {
		r = tx.Snapshot()
	}
	// The two spans, not the one read of the API's loads (startRecord): the state ops run
	// while actors are placed on the runner, whose acknowledged start commands leave cleared
	// keys in the actor command subspace between the spans, and one read across it steps
	// over every one of them until the store compacts them away.
	prefix, _, _ := keys.RunnerFieldsRange(rid)
	spans := dataRanges(rid)
	r.Prefetch(ctx, nil, spans) // both spans in one round trip
	its := make([]udb.RangeIterator, len(spans))
	for i, rg := range spans {
		its[i] = r.GetRange(udb.FirstGreaterOrEqual(rg.Begin), udb.FirstGreaterOrEqual(rg.End), udb.RangeOptions{Mode: udb.StreamingModeWantAll})
	}
	rows := make([]udb.KeyValue, 0, recordRowLimit)
	for _, it := range its {
		for it.Next(ctx) {
			rows = append(rows, it.KeyValue())
		}
		if err := it.Err(); err != nil {
			return state{}, false, err
		}
	}
	if serializable {
		for _, rg := range spans {
			if err := tx.AddReadConflictRange(rg.Begin, rg.End); err != nil {
				return state{}, false, err
			}
		}
	}
	return decodeState(rid, prefix, rows)
}

// eligible reports whether the runner may receive actors: it has not begun
// draining, stopping or expiring. An eligible runner with a current socket
// has exactly one allocation-index entry, allocKey(); every other runner
// has none.
func (s state) eligible() bool { return !s.draining && !s.stopped && !s.expired }

// indexed reports whether the runner has an allocation-index entry.
func (s state) indexed() bool { return s.eligible() && !s.connID.IsZero() }

// allocKey is the runner's allocation-index entry for its current fields.
func (s state) allocKey() keys.RunnerAllocIdxKey {
	return keys.RunnerAllocIdxKey{
		Namespace:           s.namespace,
		Name:                s.name,
		Version:             s.version,
		RemainingMillislots: keys.RemainingMillislots(s.remaining, s.total),
		LastPingTs:          s.lastPingTs,
		RunnerID:            s.id,
	}
}

func (s state) allocValue() keys.RunnerAllocIdxValue {
	return keys.RunnerAllocIdxValue{WorkflowID: s.id, RemainingSlots: s.remaining, TotalSlots: s.total, ProtocolVersion: s.protocol}
}

// unindex removes the runner's allocation-index entry, if it has one. The
// read conflict on the old entry makes a concurrent allocator that chose
// this runner from a snapshot of the index conflict with this transaction.
func (s state) unindex(tx udb.Transaction) error {
	if !s.indexed() {
		return nil
	}
	old := s.allocKey().Pack()
	if err := udb.AddReadConflictKey(tx, old); err != nil {
		return err
	}
	tx.Clear(old)
	return nil
}

// index writes the runner's allocation-index entry for its current fields.
func (s state) index(tx udb.Transaction) { keys.Set(tx, s.allocKey(), s.allocValue()) }

// setRemaining records n free slots. The allocation-index entry moves only if
// its key changes (its RemainingMillislots bucket): see keys.RunnerAllocIdxKey.
func (s *state) setRemaining(tx udb.Transaction, n uint32) error {
	if s.indexed() && keys.RemainingMillislots(n, s.total) != keys.RemainingMillislots(s.remaining, s.total) {
		if err := s.unindex(tx); err != nil {
			return err
		}
		s.remaining = n
		s.index(tx)
	}
	s.remaining = n
	keys.Set(tx, keys.RunnerRemainingSlotsKey{RunnerID: s.id}, n)
	return nil
}

// setPing records nowMs as the runner's last ping, moving its ping-index
// entry (keys.RunnerPingIdxKey) unless it has stopped: a stopped runner has
// none. s.lastPingTs must be the ping time stored before.
func (s *state) setPing(tx udb.Transaction, nowMs int64) {
	if !s.stopped {
		keys.Clear(tx, keys.RunnerPingIdxKey{LastPingTs: s.lastPingTs, RunnerID: s.id})
		keys.Set(tx, keys.RunnerPingIdxKey{LastPingTs: nowMs, RunnerID: s.id}, keys.Empty{})
	}
	keys.Set(tx, keys.RunnerLastPingTsKey{RunnerID: s.id}, nowMs)
	s.lastPingTs = nowMs
}

// releaseKey deletes the runner's RunnerByKeyKey if it still names this
// runner, so that the next registration with the same (namespace, name,
// key) gets a new runner id. Serializable read: a concurrent registration
// that took the key over conflicts with this transaction.
func (s state) releaseKey(ctx context.Context, tx udb.Transaction) error {
	k := keys.RunnerByKeyKey{Namespace: s.namespace, Name: s.name, Key: s.key}
	v, found, err := keys.Get(ctx, tx, k)
	if err != nil {
		return corrupt.Mark("runner", err)
	}
	if found && v.RunnerID == s.id {
		keys.Clear(tx, k)
	}
	return nil
}

// checkName, checkKey and checkMetadata validate registration input; errors
// are api.bad_request naming the field.
func checkName(field, v string, max int) error {
	switch {
	case v == "":
		return rerr.BadRequest(field, "must not be empty")
	case len(v) > max:
		return rerr.BadRequest(field, "longer than "+strconv.Itoa(max)+" bytes")
	case !utf8.ValidString(v):
		return rerr.BadRequest(field, "not valid UTF-8")
	}
	return nil
}

// MaxMetadataLen bounds the metadata given at registration, in bytes.
const MaxMetadataLen = metadata.MaxLen
