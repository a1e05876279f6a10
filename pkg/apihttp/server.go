package apihttp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
)

// Header names.
const (
	HeaderRayID = "x-rivet-ray-id" // response: the request's ray id
	HeaderError = "x-rivet-error"  // response: group.code of an error response
)

// Options configures New.
type Options struct {
	// Log receives one line per failed request (Error for 5xx, with the cause; Debug for 4xx)
	// and a Debug access line per request. Nil means slog.Default().
	Log *slog.Logger
	// Auth, when enabled, requires "Authorization: Bearer <token>" on every path except
	// PublicPaths: a request without a token gets 401 api.unauthorized, one with an unknown
	// token or one whose grant does not allow the call 403 api.forbidden. Nil: open.
	Auth *auth.Authenticator
	// PublicPaths answer without a token; nil means DefaultPublicPaths. Matched exactly.
	PublicPaths []string
	// DatacenterLabel is put into every ray id.
	DatacenterLabel uint16
}

// DefaultPublicPaths are the paths that never need a token.
var DefaultPublicPaths = []string{"/health", "/metadata"}

// New returns an echo instance set up for a berth API: handlers return errors and the error
// handler turns them into JSON {group, code, message, metadata?} with the rerr status; every
// response carries a fresh ray id (x-rivet-ray-id), which the request context and its logger
// (see RayID, Logger) carry too; bearer auth per Options; a panic in a handler becomes a 500.
// Register routes on it, then serve it as an http.Handler.
func New(opts Options) *echo.Echo {
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	public := opts.PublicPaths
	if public == nil {
		public = DefaultPublicPaths
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler
	e.Pre(requestContext(log, opts.DatacenterLabel), refuseLargeBodies)
	e.Use(recoverPanic, bearerAuth(opts.Auth, public))
	return e
}

// refuseLargeBodies answers a request that says its body is over MaxBodySize with 413
// guard.invalid_request_body before it is routed, as Rivet's guard does: whatever the
// endpoint, and before its token is looked at (the answer tells nothing of the API).
func refuseLargeBodies(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().ContentLength > MaxBodySize {
			return rerr.GuardInvalidRequestBody()
		}
		return next(c)
	}
}

// requestContext gives each request its ray id and logger, runs it, hands a returned error to
// the error handler (so the access line sees the final status), and logs an access line.
func requestContext(log *slog.Logger, label uint16) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			req := c.Request()
			ray := id.New(label).String()
			c.Response().Header().Set(HeaderRayID, ray)
			ri := RequestInfoFrom(req.Context())
			reqLog := log
			if ri != nil {
				reqLog = log.With("request_id", ri.ID)
			}
			ctx := withRequest(req.Context(), ray, reqLog)
			c.SetRequest(req.WithContext(ctx))
			if err := next(c); err != nil {
				c.Error(err)
			}
			if ri != nil {
				// The engine's outer layer writes the access line, with this route.
				ri.Route = c.Path()
				return nil
			}
			Logger(ctx).LogAttrs(ctx, slog.LevelDebug, "request",
				slog.String("method", req.Method), slog.String("path", req.URL.Path),
				slog.Int("status", c.Response().Status), slog.Duration("duration", time.Since(start)))
			return nil
		}
	}
}

// errorHandler writes err as a rerr JSON body and logs it once. Only rerr.Public(err) reaches
// the client; the full error, with its cause, goes only to the log.
func errorHandler(err error, c echo.Context) {
	req := c.Request()
	ctx := req.Context()
	log := Logger(ctx)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		log.LogAttrs(ctx, slog.LevelDebug, "client went away", slog.String("method", req.Method),
			slog.String("path", req.URL.Path), slog.Any("error", err))
		return
	}
	err = fromEcho(err)
	pub := rerr.Public(err)
	status := rerr.HTTPStatus(pub)
	level := slog.LevelDebug
	if status >= 500 {
		level = slog.LevelError
	}
	log.LogAttrs(ctx, level, "request failed", slog.String("method", req.Method), slog.String("path", req.URL.Path),
		slog.Int("status", status), slog.String("error_key", pub.Key()), slog.String("error", err.Error()))
	if c.Response().Committed {
		return // the handler already answered; nothing more can be sent
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	h.Set(HeaderError, pub.Key())
	c.Response().WriteHeader(status)
	if req.Method != http.MethodHead {
		_, _ = c.Response().Write(pub.JSON())
	}
}

// fromEcho maps echo's own errors (no route, wrong method, and the like) to rerr; other errors
// are returned unchanged.
func fromEcho(err error) error {
	var he *echo.HTTPError
	if _, ok := rerr.As(err); ok || !errors.As(err, &he) {
		return err
	}
	switch he.Code {
	case http.StatusNotFound:
		return rerr.APINotFound().WithCause(err)
	case http.StatusMethodNotAllowed:
		return rerr.APIMethodNotAllowed().WithCause(err)
	case http.StatusBadRequest:
		return rerr.BadRequest("", fmt.Sprint(he.Message)).WithCause(err)
	case http.StatusUnauthorized:
		return rerr.APIUnauthorized().WithCause(err)
	case http.StatusForbidden:
		return rerr.APIForbidden().WithCause(err)
	case http.StatusRequestEntityTooLarge:
		return rerr.GuardInvalidRequestBody().WithCause(err)
	case http.StatusServiceUnavailable:
		return rerr.GuardServiceUnavailable().WithCause(err)
	}
	return rerr.Internal(err)
}

// recoverPanic turns a handler panic into core.internal_error, logged with its stack.
func recoverPanic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				err = rerr.Internal(fmt.Errorf("panic: %v\n%s", r, debug.Stack()))
			}
		}()
		return next(c)
	}
}

// bearerAuth keeps the presented token in the request context for forwarding (see Token),
// authenticates it (unless auth is off or the path is public),
// refuses what its grant does not allow (AllowAPI), keeps a namespace-scoped grant to its
// namespace (scopeNamespace), and puts the grant in the request context (auth.FromContext).
func bearerAuth(a *auth.Authenticator, public []string) echo.MiddlewareFunc {
	open := make(map[string]bool, len(public))
	for _, p := range public {
		open[p] = true
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			given, ok := bearer(req.Header.Get(echo.HeaderAuthorization))
			if ok { // forwarded to other datacenters, which check it again (see Token)
				req = req.WithContext(WithToken(req.Context(), given))
				c.SetRequest(req)
			}
			if !a.Enabled() || open[req.URL.Path] {
				return next(c)
			}
			g, err := a.Authenticate(given)
			if err != nil {
				if rerr.Is(err, rerr.CodeAPIUnauthorized) {
					c.Response().Header().Set(echo.HeaderWWWAuthenticate, "Bearer")
				}
				return err
			}
			if err := g.AllowAPI(req.Method); err != nil {
				return err
			}
			if !g.Global() {
				if err := scopeNamespace(c, g); err != nil {
					return err
				}
			}
			c.SetRequest(req.WithContext(auth.WithGrant(req.Context(), g)))
			return next(c)
		}
	}
}

// unscopedRoutes take no namespace query: the node's own, the datacenters and the namespaces
// (whose handlers filter them by the grant).
var unscopedRoutes = map[string]bool{"/health": true, "/metadata": true, "/datacenters": true, "/namespaces": true}

// scopeNamespace keeps a request of a grant limited to one namespace to that namespace: a
// namespace query naming another is answered as if that namespace did not exist, and a
// route that takes a namespace gets the grant's when the query has none (instead of the
// default namespace).
func scopeNamespace(c echo.Context, g auth.Grant) error {
	req := c.Request()
	q := req.URL.Query()
	for _, ns := range q["namespace"] {
		if ns != g.Namespace {
			return rerr.NamespaceNotFound(ns)
		}
	}
	if len(q["namespace"]) == 0 && !unscopedRoutes[c.Path()] {
		// Appended, not re-encoded: the rest of the query reaches the handler as sent.
		add := "namespace=" + url.QueryEscape(g.Namespace)
		if req.URL.RawQuery != "" {
			add = "&" + add
		}
		req.URL.RawQuery += add
	}
	return nil
}

// bearer extracts the token of an "Authorization: Bearer <token>" header; the scheme is
// case-insensitive. An empty token counts as none.
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}
