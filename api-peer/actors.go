package apipeer

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// ActorsService is the actor lifecycle of this datacenter the handlers write through
// (engine/pegboard.Actors).
type ActorsService interface {
	// Create and GetOrCreate run ops/actor.Create and GetOrCreate, drawing the actor id.
	Create(ctx context.Context, in actor.CreateInput) (actor.Actor, error)
	GetOrCreate(ctx context.Context, in actor.CreateInput) (actor.Actor, bool, error)
	// Destroy destroys an actor and, with wait, returns once it is destroyed or ctx ends.
	Destroy(ctx context.Context, aid id.ID, wait bool) error
	Sleep(ctx context.Context, aid id.ID) error
	Reschedule(ctx context.Context, aid id.ID) error
	// Capacity is what pool (ns, pool) offers a new actor here (ops/actor.PoolCapacity).
	Capacity(ctx context.Context, ns id.ID, pool string) (actor.Capacity, error)
}

var errNoActors = errors.New("api-peer: no actor lifecycle to write with")

// listActors serves GET /actors from this datacenter's store (ops/actor.List).
func (s *Server) listActors(c echo.Context) error {
	var q apitypes.ActorsListQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	in, err := q.ListInput()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	ns, err := s.resolveNamespace(ctx, q.Namespace)
	if err != nil {
		return err
	}
	in.Namespace, in.Datacenter = ns.NamespaceID, s.deps.Topology.LocalDatacenter().Name
	out, err := readPage(ctx, s.deps.DB, in.Limit, func(r udb.ReadTransaction) (actor.ListOutput, error) {
		return actor.List(ctx, r, in)
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apitypes.ActorsListResponse{Actors: nonNil(out.Actors), Pagination: apihttp.Pagination{Cursor: out.Cursor}})
}

// listActorNames serves GET /actors/names from this datacenter's store, in byte order.
func (s *Server) listActorNames(c echo.Context) error {
	var q apitypes.ActorsNamesQuery
	ns, err := s.bindNamespaced(c, &q, &q.Namespace)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	in := actor.ListNamesInput{Namespace: ns.NamespaceID, Limit: q.Limit}
	if q.Cursor != nil {
		in.AfterName = *q.Cursor
	}
	out, err := readPage(ctx, s.deps.DB, in.Limit, func(r udb.ReadTransaction) (actor.ListNamesOutput, error) {
		return actor.ListNames(ctx, r, in)
	})
	if err != nil {
		return err
	}
	resp := apitypes.ActorsNamesResponse{Names: make(map[string]apitypes.ActorName, len(out.Names)), Pagination: apihttp.Pagination{Cursor: out.Cursor}}
	for _, n := range out.Names {
		resp.Names[n.Name] = apitypes.ActorName{Metadata: n.Metadata}
	}
	return c.JSON(http.StatusOK, resp)
}

// createInput binds a create's query and body into the ops input (the lifecycle draws the
// actor id).
func (s *Server) createInput(c echo.Context) (actor.CreateInput, error) {
	var q apitypes.ActorsQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return actor.CreateInput{}, err
	}
	var body apitypes.ActorsCreateRequest
	if err := apihttp.BindJSON(c, &body); err != nil {
		return actor.CreateInput{}, err
	}
	input, err := body.DecodeInput()
	if err != nil {
		return actor.CreateInput{}, err
	}
	if s.deps.Actors == nil {
		return actor.CreateInput{}, rerr.Internal(errNoActors)
	}
	in := actor.CreateInput{
		NamespaceName: q.Namespace, Name: body.Name, Key: body.Key, Input: input,
		Selector: body.RunnerNameSelector, CrashPolicy: body.CrashPolicy, Pinned: body.Datacenter != nil,
	}
	// The body is checked before the namespace is looked up: a bad request is a bad request
	// in every namespace.
	if err := actor.CheckCreate(in); err != nil {
		return actor.CreateInput{}, err
	}
	ns, err := s.resolveNamespace(c.Request().Context(), q.Namespace)
	if err != nil {
		return actor.CreateInput{}, err
	}
	in.Namespace = ns.NamespaceID
	return in, nil
}

// createActor serves POST /actors: a new actor of this datacenter, placed on a runner of its
// pool, queued, or (crash policy sleep, no capacity) asleep. A key held by a live actor of
// the name is 409 actor.duplicate_key naming it.
func (s *Server) createActor(c echo.Context) error {
	in, err := s.createInput(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	a, err := s.deps.Actors.Create(ctx, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apitypes.ActorsCreateResponse{Actor: a})
}

// getOrCreateActor serves PUT /actors: the live actor holding the key in this datacenter, or
// a new one. Concurrent calls with one key create exactly one actor (ops/actor.GetOrCreate).
func (s *Server) getOrCreateActor(c echo.Context) error {
	in, err := s.createInput(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	a, created, err := s.deps.Actors.GetOrCreate(ctx, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apitypes.ActorsGetOrCreateResponse{Actor: a, Created: created})
}

// actorOf binds the calls on one actor: its id, the namespace, and the actor's state, which
// must be in that namespace (else actor.not_found, as for an unknown id).
func (s *Server) actorOf(c echo.Context) (actor.Actor, error) {
	aid, err := apitypes.PathActorID(c)
	if err != nil {
		return actor.Actor{}, err
	}
	var q apitypes.ActorsQuery
	ns, err := s.bindNamespaced(c, &q, &q.Namespace)
	if err != nil {
		return actor.Actor{}, err
	}
	ctx := c.Request().Context()
	a, err := udb.ReadTransact(ctx, s.deps.DB, func(r udb.ReadTransaction) (actor.Actor, error) {
		return actor.GetOne(ctx, r, aid, s.deps.Topology.LocalDatacenter().Name)
	})
	if err == nil && a.NamespaceID != ns.NamespaceID {
		return actor.Actor{}, rerr.ActorNotFound(aid.String())
	}
	if err == nil && s.deps.Actors == nil {
		return actor.Actor{}, rerr.Internal(errNoActors)
	}
	return a, err
}

// destroyActor serves DELETE /actors/{actor_id}: the destroy is recorded (a placed actor is
// told to stop, any other is destroyed at once), then the call waits for it to finish, at
// most DestroyWait or until shortly before the request's deadline. It answers {} either way:
// once recorded, a destroy cannot be undone and finishes without the caller (a runner that
// never reports the stop loses the actor after pegboard.actor_stop_threshold). Idempotent: a
// destroyed actor answers {} at once.
func (s *Server) destroyActor(c echo.Context) error {
	a, err := s.actorOf(c)
	if err != nil {
		return err
	}
	if a.DestroyTs == nil {
		ctx := c.Request().Context()
		if err := s.deps.Actors.Destroy(ctx, a.ActorID, false); err != nil {
			return err
		}
		wait := apitypes.DestroyWait
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl)-destroyMargin)
		}
		if wait > 0 {
			wctx, cancel := context.WithTimeout(ctx, wait)
			err := s.deps.Actors.Destroy(wctx, a.ActorID, true)
			cancel()
			if err != nil && (ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded)) {
				return err
			}
		}
	}
	return c.JSON(http.StatusOK, struct{}{})
}

// destroyMargin is the time left, before a request's deadline, to write the answer.
const destroyMargin = 250 * time.Millisecond

// sleepActor serves POST /actors/{actor_id}/sleep: a running actor is told to stop and then
// sleeps; a waiting one sleeps at once; others are left as they are.
func (s *Server) sleepActor(c echo.Context) error {
	return s.actorCall(c, func(ctx context.Context, aid id.ID) error { return s.deps.Actors.Sleep(ctx, aid) })
}

// rescheduleActor serves POST /actors/{actor_id}/reschedule: a running actor is stopped and
// placed again; a sleeping or backing-off one is placed now.
func (s *Server) rescheduleActor(c echo.Context) error {
	return s.actorCall(c, func(ctx context.Context, aid id.ID) error { return s.deps.Actors.Reschedule(ctx, aid) })
}

func (s *Server) actorCall(c echo.Context, f func(ctx context.Context, aid id.ID) error) error {
	a, err := s.actorOf(c)
	if err != nil {
		return err
	}
	if err := apihttp.BindJSON(c, &struct{}{}); err != nil {
		return err
	}
	if err := f(c.Request().Context(), a.ActorID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, struct{}{})
}
