package apipublic

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/rerr"
)

// serverlessHealthCheck serves POST /runner-configs/serverless-health-check: this
// datacenter's api-peer makes the call (from this node, under its outbound policy) and its
// answer is returned as is.
func (s *Server) serverlessHealthCheck(c echo.Context) error {
	namespace, err := apitypes.RunnerConfigNamespace(c)
	if err != nil {
		return err
	}
	var body apitypes.RunnerConfigsServerlessHealthCheckRequest
	if err := apihttp.BindJSON(c, &body); err != nil {
		return err
	}
	if body.URL == nil {
		return rerr.BadRequest("url", "required")
	}
	ctx := c.Request().Context()
	var out json.RawMessage
	if err := s.deps.Peers.Post(ctx, s.deps.Topology.LocalDatacenter(), "/runner-configs/serverless-health-check",
		url.Values{"namespace": {namespace}}, body, &out); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// refreshMetadata serves POST /runner-configs/{runner_name}/refresh-metadata: every
// datacenter refreshes its own config of the pool. Datacenters where the pool is not
// serverless are skipped; a failed fetch anywhere fails the request (the first in topology
// order); a pool serverless nowhere is core.internal_error, as on the reference.
func (s *Server) refreshMetadata(c echo.Context) error {
	namespace, name, err := apitypes.RunnerConfigTarget(c)
	if err != nil {
		return err
	}
	var body apitypes.RunnerConfigsRefreshMetadataRequest
	if err := apihttp.BindJSON(c, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	query := url.Values{"namespace": {namespace}}
	results := apihttp.FanOut(ctx, s.deps.Topology.Datacenters, s.deps.DatacenterTimeout,
		func(ctx context.Context, dc apihttp.Datacenter) (struct{}, error) {
			return struct{}{}, s.deps.Peers.Post(ctx, dc, "/runner-configs/"+name+"/refresh-metadata", query, struct{}{}, nil)
		})
	var firstErr error
	refreshed := false
	for _, r := range results {
		switch {
		case r.Err == nil:
			refreshed = true
		case rerr.Is(r.Err, rerr.CodeCoreInternalError):
			// not a serverless pool there (or that datacenter failed): logged by writeError below
		case firstErr == nil:
			firstErr = r.Err
		}
	}
	if firstErr != nil {
		return firstErr
	}
	if !refreshed {
		return writeError(ctx, results)
	}
	return c.JSON(http.StatusOK, struct{}{})
}
