package apitypes

import (
	"github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/rerr"
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

// EnvoysListResponse is the body of GET /envoys.
type EnvoysListResponse struct {
	Envoys     []envoy.Envoy      `json:"envoys"`
	Pagination apihttp.Pagination `json:"pagination"`
}

// Check reports values BindQuery cannot judge, naming the field.
func (q EnvoysListQuery) Check() error {
	if q.Name != nil && *q.Name == "" {
		return rerr.BadRequest("name", "must not be empty")
	}
	return nil
}
