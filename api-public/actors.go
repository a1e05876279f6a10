package apipublic

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/page"
	"github.com/berthhq/berth/pkg/rerr"
)

// Actors across datacenters. An actor lives in the datacenter that created it, whose label
// its id carries: a call on one actor goes to that datacenter's api-peer, a create to the
// datacenter the body names (else this one), and a list by name to every datacenter, merged.
// Keys are unique among the live actors of a name across datacenters: the datacenter that
// creates reserves the key at the leader first (engine/pegboard, keys.go); a key lookup by
// list still asks every datacenter.

// createTarget binds a create's query and body and returns the datacenter to create in:
// the one the body names (datacenter.not_found for a name not in the topology), else this
// one. The body is forwarded as it was bound.
func (s *Server) createTarget(c echo.Context) (apihttp.Datacenter, apitypes.ActorsQuery, apitypes.ActorsCreateRequest, error) {
	var q apitypes.ActorsQuery
	var body apitypes.ActorsCreateRequest
	if err := apihttp.BindQuery(c, &q); err != nil {
		return apihttp.Datacenter{}, q, body, err
	}
	if err := apihttp.BindJSON(c, &body); err != nil {
		return apihttp.Datacenter{}, q, body, err
	}
	if _, err := body.DecodeInput(); err != nil {
		return apihttp.Datacenter{}, q, body, err
	}
	if body.Datacenter == nil {
		return s.deps.Topology.LocalDatacenter(), q, body, nil
	}
	dc, ok := s.deps.Topology.ByName(*body.Datacenter)
	if !ok {
		return apihttp.Datacenter{}, q, body, rerr.DatacenterNotFound(*body.Datacenter)
	}
	return dc, q, body, nil
}

// createActor serves POST /actors in the chosen datacenter (createTarget).
func (s *Server) createActor(c echo.Context) error {
	dc, q, body, err := s.createTarget(c)
	if err != nil {
		return err
	}
	var out apitypes.ActorsCreateResponse
	if err := s.deps.Peers.Post(c.Request().Context(), dc, "/actors", url.Values{"namespace": {q.Namespace}}, body, &out); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// getOrCreateActor serves PUT /actors in the chosen datacenter (createTarget): the live
// actor holding the key there, or a new one.
func (s *Server) getOrCreateActor(c echo.Context) error {
	dc, q, body, err := s.createTarget(c)
	if err != nil {
		return err
	}
	var out apitypes.ActorsGetOrCreateResponse
	if err := s.deps.Peers.Put(c.Request().Context(), dc, "/actors", url.Values{"namespace": {q.Namespace}}, body, &out); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// actorDatacenter binds a call on one actor: its id, its query, and the datacenter its
// label names. An id whose label is in no datacenter is actor.not_found (the actor exists
// nowhere; the Rivet engine answers 400 datacenter.not_found).
func (s *Server) actorDatacenter(c echo.Context) (id.ID, apitypes.ActorsQuery, apihttp.Datacenter, error) {
	var q apitypes.ActorsQuery
	aid, err := apitypes.PathActorID(c)
	if err != nil {
		return aid, q, apihttp.Datacenter{}, err
	}
	if err := apihttp.BindQuery(c, &q); err != nil {
		return aid, q, apihttp.Datacenter{}, err
	}
	dc, ok := s.deps.Topology.ByLabel(aid.Label())
	if !ok {
		return aid, q, dc, rerr.ActorNotFound(aid.String())
	}
	return aid, q, dc, nil
}

// destroyActor serves DELETE /actors/{actor_id} in the actor's datacenter, which answers once
// the actor is destroyed or apitypes.DestroyWait has passed.
func (s *Server) destroyActor(c echo.Context) error {
	aid, q, dc, err := s.actorDatacenter(c)
	if err != nil {
		return err
	}
	if err := s.deps.Peers.Delete(c.Request().Context(), dc, "/actors/"+url.PathEscape(aid.String()),
		url.Values{"namespace": {q.Namespace}}, nil); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, struct{}{})
}

// sleepActor serves POST /actors/{actor_id}/sleep in the actor's datacenter.
func (s *Server) sleepActor(c echo.Context) error { return s.actorPost(c, "sleep") }

// rescheduleActor serves POST /actors/{actor_id}/reschedule in the actor's datacenter.
func (s *Server) rescheduleActor(c echo.Context) error { return s.actorPost(c, "reschedule") }

func (s *Server) actorPost(c echo.Context, what string) error {
	aid, q, dc, err := s.actorDatacenter(c)
	if err != nil {
		return err
	}
	if err := apihttp.BindJSON(c, &struct{}{}); err != nil {
		return err
	}
	if err := s.deps.Peers.Post(c.Request().Context(), dc, "/actors/"+url.PathEscape(aid.String())+"/"+what,
		url.Values{"namespace": {q.Namespace}}, struct{}{}, nil); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, struct{}{})
}

// listActors serves GET /actors: every datacenter's page, merged, as listRunners merges
// runners (see there): each datacenter is asked for the first limit actors after the
// cursor in the list order (create_ts descending, then actor id bytes descending), the
// merged page is the first limit of the union, and its cursor names the last one
// (actor.Cursor), so that paging returns every actor exactly once. With actor_id filters a
// datacenter is asked only for the ids it created, and not at all if none; ids of labels
// not in the topology match nothing. The query is checked here first, so that a bad one is
// refused once, not by every datacenter.
func (s *Server) listActors(c echo.Context) error {
	var q apitypes.ActorsListQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	if _, err := q.ListInput(); err != nil {
		return err
	}
	dcs := s.deps.Topology.Datacenters
	var byLabel map[uint16][]id.ID
	if len(q.ActorIDs) > 0 {
		byLabel = map[uint16][]id.ID{}
		for _, aid := range q.ActorIDs {
			byLabel[aid.Label()] = append(byLabel[aid.Label()], aid)
		}
		dcs = slices.DeleteFunc(slices.Clone(dcs), func(dc apihttp.Datacenter) bool { return len(byLabel[dc.Label]) == 0 })
	}
	pages, err := fanOutList[apitypes.ActorsListResponse](c.Request().Context(), s, dcs, "/actors",
		func(dc apihttp.Datacenter) (url.Values, error) {
			dq := q
			if byLabel != nil {
				dq.ActorIDs = byLabel[dc.Label]
			}
			return apihttp.EncodeQuery(dq)
		})
	if err != nil {
		return err
	}
	all := []actor.Actor{}
	for _, p := range pages {
		all = append(all, p.Actors...)
	}
	slices.SortFunc(all, func(a, b actor.Actor) int {
		if c := cmp.Compare(b.CreateTs, a.CreateTs); c != 0 {
			return c
		}
		return b.ActorID.Compare(a.ActorID)
	})
	onPage := all[:min(len(all), q.Limit)]
	return c.JSON(http.StatusOK, apitypes.ActorsListResponse{Actors: onPage,
		Pagination: apihttp.Pagination{Cursor: page.Cursor(onPage, func(a actor.Actor) string { return actor.Cursor(a.CreateTs, a.ActorID) })}})
}

// listActorNames serves GET /actors/names: every datacenter's first limit names after the
// cursor, merged: the first limit names of the union in byte order, a name known to
// several datacenters once, with the metadata of the first of them in label order. The
// cursor is the last name, null on an empty page. Paging returns every name once.
func (s *Server) listActorNames(c echo.Context) error {
	var q apitypes.ActorsNamesQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	pages, err := fanOutList[apitypes.ActorsNamesResponse](c.Request().Context(), s, s.deps.Topology.Datacenters, "/actors/names",
		func(apihttp.Datacenter) (url.Values, error) { return apihttp.EncodeQuery(q) })
	if err != nil {
		return err
	}
	all := map[string]apitypes.ActorName{}
	for _, p := range pages {
		for name, n := range p.Names {
			if _, seen := all[name]; !seen {
				all[name] = n
			}
		}
	}
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) > q.Limit {
		for _, name := range names[q.Limit:] {
			delete(all, name)
		}
		names = names[:q.Limit]
	}
	return c.JSON(http.StatusOK, apitypes.ActorsNamesResponse{Names: all,
		Pagination: apihttp.Pagination{Cursor: page.Cursor(names, func(n string) string { return n })}})
}
