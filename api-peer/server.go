package apipeer

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// Deps is everything the api-peer handlers use. The engine fills it at start; a handler that
// needs something new (a pub/sub client, pegboard settings) gets a new field here.
type Deps struct {
	// DB is this datacenter's store.
	DB udb.Database
	// Topology is every datacenter; Topology.Local is this one.
	Topology apihttp.Topology
	// Peers reaches the leader's api-peer, where a datacenter that is not the leader resolves
	// namespace names (see namespaces.go). Unused in the leader.
	Peers *apihttp.PeerClient
	// Build is reported by /health and /metadata.
	Build apihttp.BuildInfo
	// Auth, when enabled, wants a token on every endpoint but /health and /metadata, and
	// limits each call to what the token's grant allows (see apihttp.Options.Auth).
	Auth *auth.Authenticator
	// Log is the base logger; handlers log through apihttp.Logger(ctx), which adds the ray id.
	Log *slog.Logger
	// Runners is this datacenter's runner lifecycle (engine/pegboard.Runners), which drains
	// go through; nil answers them with core.internal_error.
	Runners RunnersService
	// Envoys is this datacenter's envoy lifecycle (engine/pegboard.Envoys), which envoy
	// drains go through; nil answers them with core.internal_error.
	Envoys EnvoysService
	// Actors is this datacenter's actor lifecycle (engine/pegboard.Actors), which the actor
	// writes go through; nil answers them with core.internal_error.
	Actors ActorsService
	// Bodies bound the request bodies of the endpoints that take one, as api-public's; each
	// is taken 6 times over here (routes.go).
	Bodies apihttp.BodyLimits
	// Serverless fetches serverless pools' /metadata and holds the outbound policy; nil
	// refuses every serverless URL that names an address and answers the health check and
	// refresh-metadata with core.internal_error.
	Serverless ServerlessService
}

// RunnersService is the runner lifecycle the handlers drain runners through.
type RunnersService interface {
	// Drain drains runner rid (connID zero: an operator's drain, not the runner's own).
	Drain(ctx context.Context, rid, connID id.ID) error
}

// Server is the api-peer. Its handlers are methods, one resource per file, registered in
// routes.go.
type Server struct {
	deps  Deps
	names namespaceCache
}

// New returns an api-peer over deps.
func New(deps Deps) *Server { return &Server{deps: deps} }

// Handler returns the api-peer as an http.Handler: an apihttp echo instance (error handler,
// ray ids, bearer auth) with the routes of Register.
func (s *Server) Handler() http.Handler {
	e := apihttp.New(apihttp.Options{Log: s.deps.Log, Auth: s.deps.Auth, DatacenterLabel: s.deps.Topology.Local})
	s.Register(e)
	return e
}
