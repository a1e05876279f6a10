package apitypes

import (
	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
)

// RunnersDrainQuery is the query of POST /runners/{runner_id}/drain.
type RunnersDrainQuery struct {
	Namespace string `query:"namespace,required"`
}

// RunnersDrainResponse is the body of POST /runners/{runner_id}/drain: the runner as the
// drain left it (drain_ts set; stop_ts too when no actor was on it).
type RunnersDrainResponse struct {
	Runner runner.Runner `json:"runner"`
}

// PathRunnerID parses the runner_id path parameter; a malformed one is api.bad_request
// naming it.
func PathRunnerID(c echo.Context) (id.ID, error) {
	rid, err := id.Parse(c.Param("runner_id"))
	if err != nil {
		return id.ID{}, rerr.BadRequest("runner_id", err.Error())
	}
	return rid, nil
}
