package apipublic

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/rerr"
)

// drainRunner serves POST /runners/{runner_id}/drain: the runner id's datacenter label
// names the datacenter that holds the runner, whose api-peer drains it. An id whose label is
// in no datacenter is runner.not_found.
func (s *Server) drainRunner(c echo.Context) error {
	rid, err := apitypes.PathRunnerID(c)
	if err != nil {
		return err
	}
	var q apitypes.RunnersDrainQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	dc, ok := s.deps.Topology.ByLabel(rid.Label())
	if !ok {
		return rerr.RunnerNotFound(rid.String())
	}
	var out apitypes.RunnersDrainResponse
	path := "/runners/" + url.PathEscape(rid.String()) + "/drain"
	if err := s.deps.Peers.Post(c.Request().Context(), dc, path, url.Values{"namespace": {q.Namespace}}, nil, &out); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
