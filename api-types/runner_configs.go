package apitypes

import (
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/rerr"
)

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

// RunnerConfigNamespace reads the ?namespace= of a runner-config route: required and not
// empty.
func RunnerConfigNamespace(c echo.Context) (string, error) {
	var q RunnerConfigsNamespaceQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return "", err
	}
	if q.Namespace == "" {
		return "", rerr.BadRequest("namespace", "must not be empty")
	}
	return q.Namespace, nil
}

// RunnerConfigTarget reads what a route of one runner config starts with: its namespace
// (RunnerConfigNamespace), then its {runner_name} (RunnerNameParam).
func RunnerConfigTarget(c echo.Context) (namespace, name string, err error) {
	if namespace, err = RunnerConfigNamespace(c); err != nil {
		return "", "", err
	}
	name, err = RunnerNameParam(c)
	return namespace, name, err
}

// RunnerConfigsServerlessHealthCheckRequest is the body of POST
// /runner-configs/serverless-health-check.
type RunnerConfigsServerlessHealthCheckRequest struct {
	URL     *string           `json:"url"`
	Headers map[string]string `json:"headers"`
}

// RunnerConfigsRefreshMetadataRequest is the body of POST
// /runner-configs/{runner_name}/refresh-metadata: {}.
type RunnerConfigsRefreshMetadataRequest struct{}
