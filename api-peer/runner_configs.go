package apipeer

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/rerr"
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

// RunnerConfigsListQuery is the query of GET /runner-configs, in api-peer and api-public
// alike. runner_names is the deprecated comma-separated form of runner_name.
type RunnerConfigsListQuery struct {
	Namespace   string                    `query:"namespace,required"`
	Limit       int                       `query:"limit,default=100,min=0"`
	Cursor      *string                   `query:"cursor"`
	Variant     *keys.RunnerConfigVariant `query:"variant"`
	RunnerNames []string                  `query:"runner_name,csv=runner_names"`
}

// RunnerConfigsListResponse is the body of api-peer's GET /runner-configs: this datacenter's
// configs by runner name.
type RunnerConfigsListResponse struct {
	RunnerConfigs map[string]runnerconfig.Response `json:"runner_configs"`
	Pagination    apihttp.Pagination               `json:"pagination"`
}

// RunnerConfigsNamespaceQuery is the query of PUT and DELETE /runner-configs/{runner_name}.
type RunnerConfigsNamespaceQuery struct {
	Namespace string `query:"namespace,required"`
}

// RunnerConfigsUpsertResponse is the body of PUT /runner-configs/{runner_name}.
type RunnerConfigsUpsertResponse struct {
	EndpointConfigChanged bool `json:"endpoint_config_changed"`
}

// RunnerConfigsDeleteResponse is the body of DELETE /runner-configs/{runner_name}: {}.
type RunnerConfigsDeleteResponse struct{}

// RunnerConfigPath is the api-peer path of one runner name's config, escaped for a URL.
func RunnerConfigPath(runnerName string) string {
	return "/runner-configs/" + url.PathEscape(runnerName)
}

// listRunnerConfigs serves GET /runner-configs from this datacenter's store, in name order
// (runnerconfig.List).
func (s *Server) listRunnerConfigs(c echo.Context) error {
	var q RunnerConfigsListQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	ctx := c.Request().Context()
	ns, err := s.resolveNamespace(ctx, "namespace", q.Namespace)
	if err != nil {
		return err
	}
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
	resp := RunnerConfigsListResponse{
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
	var q RunnerConfigsNamespaceQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	name, err := RunnerNameParam(c)
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
	ctx := c.Request().Context()
	ns, err := s.resolveNamespace(ctx, "namespace", q.Namespace)
	if err != nil {
		return err
	}
	v, err := s.deps.DB.Transact(ctx, func(tx udb.Transaction) (any, error) {
		return runnerconfig.Upsert(ctx, tx, runnerconfig.UpsertInput{Namespace: ns.NamespaceID, Name: name, Config: cfg})
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, RunnerConfigsUpsertResponse{EndpointConfigChanged: v.(runnerconfig.UpsertOutput).EndpointConfigChanged})
}

// deleteRunnerConfig serves DELETE /runner-configs/{runner_name}: {} whether or not there
// was a config, as in Rivet.
func (s *Server) deleteRunnerConfig(c echo.Context) error {
	var q RunnerConfigsNamespaceQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	name, err := RunnerNameParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	ns, err := s.resolveNamespace(ctx, "namespace", q.Namespace)
	if err != nil {
		return err
	}
	if _, err := s.deps.DB.Transact(ctx, func(tx udb.Transaction) (any, error) {
		return runnerconfig.Delete(ctx, tx, runnerconfig.DeleteInput{Namespace: ns.NamespaceID, Name: name})
	}); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, RunnerConfigsDeleteResponse{})
}

// RunnerNameParam returns the :runner_name path parameter, percent-decoded exactly once,
// checked with runnerconfig.CheckName (api.bad_request naming runner_name). echo matches
// routes on the escaped path when the request has one (URL.RawPath), and then hands the
// segment over still escaped.
func RunnerNameParam(c echo.Context) (string, error) {
	name := c.Param("runner_name")
	if c.Request().URL.RawPath != "" {
		u, err := url.PathUnescape(name)
		if err != nil {
			return "", rerr.BadRequest("runner_name", "bad percent-encoding")
		}
		name = u
	}
	return name, runnerconfig.CheckName("runner_name", name)
}
