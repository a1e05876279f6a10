package apipeer

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// EnvoysListQuery is the query of GET /envoys, in api-peer and api-public alike.
type EnvoysListQuery struct {
	Namespace string `query:"namespace,required"`
	// Name is the pool.
	Name      *string  `query:"name"`
	EnvoyKeys []string `query:"envoy_key"`
	Limit     int      `query:"limit,default=100,min=0"`
	// Cursor is the previous page's pagination.cursor, or a bare decimal create_ts (the
	// Rivet engine's cursor). Empty means the first page.
	Cursor *string `query:"cursor"`
}

// Check reports values BindQuery cannot judge, naming the field.
func (q EnvoysListQuery) Check() error {
	if q.Name != nil && *q.Name == "" {
		return rerr.BadRequest("name", "must not be empty")
	}
	return nil
}

// EnvoysListResponse is the body of GET /envoys.
type EnvoysListResponse struct {
	Envoys     []envoy.Envoy      `json:"envoys"`
	Pagination apihttp.Pagination `json:"pagination"`
}

// listEnvoys serves GET /envoys from this datacenter's store: the active envoys (draining
// ones included), newest first, (create_ts, envoy key) descending, with an exactly-once
// cursor (envoy.List). Envoy keys that cannot name an envoy match nothing.
func (s *Server) listEnvoys(c echo.Context) error {
	var q EnvoysListQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	if err := q.Check(); err != nil {
		return err
	}
	ctx := c.Request().Context()
	ns, err := s.resolveNamespace(ctx, "namespace", q.Namespace)
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
	return c.JSON(http.StatusOK, EnvoysListResponse{
		Envoys: nonNil(out.Envoys), Pagination: apihttp.Pagination{Cursor: out.Cursor},
	})
}
