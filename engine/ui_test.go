package engine

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/berthhq/berth/engine/ui"
)

// With auth.admin_token set, /ui refuses a request without the token (401, the login form
// for the page) or with another one (403), but serves its static assets to anyone; the login
// form's session cookie, or a bearer header, opens it, and /ui/api/ then reads the public
// API with the admin token.
func TestDashboardNeedsTheAdminToken(t *testing.T) {
	e := startEngine(t, testConfig("s3cret"))
	base := "http://" + e.PublicAddr().String()
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	client := &http.Client{Transport: &http.Transport{}, CheckRedirect: noRedirect}
	defer client.CloseIdleConnections()

	for _, tc := range []struct {
		path, token string
		status      int
		contains    string
	}{
		{"/ui/", "", 401, `name="token"`},
		{"/ui/app.js", "", 200, "hashchange"},
		{"/ui/style.css", "", 200, "main.login"},
		{"/ui/api/namespaces", "", 401, "unauthorized"},
		{"/ui/actor-states?actor_ids=", "", 401, "unauthorized"},
		{"/ui/", "wrong", 403, `name="token"`},
		{"/ui/api/namespaces", "wrong", 403, ""},
		{"/ui/", "s3cret", 200, `id="view"`},
		{"/ui/app.js", "s3cret", 200, "hashchange"},
		{"/ui/api/namespaces", "s3cret", 200, `"name":"default"`},
	} {
		rep := call(t, client, e.PublicAddr(), tc.path, tc.token)
		if rep.status != tc.status || !strings.Contains(rep.body, tc.contains) {
			t.Errorf("GET %s with token %q: %d %.120q; want %d containing %q", tc.path, tc.token, rep.status, rep.body, tc.status, tc.contains)
		}
	}

	// The login form: a wrong token is refused, the right one sets the cookie.
	res, err := client.PostForm(base+"/ui/login", url.Values{"token": {"wrong"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 || len(res.Cookies()) != 0 {
		t.Fatalf("login with a wrong token: %d, cookies %v", res.StatusCode, res.Cookies())
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Transport: client.Transport, Jar: jar}
	res, err = browser.PostForm(base+"/ui/login", url.Values{"token": {"s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	u, _ := url.Parse(base + "/ui/")
	cookies := jar.Cookies(u)
	if res.StatusCode != 200 || len(cookies) != 1 || cookies[0].Name != ui.CookieName {
		t.Fatalf("login: %d (after redirect), cookies %v", res.StatusCode, cookies)
	}
	if c := res.Request.Response; c == nil || !strings.Contains(strings.Join(c.Header.Values("Set-Cookie"), ";"), "HttpOnly") {
		t.Errorf("login cookie is not HttpOnly")
	}
	if strings.Contains(cookies[0].Value, "s3cret") {
		t.Errorf("login cookie holds the token: %q", cookies[0].Value)
	}
	res, err = browser.Get(base + "/ui/api/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("/ui/api/namespaces with the cookie: %d", res.StatusCode)
	}
	// The proxy passes reads only.
	req, _ := http.NewRequest("POST", base+"/ui/api/namespaces", strings.NewReader(`{"name":"x","display_name":"x"}`))
	res, err = browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST through /ui/api/: %d, want 405", res.StatusCode)
	}
}

// Behind a trusted TLS-terminating proxy (X-Forwarded-Proto: https) the session cookie is
// Secure; the same header from an untrusted peer changes nothing.
func TestDashboardCookieBehindAProxy(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		cfg := testConfig("s3cret")
		if trusted {
			cfg.Guard.TrustedProxies = []string{"127.0.0.1"}
		}
		e := startEngine(t, cfg)
		req, _ := http.NewRequest(http.MethodPost, "http://"+e.PublicAddr().String()+"/ui/login",
			strings.NewReader(url.Values{"token": {"s3cret"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-Proto", "https")
		tr := &http.Transport{}
		res, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		tr.CloseIdleConnections()
		if c := res.Cookies(); len(c) != 1 || c[0].Secure != trusted {
			t.Errorf("trusted proxy %v: cookies %+v, want one, Secure %v", trusted, c, trusted)
		}
	}
}
