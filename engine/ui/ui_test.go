package ui

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/auth"
)

const testToken = "s3cret-token"

// fakeAPI answers every request with the Authorization and Cookie headers it received.
var fakeAPI = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"path": r.URL.Path,
		"authorization": r.Header.Get("Authorization"), "cookie": r.Header.Get("Cookie")})
})

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newHandler(t *testing.T, token string, mod ...func(*Options)) http.Handler {
	t.Helper()
	o := Options{Auth: auth.Admin(token), API: fakeAPI}
	for _, m := range mod {
		m(&o)
	}
	return Handler(o)
}

// do sends method path to h with the given headers ("Name: value") and returns the answer.
func do(h http.Handler, method, path, body string, headers ...string) *http.Response {
	var req *http.Request
	if body != "" {
		req = httptest.NewRequest(method, "http://berth.test"+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req = httptest.NewRequest(method, "http://berth.test"+path, nil)
	}
	for _, hdr := range headers {
		k, v, _ := strings.Cut(hdr, ": ")
		req.Header.Add(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func bodyOf(t *testing.T, res *http.Response) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := res.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}

// login posts the token to h and returns the session cookie it set.
func login(t *testing.T, h http.Handler, token string) *http.Cookie {
	t.Helper()
	res := do(h, "POST", "/ui/login", url.Values{"token": {token}}.Encode(), "Sec-Fetch-Site: same-origin")
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d %s", res.StatusCode, bodyOf(t, res))
	}
	for _, c := range res.Cookies() {
		if c.Name == CookieName {
			return c
		}
	}
	t.Fatalf("login set no %s cookie: %v", CookieName, res.Header.Values("Set-Cookie"))
	return nil
}

func withCookie(c *http.Cookie) string { return "Cookie: " + c.Name + "=" + c.Value }

// wantError checks res is the JSON error group.code with status.
func wantError(t *testing.T, what string, res *http.Response, status int, key string) {
	t.Helper()
	body := bodyOf(t, res)
	var e struct{ Group, Code, Message string }
	if res.StatusCode != status || json.Unmarshal([]byte(body), &e) != nil || e.Group+"."+e.Code != key || e.Message == "" ||
		res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("%s: %d %s %q; want %d %s", what, res.StatusCode, res.Header.Get("Content-Type"), body, status, key)
	}
}

// The static assets are served without auth, so the login page is styled; the page and the
// data paths are not.
func TestUIStaticAssetsArePublic(t *testing.T) {
	h := newHandler(t, testToken)
	for path, contains := range map[string]string{"/ui/style.css": "main.login", "/ui/app.js": "hashchange"} {
		res := do(h, "GET", path, "")
		if body := bodyOf(t, res); res.StatusCode != 200 || !strings.Contains(body, contains) {
			t.Errorf("GET %s without auth: %d %.80q", path, res.StatusCode, body)
		}
	}
	res := do(h, "GET", "/ui/", "")
	body := bodyOf(t, res)
	if res.StatusCode != 401 || !strings.Contains(body, `name="token"`) || !strings.Contains(body, `<link rel="stylesheet" href="/ui/style.css">`) {
		t.Errorf("GET /ui/ without auth: %d %q; want 401 with the login form and the stylesheet", res.StatusCode, body)
	}
	if strings.Contains(body, `id="view"`) {
		t.Errorf("the login page shows the dashboard")
	}
	res = do(h, "GET", "/ui/index.html", "")
	if body := bodyOf(t, res); strings.Contains(body, `id="view"`) {
		t.Errorf("GET /ui/index.html without auth shows the dashboard: %d", res.StatusCode)
	}
	wantError(t, "GET /ui/api/namespaces", do(h, "GET", "/ui/api/namespaces", ""), 401, "api.unauthorized")
	wantError(t, "GET /ui/actor-states", do(h, "GET", "/ui/actor-states?actor_ids=", ""), 401, "api.unauthorized")
}

// Logging in sets a cookie holding a signed session id, never the token, with the flags
// that keep it from scripts and other sites; the session then reads the API with the token,
// sent server side.
func TestUILoginStartsASession(t *testing.T) {
	h := newHandler(t, testToken)
	res := do(h, "POST", "/ui/login", url.Values{"token": {"wrong"}}.Encode())
	if res.StatusCode != 403 || len(res.Cookies()) != 0 || !strings.Contains(bodyOf(t, res), "not valid here") {
		t.Fatalf("login with a wrong token: %d, cookies %v", res.StatusCode, res.Cookies())
	}

	res = do(h, "POST", "/ui/login", url.Values{"token": {testToken}}.Encode(), "Origin: http://berth.test")
	raw := strings.Join(res.Header.Values("Set-Cookie"), "\n")
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/" {
		t.Fatalf("login: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	if strings.Contains(raw, testToken) || strings.Contains(raw, url.QueryEscape(testToken)) {
		t.Fatalf("Set-Cookie holds the token: %s", raw)
	}
	cs := res.Cookies()
	if len(cs) != 1 {
		t.Fatalf("login set %d cookies: %s", len(cs), raw)
	}
	c := cs[0]
	if c.Name != CookieName || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/ui" ||
		c.MaxAge != int(DefaultSessionLifetime/time.Second) || c.Secure {
		t.Errorf("session cookie over plain http: %s", raw)
	}
	if id, mac, ok := strings.Cut(c.Value, "."); !ok || len(id) != 43 || len(mac) != 43 {
		t.Errorf("cookie value %q is not <id>.<mac>", c.Value)
	}

	res = do(h, "GET", "/ui/api/namespaces", "", withCookie(c))
	var got map[string]string
	if err := json.Unmarshal([]byte(bodyOf(t, res)), &got); err != nil || res.StatusCode != 200 {
		t.Fatalf("GET /ui/api/namespaces with the session: %d %v", res.StatusCode, err)
	}
	if got["path"] != "/namespaces" || got["authorization"] != "Bearer "+testToken || got["cookie"] != "" {
		t.Errorf("the API saw %v; want the admin token as bearer and no cookie", got)
	}
	res = do(h, "GET", "/ui/", "", withCookie(c))
	if body := bodyOf(t, res); res.StatusCode != 200 || !strings.Contains(body, `id="view"`) {
		t.Errorf("GET /ui/ with the session: %d", res.StatusCode)
	}
}

// A cookie that was tampered with, forged, or signed by another process is refused.
func TestUITamperedCookieIsRefused(t *testing.T) {
	h := newHandler(t, testToken)
	c := login(t, h, testToken)
	other := login(t, newHandler(t, testToken), testToken) // another key
	id, mac, _ := strings.Cut(c.Value, ".")
	flip := func(s string) string {
		b := []byte(s)
		if b[5] == 'A' {
			b[5] = 'B'
		} else {
			b[5] = 'A'
		}
		return string(b)
	}
	for name, value := range map[string]string{
		"id changed":       flip(id) + "." + mac,
		"mac changed":      id + "." + flip(mac),
		"no mac":           id,
		"mac dropped":      id + ".",
		"the token":        testToken,
		"another process":  other.Value,
		"empty":            "",
		"swapped":          mac + "." + id,
		"id padded":        id + "=." + mac,
		"garbage":          "!!!.???",
		"mac of other key": id + "." + strings.SplitN(other.Value, ".", 2)[1],
	} {
		res := do(h, "GET", "/ui/api/namespaces", "", "Cookie: "+CookieName+"="+value)
		wantError(t, name, res, 401, "api.unauthorized")
	}
	// The genuine one still works.
	if res := do(h, "GET", "/ui/api/namespaces", "", withCookie(c)); res.StatusCode != 200 {
		t.Errorf("genuine cookie: %d", res.StatusCode)
	}
}

// A session ends after its lifetime: the page shows the login form again and clears the
// cookie, the data paths answer 401.
func TestUIExpiredSessionIsRefused(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	h := newHandler(t, testToken, func(o *Options) { o.now = clk.now; o.SessionLifetime = time.Hour })
	c := login(t, h, testToken)
	if c.MaxAge != 3600 {
		t.Errorf("MaxAge %d, want 3600", c.MaxAge)
	}
	clk.add(59 * time.Minute)
	if res := do(h, "GET", "/ui/api/namespaces", "", withCookie(c)); res.StatusCode != 200 {
		t.Fatalf("before expiry: %d", res.StatusCode)
	}
	clk.add(time.Minute)
	wantError(t, "after expiry", do(h, "GET", "/ui/api/namespaces", "", withCookie(c)), 401, "api.unauthorized")
	res := do(h, "GET", "/ui/", "", withCookie(c))
	body := bodyOf(t, res)
	if res.StatusCode != 401 || !strings.Contains(body, "session has ended") {
		t.Errorf("GET /ui/ after expiry: %d %q", res.StatusCode, body)
	}
	if cs := res.Cookies(); len(cs) != 1 || cs[0].Name != CookieName || cs[0].MaxAge >= 0 {
		t.Errorf("GET /ui/ after expiry does not clear the cookie: %v", res.Header.Values("Set-Cookie"))
	}
}

// Logging out ends the session server side, so a copy of the cookie is worthless.
func TestUILogoutEndsTheSession(t *testing.T) {
	h := newHandler(t, testToken)
	c := login(t, h, testToken)
	keep := login(t, h, testToken)
	res := do(h, "POST", "/ui/logout", "", withCookie(c), "Sec-Fetch-Site: same-origin")
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", res.StatusCode)
	}
	if cs := res.Cookies(); len(cs) != 1 || cs[0].Name != CookieName || cs[0].MaxAge >= 0 || cs[0].Value != "" {
		t.Errorf("logout does not clear the cookie: %v", res.Header.Values("Set-Cookie"))
	}
	wantError(t, "old cookie after logout", do(h, "GET", "/ui/api/namespaces", "", withCookie(c)), 401, "api.unauthorized")
	if res := do(h, "GET", "/ui/api/namespaces", "", withCookie(keep)); res.StatusCode != 200 {
		t.Errorf("another session after logout: %d", res.StatusCode)
	}
	// Logging out without a session is harmless.
	if res := do(h, "POST", "/ui/logout", ""); res.StatusCode != http.StatusSeeOther {
		t.Errorf("logout without a session: %d", res.StatusCode)
	}
}

// The session table is bounded: beyond MaxSessions the least recently used session ends.
func TestUISessionTableIsBounded(t *testing.T) {
	h := newHandler(t, testToken, func(o *Options) { o.MaxSessions = 2 })
	a, b := login(t, h, testToken), login(t, h, testToken)
	do(h, "GET", "/ui/api/x", "", withCookie(a)) // a is now the most recently used
	c := login(t, h, testToken)
	for name, want := range map[*http.Cookie]int{a: 200, b: 401, c: 200} {
		if res := do(h, "GET", "/ui/api/x", "", withCookie(name)); res.StatusCode != want {
			t.Errorf("session %s: %d, want %d", name.Value[:8], res.StatusCode, want)
		}
	}
}

// Scripts keep using the bearer header; a wrong one is 403.
func TestUIBearerToken(t *testing.T) {
	h := newHandler(t, testToken)
	res := do(h, "GET", "/ui/api/namespaces", "", "Authorization: Bearer "+testToken)
	var got map[string]string
	if err := json.Unmarshal([]byte(bodyOf(t, res)), &got); err != nil || res.StatusCode != 200 || got["authorization"] != "Bearer "+testToken {
		t.Errorf("bearer: %d %v", res.StatusCode, got)
	}
	wantError(t, "wrong bearer", do(h, "GET", "/ui/api/namespaces", "", "Authorization: Bearer nope"), 403, "api.forbidden")
	if res := do(h, "GET", "/ui/", "", "Authorization: Bearer nope"); res.StatusCode != 403 {
		t.Errorf("GET /ui/ with a wrong bearer: %d", res.StatusCode)
	}
}

// Without an admin token the dashboard is open, as before.
func TestUIWithoutAuth(t *testing.T) {
	h := newHandler(t, "")
	if res := do(h, "GET", "/ui/", ""); res.StatusCode != 200 || !strings.Contains(bodyOf(t, res), `id="view"`) {
		t.Errorf("GET /ui/: %d", res.StatusCode)
	}
	res := do(h, "GET", "/ui/api/namespaces", "")
	var got map[string]string
	if err := json.Unmarshal([]byte(bodyOf(t, res)), &got); err != nil || res.StatusCode != 200 || got["authorization"] != "" {
		t.Errorf("GET /ui/api/namespaces: %d %v", res.StatusCode, got)
	}
	res = do(h, "POST", "/ui/login", url.Values{"token": {"anything"}}.Encode())
	if res.StatusCode != http.StatusSeeOther || len(res.Cookies()) != 0 {
		t.Errorf("login without auth: %d, cookies %v", res.StatusCode, res.Header.Values("Set-Cookie"))
	}
}

// State-changing requests from another site are refused with 403 api.forbidden, with auth
// on or off; same-origin ones, and ones from no browser, pass.
func TestUICrossSitePostIsRefused(t *testing.T) {
	form := url.Values{"token": {testToken}}.Encode()
	for _, token := range []string{testToken, ""} {
		h := newHandler(t, token)
		keep := login(t, newHandler(t, testToken), testToken)
		if token != "" {
			keep = login(t, h, testToken)
		}
		for _, tc := range []struct {
			name    string
			headers []string
			ok      bool
		}{
			{"Sec-Fetch-Site cross-site", []string{"Sec-Fetch-Site: cross-site"}, false},
			{"Sec-Fetch-Site same-site", []string{"Sec-Fetch-Site: same-site"}, false},
			{"cross-site Origin", []string{"Origin: https://evil.example"}, false},
			{"cross-site Origin, same host name", []string{"Origin: http://berth.test:8080"}, false},
			{"cross-site Referer", []string{"Referer: https://evil.example/page"}, false},
			{"cross-site Origin, same-host Referer", []string{"Origin: https://evil.example", "Referer: http://berth.test/ui/"}, false},
			{"Sec-Fetch-Site same-origin", []string{"Sec-Fetch-Site: same-origin"}, true},
			{"Sec-Fetch-Site none", []string{"Sec-Fetch-Site: none"}, true},
			{"same Origin", []string{"Origin: http://berth.test"}, true},
			{"same-host Referer", []string{"Referer: http://berth.test/ui/"}, true},
			{"no browser", nil, true},
		} {
			for _, path := range []string{"/ui/login", "/ui/logout"} {
				res := do(h, "POST", path, form, append([]string{withCookie(keep)}, tc.headers...)...)
				if tc.ok {
					if res.StatusCode != http.StatusSeeOther {
						t.Errorf("auth %v, POST %s, %s: %d, want 303", token != "", path, tc.name, res.StatusCode)
					}
					continue
				}
				if len(res.Cookies()) != 0 {
					t.Errorf("auth %v, POST %s, %s: set cookies %v", token != "", path, tc.name, res.Header.Values("Set-Cookie"))
				}
				wantError(t, "POST "+path+", "+tc.name, res, 403, "api.forbidden")
				if token != "" {
					if res := do(h, "GET", "/ui/api/x", "", withCookie(keep)); res.StatusCode != 200 {
						t.Fatalf("a refused cross-site logout ended the session: %d", res.StatusCode)
					}
				}
			}
			if tc.ok && token != "" {
				keep = login(t, h, testToken) // the logout ended it
			}
		}
	}
}

// Over TLS the session cookie is Secure, and logging out clears it the same way.
func TestUISecureCookieUnderTLS(t *testing.T) {
	srv := httptest.NewTLSServer(newHandler(t, testToken))
	defer srv.Close()
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	defer client.CloseIdleConnections()
	res, err := client.PostForm(srv.URL+"/ui/login", url.Values{"token": {testToken}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	cs := res.Cookies()
	if res.StatusCode != http.StatusSeeOther || len(cs) != 1 || !cs[0].Secure || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("login over TLS: %d %v", res.StatusCode, res.Header.Values("Set-Cookie"))
	}
	req, _ := http.NewRequest("POST", srv.URL+"/ui/logout", nil)
	req.AddCookie(cs[0])
	req.Header.Set("Origin", srv.URL)
	res, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if cs := res.Cookies(); res.StatusCode != http.StatusSeeOther || len(cs) != 1 || !cs[0].Secure || cs[0].MaxAge >= 0 {
		t.Errorf("logout over TLS: %d %v", res.StatusCode, res.Header.Values("Set-Cookie"))
	}
}

// Failed logins are limited per client address: the 11th within a minute is refused, even
// with the right token, while another address may still log in; a minute later the client
// may try again.
func TestUILoginAttemptsAreLimited(t *testing.T) {
	clock := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	h := newHandler(t, testToken, func(o *Options) {
		o.now = func() time.Time { return clock }
		o.ClientIP = func(r *http.Request) string { return r.Header.Get("X-Test-Client") }
	})
	login := func(client, token string) int {
		res := do(h, "POST", "/ui/login", url.Values{"token": {token}}.Encode(), "X-Test-Client: "+client)
		res.Body.Close()
		return res.StatusCode
	}
	for i := range maxLoginFailures {
		if s := login("a", "wrong"); s != 403 {
			t.Fatalf("failed login %d: %d, want 403", i+1, s)
		}
	}
	if s := login("a", testToken); s != 429 {
		t.Errorf("login after %d failures: %d, want 429", maxLoginFailures, s)
	}
	if s := login("b", testToken); s != 303 {
		t.Errorf("another client's login: %d, want 303", s)
	}
	clock = clock.Add(loginFailureWindow)
	if s := login("a", testToken); s != 303 {
		t.Errorf("login a window later: %d, want 303", s)
	}
}

// SecureCookie decides the cookie's Secure flag (the engine says yes behind a trusted
// TLS-terminating proxy).
func TestUISecureCookie(t *testing.T) {
	h := newHandler(t, testToken, func(o *Options) {
		o.SecureCookie = func(r *http.Request) bool { return r.Header.Get("X-Forwarded-Proto") == "https" }
	})
	for _, proto := range []string{"http", "https"} {
		res := do(h, "POST", "/ui/login", url.Values{"token": {testToken}}.Encode(), "X-Forwarded-Proto: "+proto)
		res.Body.Close()
		cookies := res.Cookies()
		if len(cookies) != 1 || cookies[0].Secure != (proto == "https") {
			t.Errorf("login over %s: cookies %+v", proto, cookies)
		}
	}
}

// /ui/api/ passes the inspector's actions (and only those) to the API with the session's
// token; a cross-site action is refused before it reaches the API.
func TestUIActionsThroughTheProxy(t *testing.T) {
	h := newHandler(t, testToken)
	c := login(t, h, testToken)
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"POST", "/ui/api/actors?namespace=default", 200},
		{"POST", "/ui/api/actors/abc/sleep?namespace=default", 200},
		{"POST", "/ui/api/actors/abc/reschedule", 200},
		{"DELETE", "/ui/api/actors/abc?namespace=default", 200},
		{"POST", "/ui/api/runners/abc/drain", 200},
		{"POST", "/ui/api/envoys/env-1/drain?namespace=default", 200},
		{"POST", "/ui/api/namespaces", 405},
		{"POST", "/ui/api/actors/abc/kv/keys/a", 405},
		{"DELETE", "/ui/api/runner-configs/pool", 405},
		{"DELETE", "/ui/api/actors/abc/sleep", 405},
		{"PUT", "/ui/api/actors", 405},
	} {
		res := do(h, tc.method, tc.path, "", withCookie(c), "Sec-Fetch-Site: same-origin")
		body := bodyOf(t, res)
		if res.StatusCode != tc.status {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, res.StatusCode, body, tc.status)
			continue
		}
		if tc.status == 200 && !strings.Contains(body, `"authorization":"Bearer `+testToken+`"`) {
			t.Errorf("%s %s reached the API as %s", tc.method, tc.path, body)
		}
	}
	wantError(t, "cross-site POST", do(h, "POST", "/ui/api/actors/abc/sleep", "", withCookie(c), "Sec-Fetch-Site: cross-site"), 403, "api.forbidden")
	wantError(t, "POST /ui/api/namespaces", do(h, "POST", "/ui/api/namespaces", "", withCookie(c), "Sec-Fetch-Site: same-origin"), 405, "api.method_not_allowed")
}

// SQLite rows are application data: a read token may not read them (admin tokens only),
// whatever the query.
func TestUISQLiteNeedsAnAdminToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.json")
	readTok := auth.NewToken()
	if err := auth.WriteFile(path, auth.File{Tokens: []auth.Entry{{ID: "dash", Namespace: "prod", Role: auth.RoleRead, SHA256: auth.Hash(readTok)}}}); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(auth.Options{AdminToken: testToken, TokensFile: path})
	if err != nil {
		t.Fatal(err)
	}
	h := Handler(Options{Auth: a, API: fakeAPI})
	for _, q := range []string{"", "?actor_id=x", "?actor_id=x&table=t"} {
		wantError(t, "read token: /ui/actor-sqlite"+q, do(h, "GET", "/ui/actor-sqlite"+q, "", "Authorization: Bearer "+readTok), 403, "api.forbidden")
	}
	// The admin token passes the role check (and fails on the malformed id).
	wantError(t, "admin token", do(h, "GET", "/ui/actor-sqlite?actor_id=x", "", "Authorization: Bearer "+testToken), 400, "api.bad_request")
}
