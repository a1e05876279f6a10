package apipublic

import (
	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/pkg/apihttp"
)

// Register adds every public route to e. To add an endpoint, write its handler as a method of
// Server in a file named for its resource and add one line here. A list served by every
// datacenter binds its query (apihttp.BindQuery), re-encodes it for the peers
// (apihttp.EncodeQuery), calls fanOutList[peerResponse](ctx, s, dcs, "/runners", query) (all
// or nothing, so paging stays exactly-once; fanOutGet returns what answered, for reads
// without a cursor), then merges, sorts, applies the limit and builds the cursor (see
// runners.go); a namespace call goes through
// s.toLeader; a per-actor call goes to Topology.ByLabel(actorID.Label()) through Deps.Peers.
// Errors are returned, never written: a peer's error is re-emitted as it was sent.
//
// An endpoint that takes a body names its bound: Deps.Bodies' LargeBody for bodies that
// carry data, SmallBody for bodies of a few short fields.
func (s *Server) Register(e *echo.Echo) {
	large, small := s.deps.Bodies.LargeBody(), s.deps.Bodies.SmallBody()
	e.GET("/health", apihttp.HealthHandler(s.deps.Build))
	e.GET("/metadata", apihttp.MetadataHandler(s.deps.Build))
	e.GET("/datacenters", apihttp.DatacentersHandler(s.deps.Topology))
	e.GET("/namespaces", s.listNamespaces)
	e.POST("/namespaces", s.createNamespace, small)
	e.GET("/runners", s.listRunners)
	e.GET("/runners/names", s.listRunnerNames)
	e.POST("/runners/:runner_id/drain", s.drainRunner)
	e.GET("/actors/:actor_id/kv/keys/:key", s.getActorKV)
	e.GET("/envoys", s.listEnvoys)
	e.POST("/envoys/:envoy_key/drain", s.drainEnvoy)
	e.GET("/runner-configs", s.listRunnerConfigs)
	e.PUT("/runner-configs/:runner_name", s.upsertRunnerConfig, large)
	e.DELETE("/runner-configs/:runner_name", s.deleteRunnerConfig)
	e.POST("/runner-configs/serverless-health-check", s.serverlessHealthCheck, small)
	e.POST("/runner-configs/:runner_name/refresh-metadata", s.refreshMetadata, small)
	e.GET("/actors", s.listActors)
	e.POST("/actors", s.createActor, large)
	e.PUT("/actors", s.getOrCreateActor, large)
	e.GET("/actors/names", s.listActorNames)
	e.DELETE("/actors/:actor_id", s.destroyActor)
	e.POST("/actors/:actor_id/sleep", s.sleepActor, small)
	e.POST("/actors/:actor_id/reschedule", s.rescheduleActor, small)
}
