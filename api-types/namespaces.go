package apitypes

import (
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
)

// NamespacesListQuery is the query of GET /namespaces.
type NamespacesListQuery struct {
	// Limit is the page size; absent means namespace.DefaultListLimit (1000, as in Rivet).
	Limit *int `query:"limit,min=0"`
	// Cursor is the previous page's cursor, the last name listed.
	Cursor       *string `query:"cursor"`
	Name         *string `query:"name"`
	NamespaceIDs []id.ID `query:"namespace_id,csv=namespace_ids"`
}

// Scope limits q to what g sees: every namespace for a global grant, else only g's. It
// reports false when q asks by name for another namespace, so nothing can be listed.
func (q *NamespacesListQuery) Scope(g auth.Grant) bool {
	if g.Global() {
		return true
	}
	if q.Name != nil && *q.Name != g.Namespace {
		return false
	}
	q.Name = &g.Namespace
	return true
}

// NamespacesListResponse is the body of GET /namespaces.
type NamespacesListResponse struct {
	Namespaces []namespace.Namespace `json:"namespaces"`
	Pagination apihttp.Pagination    `json:"pagination"`
}

// NamespacesCreateRequest is the body of POST /namespaces; both fields are required.
type NamespacesCreateRequest struct {
	Name        *string `json:"name"`
	DisplayName *string `json:"display_name"`
}

// NamespacesCreateResponse is the body of POST /namespaces.
type NamespacesCreateResponse struct {
	Namespace namespace.Namespace `json:"namespace"`
}

// Check reports a missing field as api.bad_request naming it.
func (r NamespacesCreateRequest) Check() error {
	switch {
	case r.Name == nil:
		return rerr.BadRequest("name", "required")
	case r.DisplayName == nil:
		return rerr.BadRequest("display_name", "required")
	}
	return nil
}
