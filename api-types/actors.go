package apitypes

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
)

// DestroyWait bounds how long DELETE /actors/{actor_id} waits for the destroy to finish
// (a placed actor must be stopped by its runner first). It is under api-public's default
// per-datacenter timeout (5 s), so that a slow stop still answers 200 through api-public;
// a caller whose own deadline is sooner is answered before it.
const DestroyWait = 4 * time.Second

// ActorsListQuery is the query of GET /actors, in api-peer and api-public alike.
type ActorsListQuery struct {
	Namespace        string  `query:"namespace,required"`
	Name             *string `query:"name"`
	Key              *string `query:"key"`
	ActorIDs         []id.ID `query:"actor_id,csv=actor_ids"`
	IncludeDestroyed bool    `query:"include_destroyed"`
	Limit            int     `query:"limit,default=100,min=0"`
	// Cursor is the previous page's pagination.cursor, or a bare decimal create_ts (the
	// Rivet engine's cursor). Empty means the first page.
	Cursor *string `query:"cursor"`
}

// ActorsListResponse is the body of GET /actors.
type ActorsListResponse struct {
	Actors     []actor.Actor      `json:"actors"`
	Pagination apihttp.Pagination `json:"pagination"`
}

// ActorsNamesQuery is the query of GET /actors/names.
type ActorsNamesQuery struct {
	Namespace string `query:"namespace,required"`
	Limit     int    `query:"limit,default=100,min=0"`
	// Cursor is the previous page's last name.
	Cursor *string `query:"cursor"`
}

// ActorName is one entry of GET /actors/names.
type ActorName struct {
	Metadata json.RawMessage `json:"metadata"`
}

// ActorsNamesResponse is the body of GET /actors/names: names by name (encoding/json writes
// them in byte order).
type ActorsNamesResponse struct {
	Names      map[string]ActorName `json:"names"`
	Pagination apihttp.Pagination   `json:"pagination"`
}

// ActorsQuery is the query of the calls on one actor and of the creates.
type ActorsQuery struct {
	Namespace string `query:"namespace,required"`
}

// ActorsCreateRequest is the body of POST /actors and PUT /actors (where key is required).
// Datacenter is api-public's choice of datacenter; api-peer creates in its own and does not
// look at it.
type ActorsCreateRequest struct {
	Datacenter         *string `json:"datacenter,omitempty"`
	Name               string  `json:"name"`
	Key                *string `json:"key,omitempty"`
	Input              *string `json:"input,omitempty"` // base64, standard alphabet, padded
	RunnerNameSelector string  `json:"runner_name_selector"`
	CrashPolicy        string  `json:"crash_policy"`
}

// ActorsCreateResponse is the body of POST /actors.
type ActorsCreateResponse struct {
	Actor actor.Actor `json:"actor"`
}

// ActorsGetOrCreateResponse is the body of PUT /actors.
type ActorsGetOrCreateResponse struct {
	Actor   actor.Actor `json:"actor"`
	Created bool        `json:"created"`
}

// PathActorID parses the actor_id path parameter; a malformed one is api.bad_request naming
// it (the Rivet engine answers 500).
func PathActorID(c echo.Context) (id.ID, error) {
	aid, err := id.Parse(c.Param("actor_id"))
	if err != nil {
		return id.ID{}, rerr.BadRequest("actor_id", err.Error())
	}
	return aid, nil
}

// ListInput is the listing q selects (its Namespace left for the caller), checked as
// ops/actor.List checks it.
func (q ActorsListQuery) ListInput() (actor.ListInput, error) {
	in := actor.ListInput{Key: q.Key, ActorIDs: q.ActorIDs, IncludeDestroyed: q.IncludeDestroyed, Limit: q.Limit}
	if q.Name != nil {
		if *q.Name == "" {
			return in, rerr.BadRequest("name", "must not be empty")
		}
		in.Name = *q.Name
	}
	if q.Cursor != nil {
		in.Cursor = *q.Cursor
	}
	return in, actor.CheckList(in)
}

// DecodeInput returns the input's bytes (nil when absent); input that is not base64 is
// api.bad_request naming the field, where the Rivet engine drops it silently.
func (r ActorsCreateRequest) DecodeInput() ([]byte, error) {
	if r.Input == nil {
		return nil, nil
	}
	b, err := base64.StdEncoding.Strict().DecodeString(*r.Input)
	if err != nil {
		return nil, rerr.BadRequest("input", "not base64 (standard alphabet, padded): "+err.Error())
	}
	return b, nil
}
