package apitypes

import (
	"github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
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

// Check reports values BindQuery cannot judge, naming the field.
func (q RunnersListQuery) Check() error {
	if q.Name != nil && *q.Name == "" {
		return rerr.BadRequest("name", "must not be empty")
	}
	return nil
}
