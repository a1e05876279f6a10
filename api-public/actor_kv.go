package apipublic

import (
	"encoding/base64"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/rerr"
)

// getActorKV serves GET /actors/{actor_id}/kv/keys/{key}: the actor id's datacenter label
// names the datacenter that holds the actor, whose api-peer reads the key. The key is
// forwarded in URL-safe base64, which needs no escaping in a path. An id whose label is in no
// datacenter is actor.not_found.
func (s *Server) getActorKV(c echo.Context) error {
	aid, key, err := apitypes.ActorKVPath(c)
	if err != nil {
		return err
	}
	var q apitypes.ActorsKVGetQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	dc, ok := s.deps.Topology.ByLabel(aid.Label())
	if !ok {
		return rerr.ActorNotFound(aid.String())
	}
	var out apitypes.ActorsKVGetResponse
	path := "/actors/" + url.PathEscape(aid.String()) + "/kv/keys/" + base64.URLEncoding.EncodeToString(key)
	if err := s.deps.Peers.Get(c.Request().Context(), dc, path, url.Values{"namespace": {q.Namespace}}, &out); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
