package outbound

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

var loopback = Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}

func TestCheckURL(t *testing.T) {
	cases := []struct {
		p       Policy
		url     string
		want    string // "" for allowed
		blocked bool
	}{
		{Policy{}, "http://8.8.8.8/api", "", false},
		{Policy{}, "https://example.invalid/api", "", false},
		{Policy{}, "http://127.0.0.1:6420/", "address 127.0.0.1 is not an allowed destination (loopback)", true},
		{Policy{}, "http://[::1]/", "address ::1 is not an allowed destination (loopback)", true},
		{Policy{}, "http://10.0.0.1/", "address 10.0.0.1 is not an allowed destination (private)", true},
		{Policy{}, "http://[::ffff:10.0.0.1]/", "address 10.0.0.1 is not an allowed destination (private)", true},
		{Policy{}, "http://169.254.169.254/", "address 169.254.169.254 is not an allowed destination (link-local)", true},
		{Policy{}, "http://100.64.0.1/", "address 100.64.0.1 is not an allowed destination (shared)", true},
		{Policy{}, "http://[fd00::1]/", "address fd00::1 is not an allowed destination (unique-local)", true},
		{Policy{}, "http://0.0.0.0/", "address 0.0.0.0 is not an allowed destination (unspecified)", true},
		{loopback, "http://127.0.0.2/", "", false},
		{loopback, "http://10.0.0.1/", "address 10.0.0.1 is not an allowed destination (private)", true},
		{Policy{AllowPrivate: true}, "http://10.0.0.1/", "", false},
		{Policy{}, "not a url", "relative URL without a base", false},
		{Policy{}, "", "relative URL without a base", false},
		{Policy{}, "ftp://x/", `scheme "ftp" is not allowed, expected http or https`, true},
		{Policy{}, "http://", "empty host", false},
		{Policy{}, "http://8.8.8.8:65536/", "invalid port number", false},
		{Policy{}, "http://h:8x/", "invalid port number", false},
		{Policy{}, "http://u:p@8.8.8.8/", "url must not contain embedded credentials", true},
	}
	for _, c := range cases {
		_, err := c.p.CheckURL(c.url)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want || (Blocked(err) != nil) != c.blocked {
			t.Errorf("CheckURL(%q) = %q (blocked %t), want %q (blocked %t)", c.url, got, Blocked(err) != nil, c.want, c.blocked)
		}
	}
}

func get(t *testing.T, c *http.Client, url string) (string, error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	res, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, _, err := ReadLimited(res.Body, 1<<10)
	return string(b), err
}

func TestLoopbackRefusedByDefault(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	_, err := get(t, NewClient(Options{}), srv.URL)
	if b := Blocked(err); b == nil || !strings.Contains(b.Reason, "(loopback)") {
		t.Fatalf("default policy: err = %v, want a loopback refusal", err)
	}
	body, err := get(t, NewClient(Options{Policy: loopback}), srv.URL)
	if err != nil || body != "ok" {
		t.Fatalf("loopback allowed: %q, %v", body, err)
	}
}

func TestRedirectToRefusedAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://10.0.0.1/metadata", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	_, err := get(t, NewClient(Options{Policy: loopback}), srv.URL)
	if b := Blocked(err); b == nil || b.Reason != "address 10.0.0.1 is not an allowed destination (private)" {
		t.Fatalf("err = %v, want the private refusal", err)
	}
}

func TestRedirectLimit(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Redirect(w, r, "/again", http.StatusFound)
	}))
	defer srv.Close()
	_, err := get(t, NewClient(Options{Policy: loopback}), srv.URL)
	if b := Blocked(err); b == nil || b.Reason != "exceeded the maximum of 4 redirects" {
		t.Fatalf("err = %v", err)
	}
	if n.Load() != 5 {
		t.Errorf("%d requests, want 5 (the first and 4 redirects)", n.Load())
	}
}

// flipResolver answers an allowed address the first time and a private one
// after,
// as a rebinding attacker's DNS would.
type flipResolver struct{ calls atomic.Int32 }

func (r *flipResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	if r.calls.Add(1) == 1 {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("10.0.0.1")}, nil
}

func TestDialUsesCheckedAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	r := &flipResolver{}
	c := NewClient(Options{Policy: loopback, Resolver: r})
	// The name is resolved once per dial and the checked address is dialled.
	body, err := get(t, c, "http://rebind.test:"+port+"/")
	if err != nil || body != "ok" {
		t.Fatalf("first call: %q, %v", body, err)
	}
	c.CloseIdleConnections()
	_, err = get(t, c, "http://rebind.test:"+port+"/")
	if b := Blocked(err); b == nil || b.Reason != `host "rebind.test" resolved to no allowed addresses` {
		t.Fatalf("second call after rebinding: err = %v", err)
	}
}

func TestMixedAnswerDialsOnlyAllowed(t *testing.T) {
	d := &dialer{policy: Policy{}, resolver: staticResolver{netip.MustParseAddr("127.0.0.1")}}
	if _, err := d.dial(context.Background(), "tcp", "x.test:1"); Blocked(err) == nil {
		t.Fatalf("err = %v, want a refusal", err)
	}
}

type staticResolver []netip.Addr

func (s staticResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return s, nil
}

func TestReadLimited(t *testing.T) {
	b, trunc, err := ReadLimited(strings.NewReader("abcdef"), 4)
	if string(b) != "abcd" || !trunc || err != nil {
		t.Fatalf("%q %t %v", b, trunc, err)
	}
	b, trunc, _ = ReadLimited(strings.NewReader("ab"), 4)
	if string(b) != "ab" || trunc {
		t.Fatalf("%q %t", b, trunc)
	}
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:1/", "https://[::ffff:10.0.0.1]/x", "ftp://a", "http://u@h/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := Policy{}.CheckURL(s)
		if err == nil {
			if a, perr := netip.ParseAddr(u.Hostname()); perr == nil && Category(a) != "" {
				t.Fatalf("%q allowed although %s", s, Category(a))
			}
		}
	})
}
