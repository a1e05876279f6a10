package runner

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/ops/internal/metadata"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// RegisterInput is a runner socket's init: what ToServerInit carries, the
// namespace and runner key from the connect URL, and the socket's
// connection id.
type RegisterInput struct {
	Namespace       id.ID
	Name            string // the runner name (pool)
	Key             string // runner_key
	Version         uint32
	TotalSlots      uint32
	ProtocolVersion uint16
	// Metadata is a JSON object, or nil for none. It replaces the stored
	// metadata at every registration.
	Metadata json.RawMessage
	// ActorNames are the actor names the runner announces (prepopulateActorNames); they are
	// added to the namespace's actor names.
	ActorNames []ActorName
	// ConnID identifies the registering socket: the fencing token its later
	// pings must carry.
	ConnID id.ID
	// NewRunnerID is the id given to the runner if none is registered with
	// (Namespace, Name, Key). The caller draws it (id.New with the
	// datacenter label) so that every retry of the transaction uses the
	// same one.
	NewRunnerID id.ID
	NowMs       int64
}

// RegisterOutput says which runner the socket now serves.
type RegisterOutput struct {
	RunnerID id.ID
	// New is true when the runner was created by this registration; false
	// when the socket reconnected an existing runner.
	New bool
	// PrevConnID is the connection this registration replaced, zero if
	// none: the caller closes that socket with ws.eviction. Its pings are
	// refused from now on.
	PrevConnID id.ID
}

// Register registers a runner socket.
//
// The runner id stays the same for one (namespace, name, runner key) while
// that runner is eligible: a reconnect reuses it, takes over the
// connection (the previous one is reported for eviction), records the new
// version, slots and metadata, and moves the allocation-index entry to the
// new ping time. Once the runner drains, stops or expires, its key is
// released and the next registration creates a new runner with
// NewRunnerID.
//
// A new runner gets its data keys, the active and all indexes (also by
// name), the name index, the by-key entry, a full allocation-index entry
// and its connection id, all in this transaction, so no reader ever sees
// part of it.
//
// Serializable reads of the by-key entry and of the runner's fields: two
// sockets registering the same key at once conflict, and the one retried
// reconnects the runner the other created (and evicts it).
func Register(ctx context.Context, tx udb.Transaction, in RegisterInput) (RegisterOutput, error) {
	if err := checkRegister(in); err != nil {
		return RegisterOutput{}, err
	}
	writeActorNames(tx, in.Namespace, in.ActorNames)
	byKey := keys.RunnerByKeyKey{Namespace: in.Namespace, Name: in.Name, Key: in.Key}
	cur, found, err := keys.Get(ctx, tx, byKey)
	if err != nil {
		return RegisterOutput{}, corrupt.Mark("runner", err)
	}
	if found {
		s, ok, err := readState(ctx, tx, cur.RunnerID)
		if err != nil {
			return RegisterOutput{}, err
		}
		// The by-key entry is released when the runner leaves eligibility,
		// so an entry naming an ineligible or missing runner is stale; a new
		// runner replaces it.
		if ok && s.eligible() {
			return reconnect(tx, s, in)
		}
	}
	return create(ctx, tx, in)
}

func checkRegister(in RegisterInput) error {
	if in.Namespace.IsZero() || in.ConnID.IsZero() || in.NewRunnerID.IsZero() {
		return rerr.Internal(errors.New("runner.Register: zero namespace, connection or new runner id"))
	}
	if err := checkName("name", in.Name, MaxNameLen); err != nil {
		return err
	}
	if err := checkName("runner_key", in.Key, MaxKeyLen); err != nil {
		return err
	}
	if err := checkActorNames(in.ActorNames); err != nil {
		return err
	}
	return metadata.Check(in.Metadata)
}

// reconnect hands the eligible runner s to the registering socket.
func reconnect(tx udb.Transaction, s state, in RegisterInput) (RegisterOutput, error) {
	out := RegisterOutput{RunnerID: s.id}
	if s.connID != in.ConnID {
		out.PrevConnID = s.connID
	}
	if err := s.unindex(tx); err != nil {
		return RegisterOutput{}, err
	}
	// The process behind the key may have restarted with another version or
	// slot count. Slots in use stay in use: remaining moves by the change
	// of total, never below 0 or above the new total.
	used := int64(s.total) - int64(s.remaining)
	s.remaining = uint32(min(max(int64(in.TotalSlots)-used, 0), int64(in.TotalSlots)))
	s.total = in.TotalSlots
	s.version = in.Version
	s.protocol = in.ProtocolVersion
	s.connID = in.ConnID
	s.setPing(tx, in.NowMs)
	writeConnection(tx, s, in)
	s.index(tx)
	return out, nil
}

// create registers a new runner with id in.NewRunnerID.
func create(ctx context.Context, tx udb.Transaction, in RegisterInput) (RegisterOutput, error) {
	rid := in.NewRunnerID
	// Serializable: an id drawn twice must not merge two runners.
	if _, taken, err := keys.Get(ctx, tx, keys.RunnerCreateTsKey{RunnerID: rid}); err != nil {
		return RegisterOutput{}, corrupt.Mark("runner", err)
	} else if taken {
		return RegisterOutput{}, rerr.Internal(errors.New("runner.Register: runner id " + rid.String() + " already in use"))
	}
	s := state{
		id:        rid,
		namespace: in.Namespace,
		name:      in.Name,
		key:       in.Key,
		version:   in.Version,
		remaining: in.TotalSlots,
		total:     in.TotalSlots,
		protocol:  in.ProtocolVersion,
		createTs:  in.NowMs,
		connID:    in.ConnID,
	}
	s.setPing(tx, in.NowMs)
	// berth has no workflow engine: the workflow id Rivet stores is the
	// runner's own id.
	keys.Set(tx, keys.RunnerWorkflowIDKey{RunnerID: rid}, rid)
	keys.Set(tx, keys.RunnerCreateTsKey{RunnerID: rid}, s.createTs)
	keys.Set(tx, keys.RunnerNamespaceIDKey{RunnerID: rid}, s.namespace)
	keys.Set(tx, keys.RunnerDataNameKey{RunnerID: rid}, s.name)
	keys.Set(tx, keys.RunnerKeyKey{RunnerID: rid}, s.key)
	keys.Set(tx, keys.RunnerLastRttKey{RunnerID: rid}, 0)
	writeConnection(tx, s, in)

	keys.Set(tx, keys.ActiveRunnerKey{Namespace: s.namespace, CreateTs: s.createTs, RunnerID: rid}, rid)
	keys.Set(tx, keys.AllRunnerKey{Namespace: s.namespace, CreateTs: s.createTs, RunnerID: rid}, rid)
	keys.Set(tx, keys.ActiveRunnerByNameKey{Namespace: s.namespace, Name: s.name, CreateTs: s.createTs, RunnerID: rid}, rid)
	keys.Set(tx, keys.AllRunnerByNameKey{Namespace: s.namespace, Name: s.name, CreateTs: s.createTs, RunnerID: rid}, rid)
	keys.Set(tx, keys.RunnerNameKey{Namespace: s.namespace, Name: s.name}, keys.Empty{})
	keys.Set(tx, keys.RunnerByKeyKey{Namespace: s.namespace, Name: s.name, Key: s.key}, keys.RunnerByKeyValue{RunnerID: rid, WorkflowID: rid})
	s.index(tx)
	return RegisterOutput{RunnerID: rid, New: true}, nil
}

// writeConnection writes the fields every registration sets: the socket's
// connection id, the version and slots it announced, its metadata and the
// connection time. (The caller records the connection time as the last
// ping, with setPing.)
func writeConnection(tx udb.Transaction, s state, in RegisterInput) {
	keys.Set(tx, keys.RunnerConnIDKey{RunnerID: s.id}, s.connID)
	keys.Set(tx, keys.RunnerVersionKey{RunnerID: s.id}, s.version)
	keys.Set(tx, keys.RunnerTotalSlotsKey{RunnerID: s.id}, s.total)
	keys.Set(tx, keys.RunnerRemainingSlotsKey{RunnerID: s.id}, s.remaining)
	keys.Set(tx, keys.RunnerProtocolVersionKey{RunnerID: s.id}, s.protocol)
	keys.Set(tx, keys.RunnerConnectedTsKey{RunnerID: s.id}, in.NowMs)
	if in.Metadata != nil {
		keys.SetChunked(tx, keys.RunnerMetadataKey{RunnerID: s.id}, string(in.Metadata))
	} else {
		keys.ClearChunked(tx, keys.RunnerMetadataKey{RunnerID: s.id})
	}
}
