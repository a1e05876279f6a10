package apipublic

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	apipeer "github.com/berthhq/berth/api-peer"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/outbound"
	"github.com/berthhq/berth/pkg/udb"
)

// Deps is everything the api-public handlers use. The engine fills it at start; a handler
// that needs something new gets a new field here.
type Deps struct {
	// DB is this datacenter's store, for the few reads that need no other datacenter.
	DB udb.Database
	// Topology is every datacenter; Topology.Local is this one.
	Topology apihttp.Topology
	// Peers calls api-peer in any datacenter, this one included (in process).
	Peers *apihttp.PeerClient
	// DatacenterTimeout bounds each datacenter's part of a fan-out.
	DatacenterTimeout time.Duration
	// Build is reported by /health and /metadata.
	Build apihttp.BuildInfo
	// Auth, when enabled, wants a token on every endpoint but /health and /metadata, and
	// limits each call to what the token's grant allows (see apihttp.Options.Auth).
	Auth *auth.Authenticator
	// Log is the base logger; handlers log through apihttp.Logger(ctx), which adds the ray id.
	Log *slog.Logger
	// Local is this datacenter's api-peer. When set, it serves this datacenter's part of the
	// runner list's fan-out in process: the same answer, without encoding it to JSON and
	// decoding it again. Nil sends that part through Peers like the others.
	Local *apipeer.Server
	// Bodies bound the request bodies of the endpoints that take one (routes.go).
	Bodies apihttp.BodyLimits
	// Outbound is the destination policy of serverless URLs (pegboard.serverless): a literal
	// address it refuses is refused before any datacenter is asked, as one datacenter would.
	Outbound outbound.Policy
}

// Server is the public API. Its handlers are methods, one resource per file, registered in
// routes.go.
type Server struct {
	deps Deps
}

// New returns the public API over deps.
func New(deps Deps) *Server {
	if deps.DatacenterTimeout <= 0 {
		deps.DatacenterTimeout = apihttp.DefaultPeerTimeout
	}
	return &Server{deps: deps}
}

// Handler returns the public API as an http.Handler: an apihttp echo instance (error handler,
// ray ids, bearer auth) with the routes of Register.
func (s *Server) Handler() http.Handler {
	e := apihttp.New(apihttp.Options{Log: s.deps.Log, Auth: s.deps.Auth, DatacenterLabel: s.deps.Topology.Local})
	s.Register(e)
	return e
}

// fanOutGet calls GET path?query on the api-peer of every datacenter, at most
// apihttp.FanOutParallelism at once and each within Deps.DatacenterTimeout, and returns the
// answers of those that answered, in label order. Failures are logged; it fails only if every
// datacenter failed. Merging, sorting, the limit and the cursor are the caller's.
func fanOutGet[T any](ctx context.Context, s *Server, path string, query url.Values) ([]apihttp.DatacenterResult[T], error) {
	res := apihttp.FanOut(ctx, s.deps.Topology.Datacenters, s.deps.DatacenterTimeout,
		func(ctx context.Context, dc apihttp.Datacenter) (T, error) {
			var out T
			err := s.deps.Peers.Get(ctx, dc, path, query, &out)
			return out, err
		})
	return apihttp.Succeeded(ctx, res)
}

// toLeader calls method path?query on the leader datacenter's api-peer (in process when this
// is the leader) and decodes its answer into out: for namespace writes and reads, which the
// leader owns.
func (s *Server) toLeader(ctx context.Context, method, path string, query url.Values, body, out any) error {
	return s.deps.Peers.Do(ctx, s.deps.Topology.Leader(), method, path, query, body, out)
}
