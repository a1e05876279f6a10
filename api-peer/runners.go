package apipeer

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// RunnersListQuery is the query of GET /runners, in api-peer and api-public alike.
type RunnersListQuery struct {
	Namespace      string  `query:"namespace,required"`
	Name           *string `query:"name"`
	RunnerIDs      []id.ID `query:"runner_id,csv=runner_ids"`
	IncludeStopped bool    `query:"include_stopped"`
	Limit          int     `query:"limit,default=100,min=0"`
	// Cursor is the previous page's pagination.cursor, or a bare decimal create_ts (the
	// Rivet engine's cursor). Empty means the first page.
	Cursor *string `query:"cursor"`
}

// Check reports values BindQuery cannot judge, naming the field.
func (q RunnersListQuery) Check() error {
	if q.Name != nil && *q.Name == "" {
		return rerr.BadRequest("name", "must not be empty")
	}
	return nil
}

// RunnersListResponse is the body of GET /runners.
type RunnersListResponse struct {
	Runners    []runner.Runner    `json:"runners"`
	Pagination apihttp.Pagination `json:"pagination"`
}

// RunnersNamesQuery is the query of GET /runners/names.
type RunnersNamesQuery struct {
	Namespace string `query:"namespace,required"`
	Limit     int    `query:"limit,default=100,min=0"`
	// Cursor is the previous page's last name.
	Cursor *string `query:"cursor"`
}

// RunnersNamesResponse is the body of GET /runners/names.
type RunnersNamesResponse struct {
	Names      []string           `json:"names"`
	Pagination apihttp.Pagination `json:"pagination"`
}

// listRunners serves GET /runners from this datacenter's store: newest first, (create_ts,
// runner id) descending, with an exactly-once cursor (runner.ListForNs).
func (s *Server) listRunners(c echo.Context) error {
	var q RunnersListQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	out, err := s.RunnersPage(c.Request().Context(), q)
	if err != nil {
		return err
	}
	return writeRunnersList(c, out.Runners, out.Cursor)
}

// RunnersPage is this datacenter's answer to GET /runners with the bound query q: the page
// listRunners encodes, for a caller in this process (api-public serves its own datacenter's
// part of a fan-out with it, without the JSON round trip).
func (s *Server) RunnersPage(ctx context.Context, q RunnersListQuery) (runner.ListForNsOutput, error) {
	if err := q.Check(); err != nil {
		return runner.ListForNsOutput{}, err
	}
	ns, err := s.ResolveNamespace(ctx, q.Namespace)
	if err != nil {
		return runner.ListForNsOutput{}, err
	}
	in := runner.ListForNsInput{
		Namespace: ns.NamespaceID, RunnerIDs: q.RunnerIDs, IncludeStopped: q.IncludeStopped,
		Limit: q.Limit, Datacenter: s.deps.Topology.LocalDatacenter().Name,
	}
	if q.Name != nil {
		in.Name = *q.Name
	}
	if q.Cursor != nil {
		in.Cursor = *q.Cursor
	}
	return readPage(ctx, s.deps.DB, in.Limit, func(r udb.ReadTransaction) (runner.ListForNsOutput, error) {
		return runner.ListForNs(ctx, r, in)
	})
}

// listRunnerNames serves GET /runners/names from this datacenter's store, in byte order.
func (s *Server) listRunnerNames(c echo.Context) error {
	var q RunnersNamesQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	ctx := c.Request().Context()
	ns, err := s.resolveNamespace(ctx, "namespace", q.Namespace)
	if err != nil {
		return err
	}
	in := runner.ListNamesInput{Namespace: ns.NamespaceID, Limit: q.Limit}
	if q.Cursor != nil {
		in.AfterName = *q.Cursor
	}
	out, err := readPage(ctx, s.deps.DB, in.Limit, func(r udb.ReadTransaction) (runner.ListNamesOutput, error) {
		return runner.ListNames(ctx, r, in)
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, RunnersNamesResponse{
		Names: nonNil(out.Names), Pagination: apihttp.Pagination{Cursor: out.Cursor},
	})
}
