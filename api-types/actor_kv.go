package apitypes

import (
	"encoding/base64"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
)

// ActorsKVGetQuery is the query of GET /actors/{actor_id}/kv/keys/{key}.
type ActorsKVGetQuery struct {
	Namespace string `query:"namespace,required"`
}

// ActorsKVGetResponse is the body of GET /actors/{actor_id}/kv/keys/{key}: the value in
// standard base64 and when it was written (unix ms).
type ActorsKVGetResponse struct {
	Value    string `json:"value"`
	UpdateTs int64  `json:"update_ts"`
}

// ActorKVPath parses the path of GET /actors/{actor_id}/kv/keys/{key}: the actor id, and the
// key, which is base64 percent-encoded in the path: the standard alphabet as in Rivet's
// inspector, or the URL-safe one (which api-public forwards, so no "/" needs escaping), with
// or without padding. A malformed one is api.bad_request naming actor_id or key.
func ActorKVPath(c echo.Context) (id.ID, []byte, error) {
	aid, err := id.Parse(c.Param("actor_id"))
	if err != nil {
		return id.ID{}, nil, rerr.BadRequest("actor_id", err.Error())
	}
	raw, err := url.PathUnescape(c.Param("key"))
	if err != nil {
		return id.ID{}, nil, rerr.BadRequest("key", "malformed percent-encoding")
	}
	key, err := DecodeKVKey(raw)
	if err != nil {
		return id.ID{}, nil, rerr.BadRequest("key", "not base64")
	}
	return aid, key, nil
}

// DecodeKVKey decodes a KV key given in base64, standard or URL-safe, padded or not.
func DecodeKVKey(s string) ([]byte, error) {
	var err error
	for _, enc := range kvKeyEncodings {
		var key []byte
		if key, err = enc.DecodeString(s); err == nil {
			return key, nil
		}
	}
	return nil, err
}

// kvKeyEncodings are the base64 forms a key may take in the path. The two alphabets cannot be
// confused: a text valid in both has neither of the letters they differ in, and decodes the
// same in both.
var kvKeyEncodings = []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding}
