package client

import (
	"context"
	"iter"

	"github.com/berthhq/berth/sdk/client/api"
)

// The models are the generated ones. Optional fields are pointers, nil when the server sent
// null or nothing. Timestamps are milliseconds since the Unix epoch.
type (
	Runner                 = api.Runner
	Envoy                  = api.Envoy
	Namespace              = api.Namespace
	Datacenter             = api.Datacenter
	RunnerConfig           = api.RunnerConfig
	RunnerConfigNormal     = api.RunnerConfigNormal
	RunnerConfigServerless = api.RunnerConfigServerless
	RunnerConfigResponse   = api.RunnerConfigResponse
	RunnerConfigVariant    = api.RunnerConfigVariant
	// ServerlessCheck is the outcome of a serverless health check: Success or Failure.
	ServerlessCheck = api.RunnerConfigsServerlessHealthCheckResponse
)

// The runner config variants, for RunnerConfigListOptions.Variant.
const (
	VariantNormal     = api.RunnerConfigVariantNormal
	VariantServerless = api.RunnerConfigVariantServerless
)

// RunnersAPI lists runners and runner names of the client's namespace, and drains runners.
type RunnersAPI struct{ c *Client }

// RunnerListOptions filters GET /runners. The zero value lists the runners that have not
// stopped, newest first, in pages of the server's default size (100).
type RunnerListOptions struct {
	Name           string   // only runners of this name (pool)
	RunnerIDs      []string // only these runners
	IncludeStopped bool     // stopped runners too
	Limit          int      // page size; 0 for the server's default
	Cursor         string   // where to start: a Page.Next; "" for the first page
}

// List returns one page of runners.
func (a *RunnersAPI) List(ctx context.Context, o RunnerListOptions) (Page[Runner], error) {
	l, err := limit(o.Limit)
	if err != nil {
		return Page[Runner]{}, err
	}
	p := &api.RunnersListParams{
		Namespace: a.c.namespace,
		Name:      optional(o.Name),
		RunnerId:  optionalSlice(o.RunnerIDs),
		Limit:     l,
		Cursor:    optional(o.Cursor),
	}
	if o.IncludeStopped {
		p.IncludeStopped = &o.IncludeStopped
	}
	r, err := decode[api.RunnersListResponse](a.c.raw.RunnersList(ctx, p))
	return Page[Runner]{Items: r.Runners, Next: next(r.Pagination.Cursor)}, err
}

// All iterates over every runner matching o, from o.Cursor on, fetching pages as needed.
func (a *RunnersAPI) All(ctx context.Context, o RunnerListOptions) iter.Seq2[Runner, error] {
	return All(ctx, o.Cursor, func(ctx context.Context, cursor string) (Page[Runner], error) {
		o.Cursor = cursor
		return a.List(ctx, o)
	})
}

// Drain drains the runner (POST /runners/{runner_id}/drain) and returns it as the drain left
// it: drain_ts set, and stop_ts too when no actor was on it. Draining a draining or stopped
// runner changes nothing.
func (a *RunnersAPI) Drain(ctx context.Context, runnerID string) (Runner, error) {
	r, err := decode[api.RunnersDrainResponse](a.c.raw.RunnersDrain(ctx, runnerID, &api.RunnersDrainParams{Namespace: a.c.namespace}))
	return r.Runner, err
}

// NameListOptions pages a list of names.
type NameListOptions struct {
	Limit  int    // page size; 0 for the server's default
	Cursor string // where to start: a Page.Next; "" for the first page
}

// ListNames returns one page of the runner names (pools) of the namespace, in ascending order.
func (a *RunnersAPI) ListNames(ctx context.Context, o NameListOptions) (Page[string], error) {
	l, err := limit(o.Limit)
	if err != nil {
		return Page[string]{}, err
	}
	r, err := decode[api.RunnersListNamesResponse](a.c.raw.RunnersListNames(ctx, &api.RunnersListNamesParams{
		Namespace: a.c.namespace,
		Limit:     l,
		Cursor:    optional(o.Cursor),
	}))
	return Page[string]{Items: r.Names, Next: next(r.Pagination.Cursor)}, err
}

// AllNames iterates over every runner name of the namespace, from o.Cursor on.
func (a *RunnersAPI) AllNames(ctx context.Context, o NameListOptions) iter.Seq2[string, error] {
	return All(ctx, o.Cursor, func(ctx context.Context, cursor string) (Page[string], error) {
		o.Cursor = cursor
		return a.ListNames(ctx, o)
	})
}

// EnvoysAPI lists and drains envoys of the client's namespace.
type EnvoysAPI struct{ c *Client }

// EnvoyListOptions filters GET /envoys. The zero value lists every envoy, newest first.
type EnvoyListOptions struct {
	Pool      string   // only envoys of this pool
	EnvoyKeys []string // only these envoys
	Limit     int      // page size; 0 for the server's default
	Cursor    string   // where to start: a Page.Next; "" for the first page
}

// List returns one page of envoys.
func (a *EnvoysAPI) List(ctx context.Context, o EnvoyListOptions) (Page[Envoy], error) {
	l, err := limit(o.Limit)
	if err != nil {
		return Page[Envoy]{}, err
	}
	r, err := decode[api.EnvoysListResponse](a.c.raw.EnvoysList(ctx, &api.EnvoysListParams{
		Namespace: a.c.namespace,
		Name:      optional(o.Pool),
		EnvoyKey:  optionalSlice(o.EnvoyKeys),
		Limit:     l,
		Cursor:    optional(o.Cursor),
	}))
	return Page[Envoy]{Items: r.Envoys, Next: next(r.Pagination.Cursor)}, err
}

// All iterates over every envoy matching o, from o.Cursor on.
func (a *EnvoysAPI) All(ctx context.Context, o EnvoyListOptions) iter.Seq2[Envoy, error] {
	return All(ctx, o.Cursor, func(ctx context.Context, cursor string) (Page[Envoy], error) {
		o.Cursor = cursor
		return a.List(ctx, o)
	})
}

// Drain drains the envoy (POST /envoys/{envoy_key}/drain, a berth extension) and returns it
// as the drain left it: stop_ts set. Draining a draining envoy changes nothing.
func (a *EnvoysAPI) Drain(ctx context.Context, envoyKey string) (Envoy, error) {
	r, err := decode[api.EnvoysDrainResponse](a.c.raw.EnvoysDrain(ctx, envoyKey, &api.EnvoysDrainParams{Namespace: a.c.namespace}))
	return r.Envoy, err
}

// NamespacesAPI lists and creates namespaces. Namespaces are not themselves namespaced: the
// client's namespace plays no part here.
type NamespacesAPI struct{ c *Client }

// NamespaceListOptions filters GET /namespaces.
type NamespaceListOptions struct {
	Name         string   // only the namespace with this name
	NamespaceIDs []string // only these namespaces
	Limit        int      // page size; 0 for the server's default
	Cursor       string   // where to start: a Page.Next; "" for the first page
}

// List returns one page of namespaces.
func (a *NamespacesAPI) List(ctx context.Context, o NamespaceListOptions) (Page[Namespace], error) {
	l, err := limit(o.Limit)
	if err != nil {
		return Page[Namespace]{}, err
	}
	r, err := decode[api.NamespacesListResponse](a.c.raw.NamespacesList(ctx, &api.NamespacesListParams{
		Name:        optional(o.Name),
		NamespaceId: optionalSlice(o.NamespaceIDs),
		Limit:       l,
		Cursor:      optional(o.Cursor),
	}))
	return Page[Namespace]{Items: r.Namespaces, Next: next(r.Pagination.Cursor)}, err
}

// All iterates over every namespace matching o, from o.Cursor on.
func (a *NamespacesAPI) All(ctx context.Context, o NamespaceListOptions) iter.Seq2[Namespace, error] {
	return All(ctx, o.Cursor, func(ctx context.Context, cursor string) (Page[Namespace], error) {
		o.Cursor = cursor
		return a.List(ctx, o)
	})
}

// Create creates a namespace. A name in use is an *APIError namespace.name_not_unique (409);
// a name the engine refuses is namespace.failed_to_create (400) with the reason.
func (a *NamespacesAPI) Create(ctx context.Context, name, displayName string) (Namespace, error) {
	r, err := decode[api.NamespacesCreateResponse](a.c.raw.NamespacesCreate(ctx, api.NamespacesCreateRequest{
		Name:        name,
		DisplayName: displayName,
	}))
	return r.Namespace, err
}

// DatacentersAPI lists the datacenters of the engine's topology.
type DatacentersAPI struct{ c *Client }

// List returns every datacenter (the list is never paged).
func (a *DatacentersAPI) List(ctx context.Context) ([]Datacenter, error) {
	r, err := decode[api.DatacentersListResponse](a.c.raw.DatacentersList(ctx, nil))
	return r.Datacenters, err
}

// RunnerConfigsAPI reads and writes the runner configs of the client's namespace.
type RunnerConfigsAPI struct{ c *Client }

// RunnerConfigListOptions filters GET /runner-configs.
type RunnerConfigListOptions struct {
	Variant     RunnerConfigVariant // VariantNormal or VariantServerless; "" for both
	RunnerNames []string            // only these runner names
	Limit       int                 // the most configs; 0 for the server's default
}

// List returns the runner configs of the namespace: runner name → datacenter name → config.
// The list is never paged.
func (a *RunnerConfigsAPI) List(ctx context.Context, o RunnerConfigListOptions) (map[string]map[string]RunnerConfigResponse, error) {
	l, err := limit(o.Limit)
	if err != nil {
		return nil, err
	}
	p := &api.RunnerConfigsListParams{
		Namespace:  a.c.namespace,
		RunnerName: optionalSlice(o.RunnerNames),
		Limit:      l,
	}
	if o.Variant != "" {
		p.Variant = &o.Variant
	}
	r, err := decode[api.RunnerConfigsListResponse](a.c.raw.RunnerConfigsList(ctx, p))
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]RunnerConfigResponse, len(r.RunnerConfigs))
	for name, dcs := range r.RunnerConfigs {
		out[name] = dcs.Datacenters
	}
	return out, nil
}

// Upsert sets the config of runnerName in each datacenter named in datacenters (by
// datacenter name). Every other datacenter of the topology loses its config for runnerName.
// It reports whether a serverless endpoint's settings changed.
func (a *RunnerConfigsAPI) Upsert(ctx context.Context, runnerName string, datacenters map[string]RunnerConfig) (endpointConfigChanged bool, err error) {
	if datacenters == nil {
		datacenters = map[string]RunnerConfig{} // no datacenter: removed everywhere
	}
	r, err := decode[api.RunnerConfigsUpsertResponse](a.c.raw.RunnerConfigsUpsert(ctx, runnerName,
		&api.RunnerConfigsUpsertParams{Namespace: a.c.namespace},
		api.RunnerConfigsUpsertRequest{Datacenters: datacenters}))
	return r.EndpointConfigChanged, err
}

// Delete removes the config of runnerName from every datacenter.
func (a *RunnerConfigsAPI) Delete(ctx context.Context, runnerName string) error {
	_, err := decode[api.EmptyObject](a.c.raw.RunnerConfigsDelete(ctx, runnerName,
		&api.RunnerConfigsDeleteParams{Namespace: a.c.namespace}))
	return err
}

// RefreshMetadata makes every datacenter where runnerName is serverless fetch its
// /metadata now. A failed fetch is an *APIError
// serverless_runner_pool.failed_to_fetch_metadata (400); a pool serverless nowhere is
// core.internal_error (500), as on the Rivet engine.
func (a *RunnerConfigsAPI) RefreshMetadata(ctx context.Context, runnerName string) error {
	_, err := decode[api.EmptyObject](a.c.raw.RunnerConfigsRefreshMetadata(ctx, runnerName,
		&api.RunnerConfigsRefreshMetadataParams{Namespace: a.c.namespace}, api.EmptyObject{}))
	return err
}

// ServerlessHealthCheck makes the engine call url's /metadata once, with headers, and
// returns what it found. A failing endpoint is a Failure, not an error.
func (a *RunnerConfigsAPI) ServerlessHealthCheck(ctx context.Context, url string, headers map[string]string) (ServerlessCheck, error) {
	body := api.RunnerConfigsServerlessHealthCheckRequest{Url: url}
	if len(headers) > 0 {
		body.Headers = &headers
	}
	return decode[ServerlessCheck](a.c.raw.RunnerConfigsServerlessHealthCheck(ctx,
		&api.RunnerConfigsServerlessHealthCheckParams{Namespace: a.c.namespace}, body))
}
