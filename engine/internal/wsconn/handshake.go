package wsconn

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/id"
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

// CheckUpgrade answers a request that must not be upgraded and reports false: with auth
// on, a token missing from both the rivet_token.<t> subprotocol and the x-rivet-token header
// is api.unauthorized, an unknown one, or one whose grant allow refuses, api.forbidden; then
// a method other than GET is 405 api.method_not_allowed. The token is checked before
// anything else about the request. A refused WebSocket handshake is accepted and closed at
// once, as Rivet's guard does, so that the client reads why (Refuse).
func CheckUpgrade(w http.ResponseWriter, r *http.Request, a *auth.Authenticator, allow func(auth.Grant) *rerr.Error, label uint16) bool {
	if err := checkToken(r, a, allow); err != nil {
		Refuse(w, r, err, id.New(label).String())
		return false
	}
	if r.Method != http.MethodGet {
		WriteHTTPError(w, rerr.APIMethodNotAllowed())
		return false
	}
	return true
}

// checkToken returns the error of a socket request whose token is missing, unknown or not
// allowed, nil otherwise (and always when auth is off).
func checkToken(r *http.Request, a *auth.Authenticator, allow func(auth.Grant) *rerr.Error) *rerr.Error {
	if !a.Enabled() {
		return nil
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
	if has && tok == "" { // an empty rivet_token.: a wrong token, not a missing one
		return rerr.APIForbidden()
	}
	g, err := a.Authenticate(tok)
	if err != nil {
		return err
	}
	return allow(g)
}

// Refuse answers a request the socket server will not serve: a WebSocket handshake is
// accepted (answering subprotocol "rivet" when offered) and closed with err's close code
// and "group.code#ray" reason, which Rivet's runners log; any other request gets err as a
// JSON answer.
func Refuse(w http.ResponseWriter, r *http.Request, err *rerr.Error, ray string) {
	if !websocketUpgrade(r) {
		w.Header().Set(apihttp.HeaderRayID, ray)
		WriteHTTPError(w, err)
		return
	}
	var protocols []string
	if slices.Contains(Offered(r), "rivet") {
		protocols = []string{"rivet"}
	}
	ws, aerr := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: protocols, OriginPatterns: []string{"*"}})
	if aerr != nil {
		return // Accept has answered the request
	}
	_ = ws.Close(websocket.StatusCode(rerr.CloseCode(err)), rerr.CloseReason(err, ray))
}

// websocketUpgrade reports whether r asks for a WebSocket (GET with Upgrade: websocket).
func websocketUpgrade(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// WriteHTTPError answers with err's status and its JSON body.
func WriteHTTPError(w http.ResponseWriter, err *rerr.Error) {
	b, _ := json.Marshal(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rerr.HTTPStatus(err))
	_, _ = w.Write(b)
}
