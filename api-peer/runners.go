package apipeer

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/udb"
)

// listRunners serves GET /runners from this datacenter's store: newest first, (create_ts,
// runner id) descending, with an exactly-once cursor (runner.ListForNs).
func (s *Server) listRunners(c echo.Context) error {
	var q apitypes.RunnersListQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	out, err := s.RunnersPage(c.Request().Context(), q)
	if err != nil {
		return err
	}
	return apitypes.WriteRunnersList(c, out.Runners, out.Cursor)
}

// RunnersPage is this datacenter's answer to GET /runners with the bound query q: the page
// listRunners encodes, for a caller in this process (api-public serves its own datacenter's
// part of a fan-out with it, without the JSON round trip).
func (s *Server) RunnersPage(ctx context.Context, q apitypes.RunnersListQuery) (runner.ListForNsOutput, error) {
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
	var q apitypes.RunnersNamesQuery
	ns, err := s.bindNamespaced(c, &q, &q.Namespace)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
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
	return c.JSON(http.StatusOK, apitypes.RunnersNamesResponse{
		Names: nonNil(out.Names), Pagination: apihttp.Pagination{Cursor: out.Cursor},
	})
}
