package ui

import (
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"
	"strings"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

//go:embed static
var static embed.FS

// CookieName is the cookie that carries the admin token from the login form.
const CookieName = "berth_admin_token"

// maxStateIDs bounds the actor ids of one /ui/actor-states request.
const maxStateIDs = 200

// Options configures Handler.
type Options struct {
	// AdminToken, when set, is required: as the CookieName cookie the login form sets, or
	// as "Authorization: Bearer <token>".
	AdminToken string
	// API is the public API, called in process by /ui/api/.
	API http.Handler
	// DB is this datacenter's store, for /ui/actor-states.
	DB udb.Database
	// Label is this datacenter's label: /ui/actor-states answers for its actors only.
	Label uint16
}

// Handler serves the dashboard under /ui:
//
//	GET  /ui/                 the page (index.html, app.js, style.css)
//	GET  /ui/api/<path>       GET <path> of the public API, with the session's token as bearer
//	GET  /ui/actor-states     ?actor_ids=a,b: {id: {state, generation}} for this datacenter's
//	                          actors (the public actor object has neither)
//	POST /ui/login            form field token: checks it, sets the cookie, back to /ui/
//	POST /ui/logout           clears the cookie
//
// With an admin token configured every path but /ui/login answers 401 without a token (a
// page with the login form for /ui/, JSON otherwise) and 403 with another one. The cookie
// is HttpOnly and SameSite=Strict, scoped to /ui, so page scripts never see the token and
// other sites cannot send it; /ui/api/ passes only GET, so the session cannot write.
func Handler(o Options) http.Handler {
	sub, _ := fs.Sub(static, "static")
	files := http.StripPrefix("/ui/", http.FileServer(http.FS(sub)))
	want := sha256.Sum256([]byte(o.AdminToken))
	check := func(tok string) bool {
		got := sha256.Sum256([]byte(tok))
		return subtle.ConstantTimeCompare(got[:], want[:]) == 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ui/login", func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimSpace(r.PostFormValue("token"))
		if o.AdminToken != "" && !check(tok) {
			loginPage(w, http.StatusForbidden, "That token is not the admin token.")
			return
		}
		http.SetCookie(w, &http.Cookie{Name: CookieName, Value: tok, Path: "/ui", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
	})
	mux.HandleFunc("POST /ui/logout", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: CookieName, Path: "/ui", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /ui/api/", func(w http.ResponseWriter, r *http.Request) {
		out := r.Clone(r.Context())
		out.URL.Path = strings.TrimPrefix(r.URL.Path, "/ui/api")
		out.URL.RawPath = ""
		out.RequestURI = out.URL.RequestURI()
		out.Header.Del("Cookie")
		if tok := token(r); tok != "" {
			out.Header.Set("Authorization", "Bearer "+tok)
		}
		o.API.ServeHTTP(w, out)
	})
	mux.HandleFunc("GET /ui/actor-states", func(w http.ResponseWriter, r *http.Request) {
		actorStates(w, r, o)
	})
	mux.HandleFunc("GET /ui/{$}", func(w http.ResponseWriter, r *http.Request) { files.ServeHTTP(w, r) })
	mux.HandleFunc("GET /ui/{file}", func(w http.ResponseWriter, r *http.Request) { files.ServeHTTP(w, r) })
	mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ui/", http.StatusMovedPermanently) })

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apihttp.SetRoute(r.Context(), "/ui")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
		if o.AdminToken != "" && r.URL.Path != "/ui/login" {
			tok := token(r)
			status := 0
			switch {
			case tok == "":
				status = http.StatusUnauthorized
			case !check(tok):
				status = http.StatusForbidden
			}
			if status != 0 {
				if r.Method == http.MethodGet && (r.URL.Path == "/ui/" || r.URL.Path == "/ui") {
					msg := ""
					if status == http.StatusForbidden {
						msg = "The saved token is not the admin token."
					}
					loginPage(w, status, msg)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				_, _ = w.Write([]byte(`{"group":"api","code":"unauthorized","message":"The dashboard needs the admin token: log in at /ui/."}`))
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// IsPath reports whether path belongs to the dashboard.
func IsPath(path string) bool { return path == "/ui" || strings.HasPrefix(path, "/ui/") }

// token is the request's admin token: the bearer header, else the login cookie.
func token(r *http.Request) string {
	if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(tok)
	}
	if c, err := r.Cookie(CookieName); err == nil {
		return c.Value
	}
	return ""
}

var loginTmpl = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>berth — log in</title>
<link rel="stylesheet" href="/ui/style.css"></head>
<body><main class="login"><h1>berth</h1>
<form method="post" action="/ui/login">
<label>Admin token <input type="password" name="token" id="token" autocomplete="current-password" required autofocus></label>
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
			http.Error(w, `{"group":"api","code":"bad_request","message":"actor_ids: up to 200 comma-separated actor ids"}`, http.StatusBadRequest)
			return
		}
		if aid.Label() == o.Label {
			ids = append(ids, aid)
		}
	}
	out := make(map[string]actorState, len(ids))
	err := udb.View(r.Context(), o.DB, func(rt udb.ReadTransaction) error {
		clear(out)
		for _, aid := range ids {
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
		http.Error(w, `{"group":"core","code":"internal_error","message":"reading actor states failed"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
