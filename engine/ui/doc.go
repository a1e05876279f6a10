// Package ui is the engine's web dashboard at /ui: static HTML, CSS and JS embedded in the
// binary that read the public API (namespaces, runners, envoys, actors) and refresh live.
//
// With an admin token configured, the page and its data need the token: as a bearer header
// (scripts), or proved once to the login form, which starts a server-side session and sets a
// signed, HttpOnly, SameSite=Strict cookie holding only the session id; the token itself
// never reaches the browser. The static assets (stylesheet, script) are public, so the login
// page is styled. State-changing requests from other sites are refused. See Handler.
package ui
