package apipeer

import (
	"net/http"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/udb"
)

// listEnvoys serves GET /envoys from this datacenter's store: the active envoys (draining
// ones included), newest first, (create_ts, envoy key) descending, with an exactly-once
// cursor (envoy.List). Envoy keys that cannot name an envoy match nothing.
func (s *Server) listEnvoys(c echo.Context) error {
	var q apitypes.EnvoysListQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	if err := q.Check(); err != nil {
		return err
	}
	ctx := c.Request().Context()
	ns, err := s.resolveNamespace(ctx, q.Namespace)
	if err != nil {
		return err
	}
	in := envoy.ListInput{Namespace: ns.NamespaceID, EnvoyKeys: q.EnvoyKeys, Limit: q.Limit,
		Datacenter: s.deps.Topology.LocalDatacenter().Name}
	if q.Name != nil {
		in.PoolName = *q.Name
	}
	if q.Cursor != nil {
		in.Cursor = *q.Cursor
	}
	out, err := readPage(ctx, s.deps.DB, in.Limit, func(r udb.ReadTransaction) (envoy.ListOutput, error) {
		return envoy.List(ctx, r, in)
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apitypes.EnvoysListResponse{
		Envoys: nonNil(out.Envoys), Pagination: apihttp.Pagination{Cursor: out.Cursor},
	})
}
