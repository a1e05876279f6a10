package apipublic

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/rerr"
)

// drainEnvoy serves POST /envoys/{envoy_key}/drain, a berth extension (the Rivet engine has
// no envoy drain in its API). An envoy key names no datacenter, so every datacenter's
// api-peer is asked in turn, and each that has the envoy drains it; the answer is the first
// one's envoy. In none, envoy.not_found.
func (s *Server) drainEnvoy(c echo.Context) error {
	key := c.Param("envoy_key")
	var q apitypes.EnvoysDrainQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	var found *apitypes.EnvoysDrainResponse
	path := "/envoys/" + url.PathEscape(key) + "/drain"
	for _, dc := range s.deps.Topology.Datacenters {
		var out apitypes.EnvoysDrainResponse
		err := s.deps.Peers.Post(c.Request().Context(), dc, path, url.Values{"namespace": {q.Namespace}}, nil, &out)
		switch {
		case rerr.Is(err, rerr.CodeEnvoyNotFound):
			continue
		case err != nil:
			return err
		}
		if found == nil {
			found = &out
		}
	}
	if found == nil {
		return rerr.EnvoyNotFound(key)
	}
	return c.JSON(http.StatusOK, found)
}
