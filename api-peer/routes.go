package apipeer

import (
	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/pkg/apihttp"
)

// Register adds every api-peer route to e. To add an endpoint, write its handler as a method
// of Server in a file named for its resource (namespaces.go: func (s *Server) listNamespaces(c
// echo.Context) error), bind its query with apihttp.BindQuery and its body with
// apihttp.BindJSON, return rerr errors, and add one line here. Paths and JSON shapes are
// those of api-public, which forwards to these routes.
//
// An endpoint that takes a body names its bound, as api-public's: LargeBody or SmallBody of
// Deps.Bodies, taken 6 times over, because api-public re-encodes the body it forwards and
// Go's JSON encoder may write a character as six bytes (\u003c for <).
func (s *Server) Register(e *echo.Echo) {
	bodies := s.deps.Bodies.Times(6)
	large, small := bodies.LargeBody(), bodies.SmallBody()
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
	// Engine to engine, admin token only (keys.go).
	e.POST("/internal/keys/reserve", s.reserveKeys, large)
	e.POST("/internal/keys/release", s.releaseKeys, large)
	e.POST("/internal/keys/holder", s.keyHolder, small)
	e.POST("/internal/keys/find", s.findKey, small)
	e.POST("/internal/pools/capacity", s.poolCapacity, small) // placement.go
}
