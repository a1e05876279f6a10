package guard

import (
	"net/url"
	"strings"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
)

// Target is a gateway request's actor and the path the actor sees.
type Target struct {
	ActorID id.ID
	Token   string // from /gateway/{id}@{token}/...; not checked (as in Rivet OSS)
	// Path is "/" + the rest after the actor segment, plus "?" and the query, byte-exact.
	Path string
}

// IsGatewayPath reports whether the request path is under /gateway/.
func IsGatewayPath(path string) bool { return strings.HasPrefix(path, "/gateway/") }

// ParseDirect parses the direct gateway form /gateway/{actor_id}[@{token}][/{rest}] from
// the raw path and raw query. A path that is not under /gateway/ or contains "//" is not a
// gateway path (ok false); a gateway path whose actor segment is not an id is an
// api.bad_request naming actor_id (Rivet answers 500 there).
func ParseDirect(rawPath, rawQuery string) (t Target, ok bool, err error) {
	rest, found := strings.CutPrefix(rawPath, "/gateway/")
	if !found || strings.Contains(rawPath, "//") {
		return Target{}, false, nil
	}
	seg, tail, _ := strings.Cut(rest, "/")
	if seg == "" {
		return Target{}, false, nil
	}
	seg, err = url.PathUnescape(seg)
	if err != nil {
		return Target{}, true, rerr.BadRequest("actor_id", "invalid percent-encoding")
	}
	idPart, token, _ := strings.Cut(seg, "@")
	aid, err := id.Parse(idPart)
	if err != nil {
		return Target{}, true, rerr.BadRequest("actor_id", err.Error())
	}
	t = Target{ActorID: aid, Token: token, Path: "/" + tail}
	if rawQuery != "" {
		t.Path += "?" + rawQuery
	}
	return t, true, nil
}
