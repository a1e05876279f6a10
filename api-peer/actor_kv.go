package apipeer

import (
	"encoding/base64"
	"net/http"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/actorkv"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// getActorKV serves GET /actors/{actor_id}/kv/keys/{key} for an actor of this datacenter:
// the inspector's read of one KV key. An unknown actor, or one of another namespace, is
// actor.not_found; a key without a value is actor.kv_key_not_found.
func (s *Server) getActorKV(c echo.Context) error {
	aid, key, err := apitypes.ActorKVPath(c)
	if err != nil {
		return err
	}
	var q apitypes.ActorsKVGetQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	ctx := c.Request().Context()
	type result struct {
		nsID    id.ID
		exists  bool
		entries []actorkv.Entry
	}
	res, err := udb.ReadTransact(ctx, s.deps.DB, func(r udb.ReadTransaction) (result, error) {
		var out result
		var err error
		out.nsID, out.exists, err = actor.NamespaceOf(ctx, r, aid)
		if err != nil || !out.exists {
			return out, err
		}
		out.entries, err = actorkv.Get(ctx, r, actorkv.GetInput{ActorID: aid, Keys: [][]byte{key}})
		return out, err
	})
	if err != nil {
		return err
	}
	if !res.exists {
		return rerr.ActorNotFound(aid.String())
	}
	ns, err := s.resolveNamespace(ctx, q.Namespace)
	if err != nil {
		return err
	}
	if ns.NamespaceID != res.nsID {
		return rerr.ActorNotFound(aid.String())
	}
	if len(res.entries) == 0 {
		return rerr.ActorKVKeyNotFound()
	}
	e := res.entries[0]
	return c.JSON(http.StatusOK, apitypes.ActorsKVGetResponse{Value: base64.StdEncoding.EncodeToString(e.Value), UpdateTs: e.Metadata.UpdateTs})
}
