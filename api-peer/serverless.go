package apipeer

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/outbound"
	"github.com/berthhq/berth/pkg/rerr"
)

// ServerlessService is what the runner-config endpoints need of the serverless pools
// (engine/serverless.Service).
type ServerlessService interface {
	// Policy is the outbound destination policy serverless URLs are checked against.
	Policy() outbound.Policy
	// HealthCheck fetches url's /metadata once: {success:{version}} or {failure:{error}}.
	HealthCheck(ctx context.Context, url string, headers map[string]string) any
	// Refresh fetches a pool's /metadata now and applies it.
	Refresh(ctx context.Context, ns id.ID, name string) error
	// Written is told of a config write that changed the pool's endpoint.
	Written(ctx context.Context, ns id.ID, name string, cfg keys.RunnerConfig)
	// Deleted is told of a deleted config: a serverless pool's hosts are drained.
	Deleted()
}

// Bounds of the health check's request.
const (
	maxHealthCheckURL     = 2048
	maxHealthCheckHeaders = 16
)

// serverlessHealthCheck serves POST /runner-configs/serverless-health-check: one /metadata
// call, answered 200 whatever it gives (docs/serverless.md, § 2.8).
func (s *Server) serverlessHealthCheck(c echo.Context) error {
	namespace, err := apitypes.RunnerConfigNamespace(c)
	if err != nil {
		return err
	}
	var body apitypes.RunnerConfigsServerlessHealthCheckRequest
	if err := apihttp.BindJSON(c, &body); err != nil {
		return err
	}
	switch {
	case body.URL == nil:
		return rerr.BadRequest("url", "required")
	case len(*body.URL) > maxHealthCheckURL:
		return rerr.BadRequest("url", "longer than "+strconv.Itoa(maxHealthCheckURL)+" bytes")
	case len(body.Headers) > maxHealthCheckHeaders:
		return rerr.BadRequest("headers", "more than "+strconv.Itoa(maxHealthCheckHeaders)+" headers")
	}
	ctx := c.Request().Context()
	if _, err := s.resolveNamespace(ctx, namespace); err != nil {
		return err
	}
	if s.deps.Serverless == nil {
		return rerr.Internal(errNoServerless)
	}
	return c.JSON(http.StatusOK, s.deps.Serverless.HealthCheck(ctx, *body.URL, body.Headers))
}

// refreshMetadata serves POST /runner-configs/{runner_name}/refresh-metadata: the pool's
// /metadata fetched and applied now; {} on success.
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
	ns, err := s.resolveNamespace(ctx, namespace)
	if err != nil {
		return err
	}
	if s.deps.Serverless == nil {
		return rerr.Internal(errNoServerless)
	}
	if err := s.deps.Serverless.Refresh(ctx, ns.NamespaceID, name); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, struct{}{})
}

var errNoServerless = errors.New("api-peer: no serverless service configured")
