package apipublic

import (
	"net/http"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/auth"
)

// Namespaces belong to the leader datacenter (see api-peer/namespaces.go): both endpoints
// check the request here, so that a bad one is refused without a hop, then forward it to
// the leader's api-peer (in process when this is the leader) and return its answer. If the
// leader cannot be reached, the answer is datacenter.unreachable naming it.

// listNamespaces serves GET /namespaces.
func (s *Server) listNamespaces(c echo.Context) error {
	var q apitypes.NamespacesListQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	if !q.Scope(auth.FromContext(c.Request().Context())) {
		return c.JSON(http.StatusOK, apitypes.NamespacesListResponse{Namespaces: []namespace.Namespace{}})
	}
	query, err := apihttp.EncodeQuery(q)
	if err != nil {
		return err
	}
	var out apitypes.NamespacesListResponse
	if err := s.toLeader(c.Request().Context(), http.MethodGet, "/namespaces", query, nil, &out); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// createNamespace serves POST /namespaces.
func (s *Server) createNamespace(c echo.Context) error {
	if err := auth.FromContext(c.Request().Context()).AllowGlobal(); err != nil {
		return err
	}
	if err := apihttp.BindQuery(c, &apihttp.NoQuery{}); err != nil {
		return err
	}
	var body apitypes.NamespacesCreateRequest
	if err := apihttp.BindJSON(c, &body); err != nil {
		return err
	}
	if err := body.Check(); err != nil {
		return err
	}
	var out apitypes.NamespacesCreateResponse
	if err := s.toLeader(c.Request().Context(), http.MethodPost, "/namespaces", nil, body, &out); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
