package apipeer

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
)

// Placement across datacenters (docs/api.md, POST /actors): a datacenter whose pool has no
// free host asks the others what theirs offer (POST /internal/pools/capacity, engine to
// engine, admin token only) and creates the actor where one has, through that datacenter's
// own POST or PUT /actors with the datacenter named.

type capacityRequest struct {
	NamespaceID id.ID  `json:"namespace_id"`
	Pool        string `json:"pool"`
}

// capacityTimeout bounds each datacenter's answer to a capacity probe, as does a quarter of
// the time the request has left: one that does not answer in time is left out of the
// choice, and the create still has the rest of its time.
const capacityTimeout = time.Second

// poolCapacity serves POST /internal/pools/capacity: what this datacenter's pool offers a
// new actor (ops/actor.PoolCapacity).
func (s *Server) poolCapacity(c echo.Context) error {
	var body capacityRequest
	if err := bindInternal(c, &body); err != nil {
		return err
	}
	if body.NamespaceID.IsZero() || body.Pool == "" {
		return rerr.BadRequest("namespace_id", "namespace_id and pool are required")
	}
	if s.deps.Actors == nil {
		return rerr.Internal(errNoActors)
	}
	out, err := s.deps.Actors.Capacity(c.Request().Context(), body.NamespaceID, body.Pool)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// Capacities asks every other datacenter, in topology order, what its pool (ns, pool)
// offers a new actor; datacenters that fail or do not answer in time (capacityTimeout) are
// left out.
func (c *KeyClient) Capacities(ctx context.Context, ns id.ID, pool string) []actor.DatacenterCapacity {
	var others []apihttp.Datacenter
	for _, dc := range c.Topology.Datacenters {
		if !c.Topology.IsLocal(dc) {
			others = append(others, dc)
		}
	}
	timeout := capacityTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl)/4)
	}
	ctx = apihttp.WithoutToken(ctx)
	results := apihttp.FanOut(ctx, others, timeout, func(ctx context.Context, dc apihttp.Datacenter) (actor.Capacity, error) {
		var out actor.Capacity
		err := c.Peers.Post(ctx, dc, "/internal/pools/capacity", nil, capacityRequest{NamespaceID: ns, Pool: pool}, &out)
		return out, err
	})
	var out []actor.DatacenterCapacity
	for i, r := range results {
		if r.Err == nil {
			out = append(out, actor.DatacenterCapacity{Datacenter: others[i].Name, Capacity: r.Value})
		}
	}
	return out
}

// CreateIn creates in's actor (or, with getOrCreate, gets the key's) in datacenter dc,
// through its POST or PUT /actors with dc named, so that it is created there whatever its
// pool's capacity.
func (c *KeyClient) CreateIn(ctx context.Context, dc string, in actor.CreateInput, getOrCreate bool) (actor.Actor, bool, error) {
	target, ok := c.Topology.ByName(dc)
	if !ok {
		return actor.Actor{}, false, rerr.DatacenterNotFound(dc)
	}
	body := apitypes.ActorsCreateRequest{Datacenter: &dc, Name: in.Name, Key: in.Key,
		RunnerNameSelector: in.Selector, CrashPolicy: in.CrashPolicy}
	if in.Input != nil {
		enc := base64.StdEncoding.EncodeToString(in.Input)
		body.Input = &enc
	}
	ctx = apihttp.WithoutToken(ctx)
	query := url.Values{"namespace": {in.NamespaceName}}
	if getOrCreate {
		var out apitypes.ActorsGetOrCreateResponse
		err := c.Peers.Put(ctx, target, "/actors", query, body, &out)
		return out.Actor, out.Created, err
	}
	var out apitypes.ActorsCreateResponse
	err := c.Peers.Post(ctx, target, "/actors", query, body, &out)
	return out.Actor, err == nil, err
}
