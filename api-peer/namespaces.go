package apipeer

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Namespaces across datacenters.
//
// The leader datacenter owns namespaces: they are stored in its store only, under the id the
// leader drew (which carries the leader's label), and only its api-peer serves GET and POST
// /namespaces (another datacenter's api-peer answers 421 namespace.not_leader; api-public
// always sends these to the leader). The engine creates the "default" namespace at the
// leader's first start (namespace.EnsureDefault). Every other datacenter resolves a namespace
// name through the leader's GET /namespaces?name=, as the Rivet engine does
// (resolve_for_name_global), and caches the answer for the life of the process: a namespace
// is never renamed or deleted, so a positive answer never goes stale; a negative one is not
// cached. So one namespace has one id everywhere, and a runner or envoy of another datacenter
// refers to the leader's id. The cost: a datacenter that has not yet resolved a name cannot
// serve requests naming it while the leader is unreachable (datacenter.unreachable naming
// the leader).

// listNamespaces serves GET /namespaces, in name order, in the leader only.
func (s *Server) listNamespaces(c echo.Context) error {
	var q apitypes.NamespacesListQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	if err := s.checkLeader(); err != nil {
		return err
	}
	if !q.Scope(auth.FromContext(c.Request().Context())) {
		return c.JSON(http.StatusOK, apitypes.NamespacesListResponse{Namespaces: []namespace.Namespace{}})
	}
	in := namespace.ListInput{NamespaceIDs: q.NamespaceIDs}
	if q.Limit != nil {
		in.Limit = *q.Limit
	}
	if q.Name != nil {
		if *q.Name == "" {
			return rerr.BadRequest("name", "must not be empty")
		}
		in.Name = *q.Name
	}
	if q.Cursor != nil {
		in.AfterName = *q.Cursor
	}
	ctx := c.Request().Context()
	limit := namespace.DefaultListLimit
	if q.Limit != nil {
		limit = *q.Limit
	}
	out, err := readPage(ctx, s.deps.DB, limit, func(r udb.ReadTransaction) (namespace.ListOutput, error) {
		return namespace.List(ctx, r, in)
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apitypes.NamespacesListResponse{
		Namespaces: nonNil(out.Namespaces), Pagination: apihttp.Pagination{Cursor: out.Cursor},
	})
}

// createNamespace serves POST /namespaces in the leader only.
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
	if err := s.checkLeader(); err != nil {
		return err
	}
	ctx := c.Request().Context()
	// Drawn once, outside the retry loop, so that every attempt writes the same id.
	in := namespace.CreateInput{NamespaceID: id.New(s.deps.Topology.Local), Name: *body.Name,
		DisplayName: *body.DisplayName, NowMs: time.Now().UnixMilli()}
	ns, err := udb.Transact(ctx, s.deps.DB, func(tx udb.Transaction) (namespace.Namespace, error) {
		return namespace.Create(ctx, tx, in)
	})
	if err != nil {
		return err
	}
	s.names.Store(ns.Name, ns)
	return c.JSON(http.StatusOK, apitypes.NamespacesCreateResponse{Namespace: ns})
}

// checkLeader refuses a namespace request that reached a datacenter that is not the leader.
func (s *Server) checkLeader() error {
	if !s.deps.Topology.LocalDatacenter().IsLeader {
		return rerr.NamespaceNotLeader()
	}
	return nil
}

// namespaceCache holds the namespaces resolved by name: name → namespace.Namespace. Only
// namespaces that exist are stored; they never change.
type namespaceCache = sync.Map

// resolveNamespace returns the namespace named name, or namespace.not_found naming it: from
// the cache, else from this store in the leader, else from the leader's api-peer (see the
// comment at the top of this file). An empty name is api.bad_request naming the namespace
// parameter.
func (s *Server) resolveNamespace(ctx context.Context, name string) (namespace.Namespace, error) {
	if name == "" {
		return namespace.Namespace{}, rerr.BadRequest("namespace", "must not be empty")
	}
	if v, ok := s.names.Load(name); ok {
		return v.(namespace.Namespace), nil
	}
	var ns namespace.Namespace
	var err error
	if s.deps.Topology.LocalDatacenter().IsLeader {
		ns, err = udb.ReadTransact(ctx, s.deps.DB, func(r udb.ReadTransaction) (namespace.Namespace, error) {
			return namespace.ResolveByName(ctx, r, namespace.ResolveByNameInput{Name: name})
		})
	} else {
		ns, err = s.resolveAtLeader(ctx, name)
	}
	if err != nil {
		return namespace.Namespace{}, err
	}
	s.names.Store(name, ns)
	return ns, nil
}

// bindNamespaced binds c's query string into q (a pointer to the handler's query type) and
// resolves the namespace it names in name (q's namespace field).
func (s *Server) bindNamespaced(c echo.Context, q any, name *string) (namespace.Namespace, error) {
	if err := apihttp.BindQuery(c, q); err != nil {
		return namespace.Namespace{}, err
	}
	return s.resolveNamespace(c.Request().Context(), *name)
}

// ResolveNamespace is resolveNamespace for other parts of the engine (the runner socket):
// the namespace named name, resolved at the leader when this datacenter is not the leader.
func (s *Server) ResolveNamespace(ctx context.Context, name string) (namespace.Namespace, error) {
	return s.resolveNamespace(ctx, name)
}

// resolveAtLeader asks the leader's api-peer for the namespace named name.
func (s *Server) resolveAtLeader(ctx context.Context, name string) (namespace.Namespace, error) {
	leader := s.deps.Topology.Leader()
	if s.deps.Peers == nil {
		return namespace.Namespace{}, rerr.DatacenterUnreachable(leader.Name, errNoPeers)
	}
	var out apitypes.NamespacesListResponse
	if err := s.deps.Peers.Get(ctx, leader, "/namespaces", url.Values{"name": {name}}, &out); err != nil {
		return namespace.Namespace{}, err
	}
	for _, ns := range out.Namespaces {
		if ns.Name == name {
			return ns, nil
		}
	}
	return namespace.Namespace{}, rerr.NamespaceNotFound(name)
}

var errNoPeers = errors.New("api-peer: no peer client to reach the leader datacenter")

// readPage is udb.ReadTransact for a list op whose page size is limit: a limit of 0 is
// answered with the empty page (the zero output), as the Rivet engine answers it, without
// reading.
func readPage[T any](ctx context.Context, db udb.Database, limit int, f func(r udb.ReadTransaction) (T, error)) (T, error) {
	if limit == 0 {
		var empty T
		return empty, nil
	}
	return udb.ReadTransact(ctx, db, f)
}

// nonNil returns s, or an empty slice for nil, so that an empty list encodes as [] rather
// than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
