package actor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Input limits (Rivet's for keys and input; berth's for names and selectors).
const (
	MaxKeyLen      = 1024
	MaxInputLen    = 4 << 20
	MaxNameLen     = 128
	MaxSelectorLen = 128
)

// CreateInput is a new actor.
type CreateInput struct {
	Namespace     id.ID
	NamespaceName string // for errors
	// ActorID is drawn by the caller (id.New with the datacenter label), so that retries of
	// the transaction create the same actor.
	ActorID     id.ID
	Name        string
	Key         *string
	Input       []byte
	Selector    string // runner_name_selector: the pool
	CrashPolicy string
	NowMs       int64
	Datacenter  string // for the returned Actor
	Config      Config
	// Reserved says the key was reserved for ActorID across datacenters (ops/keyres): the
	// create then also reads the id's fence and fails with ErrFenced if another datacenter
	// fenced it. False in a single datacenter, where nothing is read beyond the key index.
	Reserved bool
	// Pinned says the request named this datacenter (`datacenter`, `rvt-region`): the
	// engine then creates the actor here whatever its pool offers, instead of choosing a
	// datacenter whose pool has a free host (engine/pegboard, placement.go). Not read here.
	Pinned bool
}

// ErrFenced is the cause of the internal error of a create whose actor id was fenced
// (ops/keyres.Fence): its key reservation was handed to another actor, and the caller must
// start again with a new id.
var ErrFenced = errors.New("actor id fenced: its key reservation was taken over")

// CreateOutput is the created actor and what its placement asks of the engine.
type CreateOutput struct {
	Actor   Actor
	Effects Effects
}

// CheckCreate validates a create; errors name the field.
func CheckCreate(in CreateInput) error {
	switch {
	case in.Name == "":
		return rerr.BadRequest("name", "must not be empty")
	case len(in.Name) > MaxNameLen:
		return rerr.BadRequest("name", "longer than 128 bytes")
	case !utf8.ValidString(in.Name):
		return rerr.BadRequest("name", "not valid UTF-8")
	case in.Selector == "":
		return rerr.BadRequest("runner_name_selector", "must not be empty")
	case len(in.Selector) > MaxSelectorLen:
		return rerr.BadRequest("runner_name_selector", "longer than 128 bytes")
	case !slices.Contains(CrashPolicies, in.CrashPolicy):
		return rerr.BadRequest("crash_policy", "must be one of "+strings.Join(CrashPolicies, ", "))
	case len(in.Input) > MaxInputLen:
		return rerr.ActorInputTooLarge(MaxInputLen)
	}
	if in.Key != nil {
		switch k := *in.Key; {
		case k == "":
			return rerr.ActorEmptyKey()
		case len(k) > MaxKeyLen:
			return rerr.ActorKeyTooLarge(MaxKeyLen, k[:64])
		case !utf8.ValidString(k):
			return rerr.BadRequest("key", "not valid UTF-8")
		}
	}
	return nil
}

// Create creates an actor and places it (or queues it, or, sleep policy with no capacity,
// leaves it sleeping with error no_capacity). A key must be free among the live actors of
// (namespace, name): else actor.duplicate_key naming the actor that holds it. The pool
// needs a runner config in this datacenter (created when its first runner connects), else
// actor.no_runner_config_configured. Serializable reads of the key index and the config.
func Create(ctx context.Context, tx udb.Transaction, in CreateInput) (CreateOutput, error) {
	if err := CheckCreate(in); err != nil {
		return CreateOutput{}, err
	}
	if _, found, err := keys.Get(ctx, tx, keys.RunnerConfigDataKey{Namespace: in.Namespace, Name: in.Selector}); err != nil {
		return CreateOutput{}, corrupt.Mark("runner config", err)
	} else if !found {
		return CreateOutput{}, rerr.ActorNoRunnerConfigConfigured(in.NamespaceName, in.Selector)
	}
	if in.Key != nil {
		holder, err := liveByKey(ctx, tx, in.Namespace, in.Name, *in.Key)
		if err != nil {
			return CreateOutput{}, err
		}
		if !holder.IsZero() {
			return CreateOutput{}, rerr.ActorDuplicateKey(*in.Key, holder.String())
		}
	}
	aid := in.ActorID
	if in.Reserved {
		if _, fenced, err := keys.Get(ctx, tx, keys.KeyFenceKey{ActorID: aid}); err != nil {
			return CreateOutput{}, corrupt.Mark("actor", err)
		} else if fenced {
			return CreateOutput{}, rerr.Internal(fmt.Errorf("actor %s: %w", aid, ErrFenced))
		}
	}
	if _, taken, err := keys.Get(ctx, tx, keys.ActorStateKey{ActorID: aid}); err != nil || taken {
		if err == nil {
			err = rerr.Internal(errors.New("actor id " + aid.String() + " drawn twice"))
		}
		return CreateOutput{}, corrupt.Mark("actor", err)
	}
	keys.Set(tx, keys.ActorCreateTsKey{ActorID: aid}, in.NowMs)
	keys.Set(tx, keys.ActorWorkflowIDKey{ActorID: aid}, aid)
	keys.Set(tx, keys.ActorNamespaceIDKey{ActorID: aid}, in.Namespace)
	keys.Set(tx, keys.ActorDataNameKey{ActorID: aid}, in.Name)
	if in.Key != nil {
		keys.Set(tx, keys.ActorKeyKey{ActorID: aid}, *in.Key)
		keys.Set(tx, keys.ActorByKeyKey{Namespace: in.Namespace, Name: in.Name, Key: *in.Key, CreateTs: in.NowMs, ActorID: aid},
			keys.ActorByKeyValue{WorkflowID: aid})
	}
	keys.Set(tx, keys.ActorRunnerNameSelectorKey{ActorID: aid}, in.Selector)
	keys.Set(tx, keys.ActiveActorKey{Namespace: in.Namespace, Name: in.Name, CreateTs: in.NowMs, ActorID: aid}, aid)
	keys.Set(tx, keys.AllActorKey{Namespace: in.Namespace, Name: in.Name, CreateTs: in.NowMs, ActorID: aid}, aid)
	nameKey := keys.ActorNameKey{Namespace: in.Namespace, Name: in.Name}
	if _, known, err := keys.Get(ctx, tx.Snapshot(), nameKey); err != nil {
		return CreateOutput{}, corrupt.Mark("actor", err)
	} else if !known {
		keys.Set(tx, nameKey, keys.ActorNameValue{Metadata: "{}"})
	}
	if in.Input != nil {
		keys.SetChunked(tx, keys.ActorInputKey{ActorID: aid}, in.Input)
	}
	m := newMachine(ctx, tx, in.Config, in.NowMs)
	a := &actor{id: aid, st: keys.ActorState{
		V: keys.ActorStateVersion, Phase: keys.PhasePending, Namespace: in.Namespace, Name: in.Name, Key: in.Key,
		Selector: in.Selector, CreateTs: in.NowMs, CrashPolicy: in.CrashPolicy, LastEventIdx: -1,
	}, created: true, input: in.Input}
	if err := m.place(a, false, false); err != nil {
		return CreateOutput{}, err
	}
	m.save(a)
	return CreateOutput{Actor: View(aid, a.st, in.Datacenter), Effects: *m.eff}, nil
}

// Reads are keys and key ranges an op is about to read, for its caller to fetch ahead
// (udb.ReadTransaction.Prefetch).
type Reads struct {
	Keys   [][]byte
	Ranges []udb.KeyRange
}

// CreateReads are the reads Create and GetOrCreate of in begin with, whatever the store
// holds: a batch of creates (engine/pegboard) fetches those of all its creates in one
// round trip before running them one after the other, each waiting on its reads in turn.
// The pool's reads (its config, whether it hosts envoys, its queue of pending actors and
// its runners' allocation index) are the same for every create of the pool: a batch
// fetches them once.
func CreateReads(in CreateInput) Reads {
	queueBegin, queueEnd := keys.PendingActorKeyRange(in.Namespace, in.Selector)
	allocBegin, allocEnd := keys.RunnerAllocIdxKeyRange(in.Namespace, in.Selector)
	r := Reads{Keys: [][]byte{
		keys.RunnerConfigDataKey{Namespace: in.Namespace, Name: in.Selector}.Pack(),
		keys.RunnerConfigProtocolVersionKey{Namespace: in.Namespace, Name: in.Selector}.Pack(),
		keys.ActorStateKey{ActorID: in.ActorID}.Pack(),
		keys.ActorNameKey{Namespace: in.Namespace, Name: in.Name}.Pack(),
	}, Ranges: []udb.KeyRange{{Begin: queueBegin, End: queueEnd}, {Begin: allocBegin, End: allocEnd}}}
	if in.Reserved {
		r.Keys = append(r.Keys, keys.KeyFenceKey{ActorID: in.ActorID}.Pack())
	}
	if in.Key != nil {
		begin, end := keys.ActorByKeyKeyRange(in.Namespace, in.Name, *in.Key).All()
		r.Ranges = append(r.Ranges, udb.KeyRange{Begin: begin, End: end})
	}
	return r
}

// liveByKey returns the live (not destroyed) actor holding key in (ns, name), or the zero
// id. Serializable: a concurrent create with the same key conflicts.
func liveByKey(ctx context.Context, tx udb.ReadTransaction, ns id.ID, name, key string) (id.ID, error) {
	begin, end := keys.ActorByKeyKeyRange(ns, name, key).All()
	kvs, err := tx.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return id.ID{}, err
	}
	for _, kv := range kvs {
		k, err := keys.UnpackActorByKeyKey(kv.Key)
		if err != nil {
			return id.ID{}, corrupt.Mark("actor", err)
		}
		v, err := keys.ActorByKeyKey{}.Decode(kv.Value)
		if err != nil {
			return id.ID{}, corrupt.Mark("actor", err)
		}
		if !v.IsDestroyed {
			return k.ActorID, nil
		}
	}
	return id.ID{}, nil
}

// GetOrCreateOutput is the actor holding the key, and whether this call created it.
type GetOrCreateOutput struct {
	CreateOutput
	Created bool
}

// GetOrCreate returns the live actor holding in.Key in (namespace, name), or creates it.
// Concurrent calls with one key create exactly one actor: they conflict on the key index,
// and the retried one finds the other's actor.
func GetOrCreate(ctx context.Context, tx udb.Transaction, in CreateInput) (GetOrCreateOutput, error) {
	if in.Key == nil {
		return GetOrCreateOutput{}, rerr.BadRequest("key", "required")
	}
	if err := CheckCreate(in); err != nil {
		return GetOrCreateOutput{}, err
	}
	holder, err := liveByKey(ctx, tx, in.Namespace, in.Name, *in.Key)
	if err != nil {
		return GetOrCreateOutput{}, err
	}
	if !holder.IsZero() {
		a, err := GetOne(ctx, tx, holder, in.Datacenter)
		return GetOrCreateOutput{CreateOutput: CreateOutput{Actor: a}}, err
	}
	out, err := Create(ctx, tx, in)
	return GetOrCreateOutput{CreateOutput: out, Created: true}, err
}
