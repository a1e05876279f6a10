// Package auth decides who may do what: it turns a presented token into a Grant (the admin
// token, or a scoped token from the tokens file) and says which requests a grant allows.
// docs/security.md describes the roles and the tokens file.
package auth

import (
	"context"
	"net/http"

	"github.com/berthhq/berth/pkg/rerr"
)

// Role is what a token may do.
type Role string

const (
	// RoleAdmin may do everything within its namespaces.
	RoleAdmin Role = "admin"
	// RoleRead may list and get (GET and HEAD on the REST API), nothing else.
	RoleRead Role = "read"
	// RoleRunner may connect runners and envoys (and use their KV and SQLite over the
	// socket), and may not call the REST API.
	RoleRunner Role = "runner"
)

// Valid reports whether r is one of the roles.
func (r Role) Valid() bool { return r == RoleAdmin || r == RoleRead || r == RoleRunner }

// Grant is what a request's token allows.
type Grant struct {
	Role Role
	// Namespace limits the grant to one namespace; "" is every namespace (the admin token,
	// or no auth at all).
	Namespace string
	// TokenID names the scoped token in logs; "" for the admin token.
	TokenID string
}

// Everything is the grant of the admin token, and of every request when auth is off.
var Everything = Grant{Role: RoleAdmin}

// Global reports whether g reaches every namespace.
func (g Grant) Global() bool { return g.Namespace == "" }

// Sees reports whether g reaches namespace ns.
func (g Grant) Sees(ns string) bool { return g.Namespace == "" || g.Namespace == ns }

// AllowAPI returns the error for a REST call with method that g may not make, or nil: a
// runner token calls nothing, a read token only GET and HEAD.
func (g Grant) AllowAPI(method string) *rerr.Error {
	switch g.Role {
	case RoleAdmin:
		return nil
	case RoleRead:
		if method == http.MethodGet || method == http.MethodHead {
			return nil
		}
	}
	return rerr.APIForbidden()
}

// AllowHost returns the error for a runner or envoy of namespace ns connecting with g, or
// nil: an admin or runner token of that namespace (or of every namespace).
func (g Grant) AllowHost(ns string) *rerr.Error {
	if (g.Role == RoleAdmin || g.Role == RoleRunner) && g.Sees(ns) {
		return nil
	}
	return rerr.APIForbidden()
}

// AllowGlobal returns the error for a call that reaches beyond one namespace (creating a
// namespace, node to node calls), or nil for the admin token.
func (g Grant) AllowGlobal() *rerr.Error {
	if g.Role == RoleAdmin && g.Global() {
		return nil
	}
	return rerr.APIForbidden()
}

type grantKey struct{}

// WithGrant returns ctx carrying g, the grant of the request it belongs to.
func WithGrant(ctx context.Context, g Grant) context.Context {
	return context.WithValue(ctx, grantKey{}, g)
}

// FromContext returns the grant ctx carries; Everything when it carries none (a call made
// inside the engine).
func FromContext(ctx context.Context) Grant {
	if g, ok := ctx.Value(grantKey{}).(Grant); ok {
		return g
	}
	return Everything
}
