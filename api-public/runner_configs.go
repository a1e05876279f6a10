package apipublic

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/rerr"
)

// Runner configs live in each datacenter's store, one config per (namespace, runner name) per
// datacenter. The public API shows and sets them for every datacenter at once, by datacenter
// name; each datacenter's api-peer reads and writes its own (see api-peer/runner_configs.go).

// RunnerConfigsListResponse is the body of GET /runner-configs: by runner name, by
// datacenter name, each datacenter's RunnerConfigResponse exactly as its api-peer sent it.
type RunnerConfigsListResponse struct {
	RunnerConfigs map[string]RunnerConfigDatacenters `json:"runner_configs"`
	Pagination    apihttp.Pagination                 `json:"pagination"`
}

// RunnerConfigDatacenters is one runner name's configs, by datacenter name.
type RunnerConfigDatacenters struct {
	Datacenters map[string]json.RawMessage `json:"datacenters"`
}

// RunnerConfigsUpsertRequest is the body of PUT /runner-configs/{runner_name}: a
// RunnerConfig per datacenter name (see runnerconfig.ParseRequest). Datacenters is required;
// {} removes the config everywhere.
type RunnerConfigsUpsertRequest struct {
	Datacenters map[string]json.RawMessage `json:"datacenters"`
}

// peerRunnerConfigs is api-peer's GET /runner-configs answer, each config kept as sent.
type peerRunnerConfigs struct {
	RunnerConfigs map[string]json.RawMessage `json:"runner_configs"`
	Pagination    apihttp.Pagination         `json:"pagination"`
}

// listRunnerConfigs serves GET /runner-configs: the same query to every datacenter's
// api-peer, the answers merged by runner name and datacenter name. As in the Rivet engine,
// each datacenter applies the limit, cursor and filters to its own configs, the merged
// result is not cut to the limit, and pagination.cursor is always null; a datacenter that
// fails is logged and left out, and the request fails only when every datacenter fails
// (apihttp.Succeeded: a 4xx first, e.g. namespace.not_found).
func (s *Server) listRunnerConfigs(c echo.Context) error {
	var q apitypes.RunnerConfigsListQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	if err := checkListQuery(q); err != nil {
		return err
	}
	query, err := apihttp.EncodeQuery(q)
	if err != nil {
		return rerr.Internal(err)
	}
	ctx := c.Request().Context()
	res, err := fanOutGet[peerRunnerConfigs](ctx, s, "/runner-configs", query)
	if err != nil {
		return err
	}
	out := RunnerConfigsListResponse{RunnerConfigs: map[string]RunnerConfigDatacenters{}}
	for _, r := range res {
		for name, cfg := range r.Value.RunnerConfigs {
			dcs, ok := out.RunnerConfigs[name]
			if !ok {
				dcs = RunnerConfigDatacenters{Datacenters: map[string]json.RawMessage{}}
				out.RunnerConfigs[name] = dcs
			}
			dcs.Datacenters[r.Datacenter.Name] = cfg
		}
	}
	return c.JSON(http.StatusOK, out)
}

// checkListQuery refuses here what every datacenter would refuse, naming the field, before
// any datacenter is asked.
func checkListQuery(q apitypes.RunnerConfigsListQuery) error {
	if q.Namespace == "" {
		return rerr.BadRequest("namespace", "must not be empty")
	}
	if q.Cursor != nil {
		if err := runnerconfig.CheckCursor(*q.Cursor); err != nil {
			return err
		}
	}
	for _, name := range q.RunnerNames {
		if err := runnerconfig.CheckName("runner_name", name); err != nil {
			return err
		}
	}
	return nil
}

// upsertRunnerConfig serves PUT /runner-configs/{runner_name}: every datacenter of the
// topology named in the body gets its config, every other one loses its config for the
// runner name.
//
// Before anything is written, the request is checked whole: a datacenter name not in the
// topology is datacenter.not_found naming it, and each config is checked as its datacenter
// will check it (runnerconfig.ParseRequest, errors naming datacenters.<name>.<field>). Then
// the writes go to every datacenter at once, each within Deps.DatacenterTimeout. The request
// fails if any datacenter fails, with the first failure in topology order, its metadata
// naming the datacenter; the datacenters that succeeded keep what they wrote (the writes are
// not one transaction across datacenters), and sending the request again converges, since
// every write is idempotent. endpoint_config_changed is true when any datacenter says so.
func (s *Server) upsertRunnerConfig(c echo.Context) error {
	namespace, name, err := apitypes.RunnerConfigTarget(c)
	if err != nil {
		return err
	}
	var body RunnerConfigsUpsertRequest
	if err := apihttp.BindJSON(c, &body); err != nil {
		return err
	}
	if body.Datacenters == nil {
		return rerr.BadRequest("datacenters", "required")
	}
	for _, dc := range slices.Sorted(maps.Keys(body.Datacenters)) {
		if _, ok := s.deps.Topology.ByName(dc); !ok {
			return rerr.DatacenterNotFound(dc)
		}
	}
	for _, dc := range s.deps.Topology.Datacenters {
		if raw, ok := body.Datacenters[dc.Name]; ok {
			cfg, err := runnerconfig.ParseRequest(raw, "datacenters."+dc.Name, 0)
			if err != nil {
				return err
			}
			if err := runnerconfig.CheckDestination(cfg, s.deps.Outbound); err != nil {
				return err
			}
		}
	}
	ctx := c.Request().Context()
	query := url.Values{"namespace": {namespace}}
	path := "/runner-configs/" + name // PeerClient escapes it; CheckName kept '/' out
	results := apihttp.FanOut(ctx, s.deps.Topology.Datacenters, s.deps.DatacenterTimeout,
		func(ctx context.Context, dc apihttp.Datacenter) (bool, error) {
			raw, ok := body.Datacenters[dc.Name]
			if !ok {
				return false, s.deps.Peers.Delete(ctx, dc, path, query, nil)
			}
			var out apitypes.RunnerConfigsUpsertResponse
			err := s.deps.Peers.Put(ctx, dc, path, query, raw, &out)
			return out.EndpointConfigChanged, err
		})
	if err := writeError(ctx, results); err != nil {
		return err
	}
	changed := false
	for _, r := range results {
		changed = changed || r.Value
	}
	return c.JSON(http.StatusOK, apitypes.RunnerConfigsUpsertResponse{EndpointConfigChanged: changed})
}

// deleteRunnerConfig serves DELETE /runner-configs/{runner_name}: the config goes in every
// datacenter (a datacenter without one answers {} too). It fails if any datacenter fails, as
// upsertRunnerConfig does.
func (s *Server) deleteRunnerConfig(c echo.Context) error {
	namespace, name, err := apitypes.RunnerConfigTarget(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	query := url.Values{"namespace": {namespace}}
	results := apihttp.FanOut(ctx, s.deps.Topology.Datacenters, s.deps.DatacenterTimeout,
		func(ctx context.Context, dc apihttp.Datacenter) (struct{}, error) {
			return struct{}{}, s.deps.Peers.Delete(ctx, dc, "/runner-configs/"+name, query, nil)
		})
	if err := writeError(ctx, results); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apitypes.RunnerConfigsDeleteResponse{})
}

// writeError returns the first failure of a fan-out write in topology order, or nil, after
// logging every failure. A catalog error gets the datacenter's name as metadata "datacenter"
// (datacenter.unreachable already has it), so the answer says which datacenter failed.
func writeError[T any](ctx context.Context, results []apihttp.DatacenterResult[T]) error {
	for _, r := range results {
		if r.Err != nil {
			apihttp.Logger(ctx).WarnContext(ctx, "datacenter failed in a fan-out write",
				"datacenter", r.Datacenter.Name, "error", r.Err.Error())
		}
	}
	err := apihttp.FirstError(results)
	if err == nil {
		return nil
	}
	e, ok := rerr.As(err)
	if !ok {
		return err
	}
	if _, named := e.Metadata["datacenter"]; named {
		return err
	}
	for _, r := range results {
		if r.Err == err {
			return e.WithMeta("datacenter", r.Datacenter.Name)
		}
	}
	return err
}
