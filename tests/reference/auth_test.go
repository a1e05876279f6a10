package reference

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/berthhq/berth/api-public/openapitest"
	"github.com/berthhq/berth/pkg/id"
)

func init() {
	register(
		scenario{name: "auth_rest", doc: "every operation of the OpenAPI contract without a token and with a wrong one, on an engine with an admin token", auth: true, run: authREST},
		scenario{name: "auth_sockets", doc: "the runner and envoy sockets without a token, with a wrong one, and without a query", auth: true, run: authSockets},
	)
}

// operation is one method and path of the public API.
type operation struct{ method, path string }

// contractOperations lists every operation of api-public/openapi.yaml, in path order.
func contractOperations(s *Session) []operation {
	s.T.Helper()
	path, err := openapitest.SpecPath()
	if err != nil {
		s.T.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromFile(path)
	if err != nil {
		s.T.Fatal(err)
	}
	var ops []operation
	for p, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			ops = append(ops, operation{method: method, path: p})
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].path != ops[j].path {
			return ops[i].path < ops[j].path
		}
		return ops[i].method < ops[j].method
	})
	return ops
}

// concretePath fills an operation's path parameters with values of the right shape and
// adds the namespace.
func concretePath(p string) string {
	r := strings.NewReplacer("{actor_id}", id.New(1).String(), "{runner_id}", id.New(1).String(),
		"{runner_name}", "pool", "{key}", "a2V5", "{envoy_key}", "env-1")
	return r.Replace(p) + "?namespace={ns}"
}

// authREST: every operation of the public API without a token and with a wrong one, on an
// engine with an admin token; then the few that answer without one, with the right token.
func authREST(s *Session) {
	for _, op := range contractOperations(s) {
		path := concretePath(op.path)
		var body any
		if op.method == http.MethodPost || op.method == http.MethodPut {
			body = map[string]any{}
		}
		s.Record(op.method+" "+op.path+" without a token", errorOf(s.Do(Request{Method: op.method, Path: path, Body: body, Anonymous: true})))
		s.Record(op.method+" "+op.path+" with a wrong token", errorOf(s.Do(Request{Method: op.method, Path: path, Body: body, Token: "wrong"})))
	}
	for _, p := range []string{"/health", "/metadata"} {
		r := s.Do(Request{Method: http.MethodGet, Path: p})
		s.Record("GET "+p+" with the token", map[string]any{"status": r.Status})
	}
}

// socketOutcome dials a runner or envoy socket and says what the client sees: the
// handshake's status when it is refused, else the close frame that ends the socket (or
// that it stays open for a second without one).
func socketOutcome(s *Session, path string, protocols []string) map[string]any {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(s.Target.URL, "http") + strings.ReplaceAll(path, "{ns}", url.QueryEscape(s.NS))
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{Subprotocols: protocols})
	if err != nil {
		if resp == nil {
			return map[string]any{"handshake": "no answer"}
		}
		return map[string]any{"handshake": resp.StatusCode}
	}
	defer c.CloseNow()
	rctx, rcancel := context.WithTimeout(ctx, time.Second)
	defer rcancel()
	_, _, err = c.Read(rctx)
	var ce websocket.CloseError
	switch {
	case rctx.Err() != nil:
		return map[string]any{"handshake": 101, "open": true}
	case asCloseError(err, &ce):
		return map[string]any{"handshake": 101, "close": int(ce.Code), "reason": ce.Reason}
	}
	return map[string]any{"handshake": 101, "read": "ended without a close frame"}
}

// authSockets: the runner and envoy sockets without a token, with a wrong one, and with the
// right one but a malformed query: refused as unauthenticated before the query is looked at.
func authSockets(s *Session) {
	runner := "/runners/connect?protocol_version=7&namespace={ns}&runner_key=k1"
	envoy := "/envoys/connect?protocol_version=8&namespace={ns}&pool_name=pool&envoy_key=key1&version=1"
	for _, c := range []struct {
		name, path string
		protocols  []string
	}{
		{"runner without a token", runner, []string{"rivet"}},
		{"runner without a token or a query", "/runners/connect", []string{"rivet"}},
		{"runner with a wrong token", runner, []string{"rivet", "rivet_token.wrong"}},
		{"envoy without a token", envoy, []string{"rivet"}},
		{"envoy without a token or a query", "/envoys/connect", []string{"rivet"}},
		{"envoy with a wrong token", envoy, []string{"rivet", "rivet_token.wrong"}},
	} {
		s.Record(c.name, socketOutcome(s, c.path, c.protocols))
	}
}

// asCloseError reports whether err carries a close frame, and stores it in ce.
func asCloseError(err error, ce *websocket.CloseError) bool {
	return errors.As(err, ce)
}
