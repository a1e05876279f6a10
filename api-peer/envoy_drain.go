package apipeer

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// EnvoysService is the envoy lifecycle the handlers drain envoys through.
type EnvoysService interface {
	// Stopping drains envoy envoyKey of namespace ns (connID zero: a drain the engine
	// decides, not the envoy's own ToRivetStopping).
	Stopping(ctx context.Context, ns id.ID, envoyKey string, connID id.ID) error
}

// drainEnvoy serves POST /envoys/{envoy_key}/drain for an envoy of this datacenter (a berth
// extension): the drain an envoy's ToRivetStopping starts, as a serverless pool's drain
// does (Deps.Envoys). Idempotent: draining a draining envoy changes nothing and answers it
// as it is. An unknown envoy, or one that expired, is envoy.not_found.
func (s *Server) drainEnvoy(c echo.Context) error {
	key := c.Param("envoy_key")
	var q apitypes.EnvoysDrainQuery
	ns, err := s.bindNamespaced(c, &q, &q.Namespace)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	get := func() (envoy.Envoy, error) {
		return udb.ReadTransact(ctx, s.deps.DB, func(r udb.ReadTransaction) (envoy.Envoy, error) {
			return envoy.Get(ctx, r, envoy.GetInput{Namespace: ns.NamespaceID, EnvoyKey: key, Datacenter: s.deps.Topology.LocalDatacenter().Name})
		})
	}
	if _, err := get(); err != nil {
		return err
	}
	if s.deps.Envoys == nil {
		return rerr.Internal(errors.New("api-peer: no envoy lifecycle to drain with"))
	}
	if err := s.deps.Envoys.Stopping(ctx, ns.NamespaceID, key, id.ID{}); err != nil {
		return err
	}
	e, err := get()
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apitypes.EnvoysDrainResponse{Envoy: e})
}
