package actor

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/ops/internal/cursor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/page"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Limits of List and ListNames.
const (
	DefaultListLimit = 100 // the API's default
	MaxListLimit     = page.MaxLimit
	// MaxListActorIDs is the most ids one listing may name (Rivet's limit).
	MaxListActorIDs = 32
)

// ListInput selects a namespace's actors, in one of three modes (Rivet's GET /actors):
//   - by ids (ActorIDs): those actors, whatever their state (IncludeDestroyed is not
//     looked at, as in Rivet); Name and Key must be empty;
//   - by name and key: the live actor holding the key, or with IncludeDestroyed every
//     actor that was created with it;
//   - by name: the actors of that name not destroyed, or with IncludeDestroyed all of them.
type ListInput struct {
	Namespace        id.ID
	Name             string
	Key              *string
	IncludeDestroyed bool
	ActorIDs         []id.ID
	// Limit is the page size: 0 means DefaultListLimit.
	Limit int
	// Cursor is the previous page's cursor, or a bare decimal create_ts (the Rivet
	// engine's cursor: the page starts at actors created before that millisecond).
	Cursor string
	// Datacenter is this datacenter's name, reported in each actor.
	Datacenter string
}

// CheckList reports a listing that selects no mode, or mixes them, as Rivet does
// (validation.invalid_input, validation.too_many_actor_ids), and a malformed cursor or
// limit (api.bad_request naming it). api-public checks with it before it fans out.
func CheckList(in ListInput) error {
	switch {
	case len(in.ActorIDs) > MaxListActorIDs:
		return rerr.ValidationTooManyActorIDs(MaxListActorIDs, len(in.ActorIDs))
	case len(in.ActorIDs) > 0 && (in.Name != "" || in.Key != nil):
		return rerr.ValidationInvalidInput("Cannot provide both actor_id and (name + key). Use either actor_id or (name + key).")
	case in.Key != nil && in.Name == "":
		return rerr.ValidationInvalidInput("Name is required when key is provided.")
	case len(in.ActorIDs) == 0 && in.Name == "":
		return rerr.ValidationInvalidInput("Name is required when not using actor_ids.")
	}
	if _, err := page.Limit(in.Limit, DefaultListLimit); err != nil {
		return err
	}
	_, err := decodeCursor(in.Cursor)
	return err
}

func decodeCursor(s string) (*cursor.Position, error) {
	return cursor.DecodeFor(s, func(tie []byte) bool { return len(tie) == id.Size })
}

// ListOutput is one page.
type ListOutput struct {
	Actors []Actor
	// Cursor names the page's last actor; nil on an empty page (see page.Cursor).
	Cursor *string
}

// Cursor returns the cursor that continues a listing after the actor (createTs, actorID):
// what List returns for a page ending there, for callers that merge pages (the
// cross-datacenter fan-out). Lists are ordered by create_ts descending, then by actor id
// bytes descending.
func Cursor(createTs int64, actorID id.ID) string { return cursor.Encode(createTs, actorID[:]) }

// List lists a namespace's actors (see ListInput for the modes), newest first: create_ts
// descending, actors created in the same millisecond by id descending. Paging with the
// returned cursor returns every actor exactly once, since the cursor names the last
// actor's (create_ts, id) and the next page starts strictly after it.
//
// Snapshot reads: a listing may be a few milliseconds stale, and must not make creates and
// lifecycle transitions retry. Index entries and state records are read at one read
// version, and an actor's indexes change in the transaction that changes its record, so a
// listing never shows an actor twice, nor one the index no longer names.
func List(ctx context.Context, r udb.ReadTransaction, in ListInput) (ListOutput, error) {
	if err := CheckList(in); err != nil {
		return ListOutput{}, err
	}
	limit, _ := page.Limit(in.Limit, DefaultListLimit)
	pos, _ := decodeCursor(in.Cursor)
	snap := r.Snapshot()
	var found []Actor
	var err error
	if len(in.ActorIDs) > 0 {
		found, err = listByIDs(ctx, snap, in, pos, limit)
	} else {
		found, err = listByIndex(ctx, snap, in, pos, limit)
	}
	if err != nil {
		return ListOutput{}, err
	}
	return ListOutput{Actors: found, Cursor: page.Cursor(found, func(a Actor) string { return Cursor(a.CreateTs, a.ActorID) })}, nil
}

// listByIndex scans one (create_ts, actor_id) index of the name in reverse from the cursor
// and loads up to n actors.
func listByIndex(ctx context.Context, snap udb.ReadTransaction, in ListInput, pos *cursor.Position, n int) ([]Actor, error) {
	var rng keys.CreateTsRange[id.ID]
	// entry returns the actor of an index row, and whether the listing takes it.
	var entry func(kv udb.KeyValue) (id.ID, bool, error)
	liveOnly := false
	switch {
	case in.Key != nil:
		rng = keys.ActorByKeyKeyRange(in.Namespace, in.Name, *in.Key)
		liveOnly = !in.IncludeDestroyed
		entry = func(kv udb.KeyValue) (id.ID, bool, error) {
			k, err := keys.UnpackActorByKeyKey(kv.Key)
			if err != nil {
				return id.ID{}, false, err
			}
			v, err := keys.ActorByKeyKey{}.Decode(kv.Value)
			return k.ActorID, err == nil && (in.IncludeDestroyed || !v.IsDestroyed), err
		}
	case in.IncludeDestroyed:
		rng = keys.AllActorKeyRange(in.Namespace, in.Name)
		entry = func(kv udb.KeyValue) (id.ID, bool, error) {
			k, err := keys.UnpackAllActorKey(kv.Key)
			return k.ActorID, err == nil, err
		}
	default:
		rng = keys.ActiveActorKeyRange(in.Namespace, in.Name)
		entry = func(kv udb.KeyValue) (id.ID, bool, error) {
			k, err := keys.UnpackActiveActorKey(kv.Key)
			return k.ActorID, err == nil, err
		}
	}
	begin, end := rng.All()
	switch {
	case pos == nil:
	case pos.Legacy:
		begin, end = rng.BeforeTs(pos.CreateTs)
	default:
		begin, end = rng.Before(pos.CreateTs, id.ID(pos.Tie))
	}
	opts := udb.RangeOptions{Reverse: true, Mode: udb.StreamingModeIterator}
	if !liveOnly {
		// Every row is taken: read at most n.
		opts.Limit, opts.Mode = n, udb.StreamingModeWantAll
	}
	it := snap.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), opts)
	var ids []id.ID
	for len(ids) < n && it.Next(ctx) {
		aid, take, err := entry(it.KeyValue())
		if err != nil {
			return nil, corrupt.Mark("actor index", err)
		}
		if !take {
			continue
		}
		ids = append(ids, aid)
		if liveOnly {
			// At most one live actor holds a key (Create checks it serializably): the
			// first one found is the holder, and nothing follows it.
			break
		}
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	prefetchStates(ctx, snap, ids)
	out := make([]Actor, 0, len(ids))
	for _, aid := range ids {
		st, found, err := keys.Get(ctx, snap, keys.ActorStateKey{ActorID: aid})
		switch {
		case err != nil:
			return nil, corrupt.Mark("actor", err)
		case !found:
			return nil, rerr.Corrupt("actor index", "entry for %s, which has no record", aid)
		}
		out = append(out, View(aid, st, in.Datacenter))
	}
	return out, withPoolErrors(ctx, snap, out)
}

// listByIDs loads the actors named in in.ActorIDs that belong to the namespace, sorts them
// in list order and returns up to n after the cursor.
func listByIDs(ctx context.Context, snap udb.ReadTransaction, in ListInput, pos *cursor.Position, n int) ([]Actor, error) {
	all, err := Get(ctx, snap, GetInput{ActorIDs: in.ActorIDs, Datacenter: in.Datacenter})
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, a := range all {
		if a.NamespaceID == in.Namespace && (pos == nil || pos.After(a.CreateTs, a.ActorID[:])) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b Actor) int {
		return cursor.Compare(a.CreateTs, a.ActorID[:], b.CreateTs, b.ActorID[:])
	})
	return out[:min(n, len(out))], nil
}

// Name is one actor name of a namespace with its metadata, a JSON object (`{}` unless a
// runner announced the name with metadata).
type Name struct {
	Name     string
	Metadata json.RawMessage
}

// ListNamesInput selects a page of a namespace's actor names.
type ListNamesInput struct {
	Namespace id.ID
	// AfterName continues a listing after this name (the previous page's cursor); ""
	// starts at the first name.
	AfterName string
	// Limit is the page size: 0 means DefaultListLimit.
	Limit int
}

// ListNamesOutput is one page of names in byte order.
type ListNamesOutput struct {
	Names []Name
	// Cursor is the page's last name; nil on an empty page.
	Cursor *string
}

// ListNames lists the actor names of the namespace (every name an actor was created with
// or a runner announced), in byte order, scanning forward after the cursor name.
//
// Snapshot reads: a listing may be a few milliseconds stale and must not make creates
// retry.
func ListNames(ctx context.Context, r udb.ReadTransaction, in ListNamesInput) (ListNamesOutput, error) {
	limit, err := page.Limit(in.Limit, DefaultListLimit)
	if err != nil {
		return ListNamesOutput{}, err
	}
	rng := keys.ActorNameKeyRange(in.Namespace)
	begin, end := rng.All()
	if in.AfterName != "" {
		begin, end = rng.After(in.AfterName)
	}
	kvs, err := r.Snapshot().GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end),
		udb.RangeOptions{Limit: limit, Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return ListNamesOutput{}, err
	}
	names := make([]Name, 0, len(kvs))
	for _, kv := range kvs {
		k, err := keys.UnpackActorNameKey(kv.Key)
		if err != nil {
			return ListNamesOutput{}, corrupt.Mark("actor name index", err)
		}
		v, err := k.Decode(kv.Value)
		if err != nil {
			return ListNamesOutput{}, corrupt.Mark("actor name index", err)
		}
		md := json.RawMessage(v.Metadata)
		if !json.Valid(md) {
			return ListNamesOutput{}, rerr.Corrupt("actor name index", "metadata of %s is not JSON", strconv.Quote(k.Name))
		}
		names = append(names, Name{Name: k.Name, Metadata: md})
	}
	return ListNamesOutput{Names: names, Cursor: page.Cursor(names, func(n Name) string { return n.Name })}, nil
}
