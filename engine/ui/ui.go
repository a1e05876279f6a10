package ui

import (
	"context"
	"embed"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/berthhq/berth/engine/reqlog"
	"github.com/berthhq/berth/engine/samples"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

//go:embed static
var static embed.FS

// CookieName is the session cookie the login form sets. It holds a signed session id, never
// a token.
const CookieName = "berth_session"

// maxStateIDs bounds the actor ids of one /ui/actor-states request.
const maxStateIDs = 200

// maxLoginBody bounds a POST /ui/login body.
const maxLoginBody = 4 << 10

// Options configures Handler.
type Options struct {
	// Auth, when enabled, wants a token that may call the API (admin or read, of every
	// namespace or of one): as "Authorization: Bearer <token>", or proved once to the login
	// form, which then sets the session cookie. A namespace token sees its namespace only.
	Auth *auth.Authenticator
	// ResolveNamespace finds a namespace by name (api-peer's resolver), for the grants of
	// namespace tokens; required with Auth.
	ResolveNamespace func(ctx context.Context, name string) (namespace.Namespace, error)
	// API is the public API, called in process by /ui/api/.
	API http.Handler
	// DB is this datacenter's store, for /ui/actor-states.
	DB udb.Database
	// Requests is this node's live request log (the gateway records to it); nil streams
	// nothing.
	Requests *reqlog.Log
	// Samples is this node's metrics history, for /ui/samples; nil answers no samples.
	Samples *samples.Sampler
	// Node is this node's id, named on the charts.
	Node string
	// Label is this datacenter's label: /ui/actor-states answers for its actors only.
	Label uint16
	// ClientIP is the address a request counts as, for the failed-login limit; nil means the
	// socket's peer.
	ClientIP func(*http.Request) string
	// SecureCookie reports whether the session cookie is marked Secure; nil means when the
	// request came over TLS. Behind a TLS-terminating proxy the engine also says yes when a
	// trusted proxy sends X-Forwarded-Proto: https.
	SecureCookie func(*http.Request) bool
	// SessionLifetime is how long a login lasts (default DefaultSessionLifetime).
	SessionLifetime time.Duration
	// MaxSessions bounds the session table (default DefaultMaxSessions); beyond it the least
	// recently used session ends.
	MaxSessions int

	now func() time.Time // tests
}

// tokenKey carries, in a request's context, the token /ui/api/ sends to the API.
type tokenKey struct{}

// authenticate returns the grant of a token the dashboard takes, or the message and status
// that refuse it.
func authenticate(a *auth.Authenticator, tok string) (auth.Grant, int, string) {
	g, err := a.Authenticate(tok)
	switch {
	case err != nil:
		return g, http.StatusForbidden, "That token is not valid here."
	case g.AllowAPI(http.MethodGet) != nil:
		return g, http.StatusForbidden, "A runner token cannot open the dashboard: use an admin or read token."
	}
	return g, 0, ""
}

// Handler serves the dashboard under /ui:
//
//	GET  /ui/                 the page (index.html)
//	GET  /ui/app.js, …        the page's other static files: public, even with auth on
//	GET  /ui/api/<path>       GET <path> of the public API, with the caller's token
//	POST, DELETE /ui/api/…    the inspector's actions (isAction), likewise
//	GET  /ui/actor-states     ?actor_ids=a,b: {id: {state, generation}} for this datacenter's
//	                          actors (the public actor object has neither)
//	GET  /ui/actor-detail     ?actor_id=: host, alarm, hibernating WebSockets and lifecycle
//	                          history of an actor of this datacenter
//	GET  /ui/actor-kv         ?actor_id=&prefix=&cursor=&limit=: a page of its KV entries
//	GET  /ui/actor-sqlite     ?actor_id=&table=&offset=&limit=: its SQLite tables and a page of
//	                          one's rows, read-only (admin tokens only)
//	GET  /ui/actor-requests   ?actor_id=: the actor's gateway requests on this node, live (SSE)
//	GET  /ui/host-actors      ?runner_id= or ?namespace=&envoy_key=: the actors on a host
//	GET  /ui/samples          this node's metrics history for the charts (global tokens)
//	POST /ui/login            form field token: checks it, starts a session, back to /ui/
//	POST /ui/logout           ends the session, clears the cookie
//
// With auth on, the page and the data paths need either a token as a bearer header
// (scripts) or a session: without one they answer 401 (the login form for the page, JSON
// otherwise), with a wrong token, or a runner token, 403. The session's token is checked
// again on every request, so a revoked token ends its sessions. A session lives in this process's
// memory only (it ends when the engine restarts, and each node has its own), for
// SessionLifetime; its cookie is the session id signed with a key made at start, HttpOnly,
// SameSite=Strict, scoped to /ui, Secure when the login came over TLS. The token the login
// proved stays server side: /ui/api/ sends it to the API, so page scripts never see it.
// /ui/api/ passes GET and the inspector's actions only (create, sleep, reschedule and
// destroy an actor, drain a runner or an envoy): the API checks the token's role for each.
//
// Whether or not auth is on, requests other than GET, HEAD and OPTIONS are refused (403
// api.forbidden) when they come from another site: Sec-Fetch-Site, else Origin, else
// Referer must name this host (net/http's CrossOriginProtection, plus the Referer).
func Handler(o Options) http.Handler {
	sub, _ := fs.Sub(static, "static")
	files := http.StripPrefix("/ui/", http.FileServer(http.FS(sub)))
	assets := publicAssets(sub)
	ses := newSessions(o.SessionLifetime, o.MaxSessions, o.now)
	if o.now == nil {
		o.now = time.Now
	}
	if o.Requests == nil {
		o.Requests = &reqlog.Log{}
	}
	limiter := newLoginLimiter(o.now)
	if o.ClientIP == nil {
		o.ClientIP = func(r *http.Request) string {
			host, _, _ := net.SplitHostPort(r.RemoteAddr)
			return host
		}
	}
	if o.SecureCookie == nil {
		o.SecureCookie = func(r *http.Request) bool { return r.TLS != nil }
	}
	// cookie is the session cookie with value, or, with maxAge -1, the one that deletes it.
	cookie := func(r *http.Request, value string, maxAge int) *http.Cookie {
		return &http.Cookie{Name: CookieName, Value: value, Path: "/ui", MaxAge: maxAge, HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: o.SecureCookie(r)}
	}
	cop := http.NewCrossOriginProtection()

	mux := http.NewServeMux()
	mux.HandleFunc("POST /ui/login", func(w http.ResponseWriter, r *http.Request) {
		if !o.Auth.Enabled() { // nothing to prove: the dashboard is open
			http.Redirect(w, r, "/ui/", http.StatusSeeOther)
			return
		}
		client := o.ClientIP(r)
		if limiter.blocked(client) {
			loginPage(w, http.StatusTooManyRequests, "Too many failed logins from your address: wait a minute.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxLoginBody)
		tok := strings.TrimSpace(r.PostFormValue("token"))
		if _, status, msg := authenticate(o.Auth, tok); status != 0 {
			limiter.failed(client)
			loginPage(w, status, msg)
			return
		}
		if c, err := r.Cookie(CookieName); err == nil {
			ses.remove(c.Value)
		}
		http.SetCookie(w, cookie(r, ses.create(tok), int(ses.lifetime/time.Second)))
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
	})
	mux.HandleFunc("POST /ui/logout", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie(CookieName); err == nil {
			ses.remove(c.Value)
		}
		http.SetCookie(w, cookie(r, "", -1))
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
	})
	proxy := func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && !isAction(r.Method, strings.TrimPrefix(r.URL.Path, "/ui/api")) {
			w.Header().Set("Allow", http.MethodGet)
			writeError(w, r, rerr.APIMethodNotAllowed())
			return
		}
		out := r.Clone(r.Context())
		out.URL.Path = strings.TrimPrefix(r.URL.Path, "/ui/api")
		out.URL.RawPath = ""
		out.RequestURI = out.URL.RequestURI()
		out.Header.Del("Cookie")
		out.Header.Del("Authorization")
		if tok, _ := r.Context().Value(tokenKey{}).(string); tok != "" {
			out.Header.Set("Authorization", "Bearer "+tok)
		}
		o.API.ServeHTTP(w, out)
	}
	mux.HandleFunc("GET /ui/api/", proxy)
	mux.HandleFunc("POST /ui/api/", proxy)
	mux.HandleFunc("DELETE /ui/api/", proxy)
	mux.HandleFunc("GET /ui/actor-states", func(w http.ResponseWriter, r *http.Request) {
		actorStates(w, r, o)
	})
	mux.HandleFunc("GET /ui/actor-detail", func(w http.ResponseWriter, r *http.Request) {
		serveActorDetail(w, r, o)
	})
	mux.HandleFunc("GET /ui/actor-kv", func(w http.ResponseWriter, r *http.Request) {
		serveActorKV(w, r, o)
	})
	mux.HandleFunc("GET /ui/actor-sqlite", func(w http.ResponseWriter, r *http.Request) {
		serveActorSQLite(w, r, o)
	})
	mux.HandleFunc("GET /ui/actor-requests", func(w http.ResponseWriter, r *http.Request) {
		serveActorRequests(w, r, o)
	})
	mux.HandleFunc("GET /ui/host-actors", func(w http.ResponseWriter, r *http.Request) {
		serveHostActors(w, r, o)
	})
	mux.HandleFunc("GET /ui/samples", func(w http.ResponseWriter, r *http.Request) {
		serveSamples(w, r, o)
	})
	mux.HandleFunc("GET /ui/{$}", func(w http.ResponseWriter, r *http.Request) { files.ServeHTTP(w, r) })
	mux.HandleFunc("GET /ui/{file}", func(w http.ResponseWriter, r *http.Request) { files.ServeHTTP(w, r) })
	mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ui/", http.StatusMovedPermanently) })

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apihttp.SetRoute(r.Context(), "/ui")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
		if cop.Check(r) != nil || crossSiteReferer(r) {
			writeError(w, r, rerr.APIForbidden())
			return
		}
		switch {
		case (r.Method == http.MethodGet || r.Method == http.MethodHead) && assets[r.URL.Path]:
			files.ServeHTTP(w, r)
			return
		case r.URL.Path == "/ui/login" || r.URL.Path == "/ui/logout":
			mux.ServeHTTP(w, r)
			return
		}
		tok := bearer(r)
		g := auth.Everything
		if o.Auth.Enabled() {
			status, msg := 0, ""
			switch c, err := r.Cookie(CookieName); {
			case tok != "":
				g, status, msg = authenticate(o.Auth, tok)
			case err == nil:
				s, ok := ses.lookup(c.Value)
				if !ok {
					status, msg = http.StatusUnauthorized, "The session has ended: log in again."
					http.SetCookie(w, cookie(r, "", -1))
					break
				}
				tok = s.token
				if g, status, msg = authenticate(o.Auth, tok); status != 0 {
					ses.remove(c.Value)
					http.SetCookie(w, cookie(r, "", -1))
					status, msg = http.StatusUnauthorized, "The session's token is no longer valid: log in again."
				}
			default:
				status = http.StatusUnauthorized
			}
			if status != 0 {
				if r.Method == http.MethodGet && (r.URL.Path == "/ui/" || r.URL.Path == "/ui") {
					loginPage(w, status, msg)
					return
				}
				if status == http.StatusUnauthorized {
					w.Header().Set("WWW-Authenticate", "Bearer")
					writeError(w, r, rerr.APIUnauthorized())
				} else {
					writeError(w, r, rerr.APIForbidden())
				}
				return
			}
		}
		ctx := auth.WithGrant(context.WithValue(r.Context(), tokenKey{}, tok), g)
		mux.ServeHTTP(w, r.WithContext(ctx))
	})
}

// actionPaths are the API calls the inspector's action buttons make, by method.
var actionPaths = map[string]*regexp.Regexp{
	http.MethodPost:   regexp.MustCompile(`^/actors(/[^/]+/(sleep|reschedule))?$|^/(runners|envoys)/[^/]+/drain$`),
	http.MethodDelete: regexp.MustCompile(`^/actors/[^/]+$`),
}

// isAction reports whether method path (of the public API) is one of the inspector's actions.
func isAction(method, path string) bool {
	re := actionPaths[method]
	return re != nil && re.MatchString(path)
}

// IsPath reports whether path belongs to the dashboard.
func IsPath(path string) bool { return path == "/ui" || strings.HasPrefix(path, "/ui/") }

// publicAssets is the set of /ui/<file> paths served without auth: every embedded file but
// the page itself, which is shown only after login.
func publicAssets(sub fs.FS) map[string]bool {
	out := map[string]bool{}
	entries, _ := fs.ReadDir(sub, ".")
	for _, e := range entries {
		if !e.IsDir() && e.Name() != "index.html" {
			out["/ui/"+e.Name()] = true
		}
	}
	return out
}

// bearer is the request's "Authorization: Bearer" token, or "".
func bearer(r *http.Request) string {
	if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(tok)
	}
	return ""
}

// crossSiteReferer reports whether an unsafe request with neither Sec-Fetch-Site nor Origin
// (which CrossOriginProtection checks) has a Referer naming another host. A request with
// none of the three is not from a browser, or from one that hides where it comes from.
func crossSiteReferer(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	ref := r.Header.Get("Referer")
	if ref == "" || r.Header.Get("Sec-Fetch-Site") != "" || r.Header.Get("Origin") != "" {
		return false
	}
	u, err := url.Parse(ref)
	return err != nil || !strings.EqualFold(u.Host, r.Host)
}

// writeError answers with err as the engine's JSON error body.
func writeError(w http.ResponseWriter, r *http.Request, err *rerr.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(apihttp.HeaderError, err.Key())
	w.WriteHeader(err.Status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(err.JSON())
	}
}

var loginTmpl = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>berth — log in</title>
<link rel="stylesheet" href="/ui/style.css"></head>
<body><main class="login"><h1>berth</h1>
<form method="post" action="/ui/login">
<label>Token <input type="password" name="token" id="token" autocomplete="current-password" required autofocus></label>
<button type="submit">Log in</button></form>
{{if .}}<p class="error" id="login-error">{{.}}</p>{{end}}
</main></body></html>`))

func loginPage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	w.WriteHeader(status)
	_ = loginTmpl.Execute(w, msg)
}

// actorState is what /ui/actor-states reports of one actor.
type actorState struct {
	State      string `json:"state"`
	Generation uint32 `json:"generation"`
}

func actorStates(w http.ResponseWriter, r *http.Request, o Options) {
	var ids []id.ID
	for s := range strings.SplitSeq(r.URL.Query().Get("actor_ids"), ",") {
		if s == "" {
			continue
		}
		aid, err := id.Parse(s)
		if err != nil || len(ids) == maxStateIDs {
			writeError(w, r, rerr.BadRequest("actor_ids", "up to 200 comma-separated actor ids"))
			return
		}
		if aid.Label() == o.Label {
			ids = append(ids, aid)
		}
	}
	out := make(map[string]actorState, len(ids))
	sc, err := scope(r, o)
	if err != nil {
		fail(w, r, "resolving the namespace", err)
		return
	}
	err = udb.View(r.Context(), o.DB, func(rt udb.ReadTransaction) error {
		clear(out)
		for _, aid := range ids {
			if sc != (id.ID{}) {
				if ok, err := visible(r.Context(), rt, aid, sc); !ok || err != nil {
					if err != nil {
						return err
					}
					continue
				}
			}
			// Snapshot reads (actor.Lookup): a dashboard may be a moment stale, and it must
			// not make lifecycle transitions retry.
			st, found, err := actor.Lookup(r.Context(), rt, aid)
			if err != nil {
				return err
			}
			if found {
				out[aid.String()] = actorState{State: string(st.Phase), Generation: st.Generation}
			}
		}
		return nil
	})
	if err != nil {
		fail(w, r, "reading actor states", err)
		return
	}
	writeJSON(w, out)
}
