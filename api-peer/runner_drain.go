package apipeer

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// drainRunner serves POST /runners/{runner_id}/drain for a runner of this datacenter: the
// operator's drain, the same one a runner's ToServerStopping starts (Deps.Runners).
// Idempotent: draining a draining or stopped runner changes nothing and answers it as it is.
// A runner of another namespace is runner.not_found, as is an unknown one.
func (s *Server) drainRunner(c echo.Context) error {
	rid, err := apitypes.PathRunnerID(c)
	if err != nil {
		return err
	}
	var q apitypes.RunnersDrainQuery
	ns, err := s.bindNamespaced(c, &q, &q.Namespace)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	get := func() (runner.Runner, error) {
		r, err := udb.ReadTransact(ctx, s.deps.DB, func(r udb.ReadTransaction) (runner.Runner, error) {
			return runner.Get(ctx, r, runner.GetInput{RunnerID: rid, Datacenter: s.deps.Topology.LocalDatacenter().Name})
		})
		if err == nil && r.NamespaceID != ns.NamespaceID {
			return runner.Runner{}, rerr.RunnerNotFound(rid.String())
		}
		return r, err
	}
	if _, err := get(); err != nil {
		return err
	}
	if s.deps.Runners == nil {
		return rerr.Internal(errors.New("api-peer: no runner lifecycle to drain with"))
	}
	if err := s.deps.Runners.Drain(ctx, rid, id.ID{}); err != nil {
		return err
	}
	r, err := get()
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apitypes.RunnersDrainResponse{Runner: r})
}
