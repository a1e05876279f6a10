package client

import (
	"context"
	"encoding/base64"
	"iter"
	"net/http"
	"sort"

	"github.com/berthhq/berth/sdk/client/api"
)

// Actor models, the generated ones.
type (
	Actor       = api.Actor
	ActorError  = api.ActorError
	CrashPolicy = api.CrashPolicy
	KVValue     = api.ActorsKvGetResponse // a value of an actor's KV and when it was written
)

// The crash policies: what an actor that crashes does next.
const (
	CrashRestart = api.CrashPolicyRestart // placed again, with a backoff when it keeps crashing
	CrashSleep   = api.CrashPolicySleep   // sleeps until woken
	CrashDestroy = api.CrashPolicyDestroy // destroyed
)

// Actors returns the actor calls.
func (c *Client) Actors() *ActorsAPI { return &ActorsAPI{c: c} }

// ActorsAPI creates, lists, destroys, sleeps and reschedules actors of the client's
// namespace.
type ActorsAPI struct{ c *Client }

// ActorCreateOptions is a new actor. Name, Pool and CrashPolicy are required.
type ActorCreateOptions struct {
	Name        string
	Key         string      // unique among the live actors of Name; "" for none (Create only)
	Input       []byte      // handed to the actor at start; nil for none
	Pool        string      // the runner name (runner_name_selector) whose runners host it
	CrashPolicy CrashPolicy // CrashRestart, CrashSleep or CrashDestroy
	Datacenter  string      // the datacenter to create it in, by name; "" for the one called
}

// Create creates an actor. A key held by a live actor of the name is an *APIError
// actor.duplicate_key (409) whose Metadata["existing_actor_id"] names the holder.
func (a *ActorsAPI) Create(ctx context.Context, o ActorCreateOptions) (Actor, error) {
	body := api.ActorsCreateRequest{
		Name: o.Name, Key: optional(o.Key), RunnerNameSelector: o.Pool, CrashPolicy: o.CrashPolicy,
		Datacenter: optional(o.Datacenter),
	}
	if o.Input != nil {
		body.Input = &o.Input
	}
	r, err := decode[api.ActorsCreateResponse](a.c.raw.ActorsCreate(ctx, &api.ActorsCreateParams{Namespace: a.c.namespace}, body))
	return r.Actor, err
}

// GetOrCreate returns the live actor of o.Name holding o.Key (required), or creates it;
// created reports which. Concurrent calls with one key create one actor.
func (a *ActorsAPI) GetOrCreate(ctx context.Context, o ActorCreateOptions) (actor Actor, created bool, err error) {
	body := api.ActorsGetOrCreateRequest{
		Name: o.Name, Key: o.Key, RunnerNameSelector: o.Pool, CrashPolicy: o.CrashPolicy,
		Datacenter: optional(o.Datacenter),
	}
	if o.Input != nil {
		body.Input = &o.Input
	}
	r, err := decode[api.ActorsGetOrCreateResponse](a.c.raw.ActorsGetOrCreate(ctx, &api.ActorsGetOrCreateParams{Namespace: a.c.namespace}, body))
	return r.Actor, r.Created, err
}

// Get returns the actor, in any state (a destroyed one has DestroyTs set). An actor that
// does not exist in the namespace is an *APIError actor.not_found (404).
func (a *ActorsAPI) Get(ctx context.Context, actorID string) (Actor, error) {
	p, err := a.List(ctx, ActorListOptions{ActorIDs: []string{actorID}})
	if err != nil {
		return Actor{}, err
	}
	if len(p.Items) == 0 {
		return Actor{}, &APIError{Status: http.StatusNotFound, Group: "actor", Code: "not_found",
			Message: "The actor does not exist or was destroyed.", Metadata: map[string]any{"actor_id": actorID}}
	}
	return p.Items[0], nil
}

// ActorListOptions selects actors: by ActorIDs (at most 32, any state), or by Name, with Key
// the live actor holding it. IncludeDestroyed lists destroyed actors of the name (or every
// actor that held the key) too. Newest first.
type ActorListOptions struct {
	Name             string
	Key              string // with Name; "" for any
	ActorIDs         []string
	IncludeDestroyed bool
	Limit            int    // page size; 0 for the server's default
	Cursor           string // where to start: a Page.Next; "" for the first page
}

// List returns one page of actors.
func (a *ActorsAPI) List(ctx context.Context, o ActorListOptions) (Page[Actor], error) {
	l, err := limit(o.Limit)
	if err != nil {
		return Page[Actor]{}, err
	}
	p := &api.ActorsListParams{
		Namespace: a.c.namespace,
		Name:      optional(o.Name),
		Key:       optional(o.Key),
		ActorId:   optionalSlice(o.ActorIDs),
		Limit:     l,
		Cursor:    optional(o.Cursor),
	}
	if o.IncludeDestroyed {
		p.IncludeDestroyed = &o.IncludeDestroyed
	}
	r, err := decode[api.ActorsListResponse](a.c.raw.ActorsList(ctx, p))
	return Page[Actor]{Items: r.Actors, Next: next(r.Pagination.Cursor)}, err
}

// All iterates over every actor matching o, from o.Cursor on, fetching pages as needed.
func (a *ActorsAPI) All(ctx context.Context, o ActorListOptions) iter.Seq2[Actor, error] {
	return All(ctx, o.Cursor, func(ctx context.Context, cursor string) (Page[Actor], error) {
		o.Cursor = cursor
		return a.List(ctx, o)
	})
}

// Destroy destroys the actor and waits a few seconds for the destroy to finish (a running
// actor is stopped by its runner first); it returns once the destroy is recorded, which
// cannot be undone. Destroying a destroyed actor succeeds.
func (a *ActorsAPI) Destroy(ctx context.Context, actorID string) error {
	_, err := decode[api.EmptyObject](a.c.raw.ActorsDelete(ctx, actorID, &api.ActorsDeleteParams{Namespace: a.c.namespace}))
	return err
}

// Sleep puts the actor to sleep: a running one is stopped and sleeps; a waiting one sleeps
// at once.
func (a *ActorsAPI) Sleep(ctx context.Context, actorID string) error {
	_, err := decode[api.EmptyObject](a.c.raw.ActorsSleep(ctx, actorID, &api.ActorsSleepParams{Namespace: a.c.namespace}, api.EmptyObject{}))
	return err
}

// Reschedule places the actor again now: a running one is stopped and placed again, a
// sleeping or backing-off one is placed at once.
func (a *ActorsAPI) Reschedule(ctx context.Context, actorID string) error {
	_, err := decode[api.EmptyObject](a.c.raw.ActorsReschedule(ctx, actorID, &api.ActorsRescheduleParams{Namespace: a.c.namespace}, api.EmptyObject{}))
	return err
}

// KVGet reads one key of the actor's KV store (the key's raw bytes). A key without a
// value is an *APIError actor.kv_key_not_found (404).
func (a *ActorsAPI) KVGet(ctx context.Context, actorID string, key []byte) (KVValue, error) {
	return decode[KVValue](a.c.raw.ActorsKvGet(ctx, actorID, base64.RawURLEncoding.EncodeToString(key),
		&api.ActorsKvGetParams{Namespace: a.c.namespace}))
}

// ActorName is an actor name of the namespace with its metadata (a JSON object).
type ActorName struct {
	Name     string
	Metadata map[string]any
}

// ListNames returns one page of the actor names of the namespace, in ascending order.
func (a *ActorsAPI) ListNames(ctx context.Context, o NameListOptions) (Page[ActorName], error) {
	l, err := limit(o.Limit)
	if err != nil {
		return Page[ActorName]{}, err
	}
	r, err := decode[api.ActorsListNamesResponse](a.c.raw.ActorsListNames(ctx, &api.ActorsListNamesParams{
		Namespace: a.c.namespace,
		Limit:     l,
		Cursor:    optional(o.Cursor),
	}))
	items := make([]ActorName, 0, len(r.Names))
	for name, n := range r.Names {
		items = append(items, ActorName{Name: name, Metadata: n.Metadata})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	return Page[ActorName]{Items: items, Next: next(r.Pagination.Cursor)}, err
}

// AllNames iterates over every actor name of the namespace, from o.Cursor on.
func (a *ActorsAPI) AllNames(ctx context.Context, o NameListOptions) iter.Seq2[ActorName, error] {
	return All(ctx, o.Cursor, func(ctx context.Context, cursor string) (Page[ActorName], error) {
		o.Cursor = cursor
		return a.ListNames(ctx, o)
	})
}
