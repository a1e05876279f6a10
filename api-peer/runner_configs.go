package apipeer

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/outbound"
	"github.com/berthhq/berth/pkg/udb"
)

// Runner configs of this datacenter. Unlike api-public, whose bodies carry a config per
// datacenter ({datacenters: {name: config}}), api-peer's carry this datacenter's config
// alone, as the Rivet engine's api-peer does:
//
//	GET    /runner-configs?namespace=&limit=&cursor=&variant=&runner_name=…
//	       → {runner_configs: {name: RunnerConfigResponse}, pagination: {cursor}}
//	PUT    /runner-configs/{runner_name}?namespace=  body: RunnerConfig → {endpoint_config_changed}
//	DELETE /runner-configs/{runner_name}?namespace=  → {}
//
// The list cursor is "{variant}:{name}" (runnerconfig.ListInput.Cursor).

// listRunnerConfigs serves GET /runner-configs from this datacenter's store, in name order
// (runnerconfig.List).
func (s *Server) listRunnerConfigs(c echo.Context) error {
	var q apitypes.RunnerConfigsListQuery
	ns, err := s.bindNamespaced(c, &q, &q.Namespace)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	in := runnerconfig.ListInput{Namespace: ns.NamespaceID, Variant: q.Variant, Names: q.RunnerNames, Limit: q.Limit}
	if q.Cursor != nil {
		in.Cursor = *q.Cursor
	}
	out, err := readPage(ctx, s.deps.DB, in.Limit, func(r udb.ReadTransaction) (runnerconfig.ListOutput, error) {
		return runnerconfig.List(ctx, r, in)
	})
	if err != nil {
		return err
	}
	resp := apitypes.RunnerConfigsListResponse{
		RunnerConfigs: make(map[string]runnerconfig.Response, len(out.Configs)),
		Pagination:    apihttp.Pagination{Cursor: out.Cursor},
	}
	for _, e := range out.Configs {
		resp.RunnerConfigs[e.Name] = runnerconfig.NewResponse(e)
	}
	return c.JSON(http.StatusOK, resp)
}

// upsertRunnerConfig serves PUT /runner-configs/{runner_name}: the body, one RunnerConfig
// (runnerconfig.ParseRequest: the API's defaults filled, checked), becomes this datacenter's
// config of the runner name.
func (s *Server) upsertRunnerConfig(c echo.Context) error {
	namespace, name, err := apitypes.RunnerConfigTarget(c)
	if err != nil {
		return err
	}
	var body json.RawMessage
	if err := apihttp.BindJSON(c, &body); err != nil {
		return err
	}
	cfg, err := runnerconfig.ParseRequest(body, "", 0)
	if err != nil {
		return err
	}
	var policy outbound.Policy
	if s.deps.Serverless != nil {
		policy = s.deps.Serverless.Policy()
	}
	if err := runnerconfig.CheckDestination(cfg, policy); err != nil {
		return err
	}
	ctx := c.Request().Context()
	ns, err := s.resolveNamespace(ctx, namespace)
	if err != nil {
		return err
	}
	v, err := udb.Transact(ctx, s.deps.DB, func(tx udb.Transaction) (runnerconfig.UpsertOutput, error) {
		return runnerconfig.Upsert(ctx, tx, runnerconfig.UpsertInput{Namespace: ns.NamespaceID, Name: name, Config: cfg})
	})
	if err != nil {
		return err
	}
	// As on the reference, a new endpoint's /metadata is fetched before answering; the
	// answer does not depend on it (engine/serverless.WriteFetchTimeout bounds the wait).
	if v.EndpointConfigChanged && cfg.Serverless != nil && s.deps.Serverless != nil {
		s.deps.Serverless.Written(ctx, ns.NamespaceID, name, cfg)
	}
	return c.JSON(http.StatusOK, apitypes.RunnerConfigsUpsertResponse{EndpointConfigChanged: v.EndpointConfigChanged})
}

// deleteRunnerConfig serves DELETE /runner-configs/{runner_name}: {} whether or not there
// was a config, as in Rivet.
func (s *Server) deleteRunnerConfig(c echo.Context) error {
	namespace, name, err := apitypes.RunnerConfigTarget(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	ns, err := s.resolveNamespace(ctx, namespace)
	if err != nil {
		return err
	}
	if _, err := udb.Transact(ctx, s.deps.DB, func(tx udb.Transaction) (runnerconfig.DeleteOutput, error) {
		return runnerconfig.Delete(ctx, tx, runnerconfig.DeleteInput{Namespace: ns.NamespaceID, Name: name})
	}); err != nil {
		return err
	}
	if s.deps.Serverless != nil {
		s.deps.Serverless.Deleted()
	}
	return c.JSON(http.StatusOK, apitypes.RunnerConfigsDeleteResponse{})
}
