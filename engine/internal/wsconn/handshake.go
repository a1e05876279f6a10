package wsconn

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/berthhq/berth/pkg/rerr"
)

// Offered returns the subprotocols of the request, trimmed, in order.
func Offered(r *http.Request) []string {
	var out []string
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(h, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// IsTarget reports whether r names target t (runner, envoy) by Rivet's target routing: the
// first rivet_target.<t> subprotocol, or else the x-rivet-target header. Paths under
// /gateway/ belong to the actor gateway and are never socket targets.
func IsTarget(r *http.Request, t string) bool {
	if strings.HasPrefix(r.URL.Path, "/gateway/") {
		return false
	}
	for _, p := range Offered(r) {
		if got, ok := strings.CutPrefix(p, "rivet_target."); ok {
			return got == t
		}
	}
	return r.Header.Get("X-Rivet-Target") == t
}

// CheckUpgrade answers a request that must not be upgraded and reports false: a method other
// than GET is 405 api.method_not_allowed; with an admin token set, a token missing from both
// the rivet_token.<t> subprotocol and the x-rivet-token header is 400 guard.missing_header
// and a wrong one 403 api.forbidden (compared in constant time), as on Rivet's guard.
func CheckUpgrade(w http.ResponseWriter, r *http.Request, adminToken string) bool {
	if r.Method != http.MethodGet {
		WriteHTTPError(w, rerr.MethodNotAllowed())
		return false
	}
	if adminToken == "" {
		return true
	}
	tok, has := "", false
	for _, p := range Offered(r) {
		if t, ok := strings.CutPrefix(p, "rivet_token."); ok {
			tok, has = t, true
			break
		}
	}
	if !has {
		tok, has = r.Header.Get("X-Rivet-Token"), r.Header.Get("X-Rivet-Token") != ""
	}
	if !has {
		WriteHTTPError(w, rerr.New("guard", "missing_header"))
		return false
	}
	if subtle.ConstantTimeCompare([]byte(tok), []byte(adminToken)) != 1 {
		WriteHTTPError(w, rerr.Forbidden())
		return false
	}
	return true
}

// WriteHTTPError answers with err's status and its JSON body.
func WriteHTTPError(w http.ResponseWriter, err *rerr.Error) {
	b, _ := json.Marshal(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rerr.HTTPStatus(err))
	_, _ = w.Write(b)
}
