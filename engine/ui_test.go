package engine

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/berthhq/berth/engine/ui"
	"github.com/berthhq/berth/ops/actor"
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
		{"/ui/app.js", "", 200, "refresh"},
		{"/ui/style.css", "", 200, "main.login"},
		{"/ui/api/namespaces", "", 401, "unauthorized"},
		{"/ui/actor-states?actor_ids=", "", 401, "unauthorized"},
		{"/ui/", "wrong", 403, `name="token"`},
		{"/ui/api/namespaces", "wrong", 403, ""},
		{"/ui/", "s3cret", 200, `id="actors"`},
		{"/ui/app.js", "s3cret", 200, "refresh"},
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

// chromiumPath finds a Chromium or Chrome binary, or "".
func chromiumPath() string {
	if p := os.Getenv("BERTH_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// The dashboard, driven in headless Chromium: the login page is styled; log in with the
// admin token, then the created actor appears, running, with its generation, and the runner
// with its slots; log out, and the login form is back.
func TestDashboardInChromium(t *testing.T) {
	browserPath := chromiumPath()
	if browserPath == "" {
		t.Skip("no chromium binary found (install Debian's chromium package, as .ci/run does, or set BERTH_CHROMIUM)")
	}
	e := startEngine(t, testConfig("tok"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := newEchoRunner(t, ctx, e)
	a, err := e.lifecycle.Actors.Create(ctx, actor.CreateInput{Namespace: defaultNS(t, e), NamespaceName: "default",
		Name: "dash-actor", Selector: "pool", CrashPolicy: actor.CrashSleep})
	if err != nil {
		t.Fatal(err)
	}
	<-r.starts

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browserPath), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()))
	actx, stopAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer stopAlloc()
	bctx, stopBrowser := chromedp.NewContext(actx)
	defer stopBrowser()

	aid := a.ActorID.String()
	row := `//table[@id="actors"]//tr[td[text()="` + aid + `"]]`
	err = chromedp.Do(bctx,
		chromedp.Navigate("http://"+e.PublicAddr().String()+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
	)
	if err != nil {
		t.Fatalf("login page: %v", err)
	}
	loginWidth, err := chromedp.Run(bctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("main.login")).maxWidth`))
	if err != nil {
		t.Fatalf("login page style: %v", err)
	}
	err = chromedp.Do(bctx,
		chromedp.SendKeys(chromedp.CSS(`#token`), "tok"),
		chromedp.Submit(chromedp.CSS(`#token`)),
		chromedp.WaitVisible(chromedp.Search(row)),
	)
	if err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	cookies, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.cookie`))
	if err != nil {
		t.Fatalf("document.cookie: %v", err)
	}
	// The stylesheet is public, so the login page is styled; the session cookie is HttpOnly.
	if loginWidth == "none" || loginWidth == "" {
		t.Errorf("login page unstyled: main.login max-width %q", loginWidth)
	}
	if cookies != "" {
		t.Errorf("page scripts see cookies %q", cookies)
	}
	text := func(sel chromedp.Search) string {
		v, err := chromedp.Run(bctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return strings.TrimSpace(v)
	}
	state, generation := text(chromedp.Search(row+`/td[3]`)), text(chromedp.Search(row+`/td[4]`))
	slots := text(`//table[@id="runners"]//tbody/tr[1]/td[4]`)
	loginStatus := text(`//span[@id="status"]`)
	if state != "running" || generation != "0" {
		t.Errorf("actor row: state %q generation %q; want running, 0", state, generation)
	}
	if !strings.Contains(slots, "/") || !strings.HasPrefix(loginStatus, "updated") {
		t.Errorf("runner slots %q, status %q", slots, loginStatus)
	}

	// Logging out ends the session: the page shows the login form again.
	err = chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(`form.logout button`)),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.Navigate("http://"+e.PublicAddr().String()+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
	)
	if err != nil {
		t.Fatalf("logout: %v", err)
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
