package headlimit

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/tlstest"
)

var testLimits = Limits{MaxBytes: 8 << 10, MaxCount: 20}

// serve runs an http.Server on a Listener with testLimits (and TLS with cfg) whose handler
// answers 200 with the body's length and whether r.TLS is set, or, on /plain400, a
// plain-text 400 of its own.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	return serveWith(t, cfg, testLimits.MaxBytes)
}

func serveWith(t *testing.T, cfg *tls.Config, maxHeaderBytes int) string {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/plain400" {
				http.Error(w, "the handler's own", http.StatusBadRequest)
				return
			}
			n, _ := io.Copy(io.Discard, r.Body)
			fmt.Fprintf(w, "%d %v", n, r.TLS != nil)
		})),
		ConnContext:       ConnContext,
		ConnState:         Rearm,
		ReadHeaderTimeout: 5 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	go func() { _ = srv.Serve(New(inner, testLimits, cfg)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return inner.Addr().String()
}

// head is a GET request with n headers of value v each.
func head(n int, v string) string {
	var b strings.Builder
	b.WriteString("GET / HTTP/1.1\r\nHost: x\r\n")
	for i := range n - 1 {
		fmt.Fprintf(&b, "X-H%d: %s\r\n", i, v)
	}
	b.WriteString("\r\n")
	return b.String()
}

// exchange sends raw on c and reads one response.
func exchange(t *testing.T, c net.Conn, br *bufio.Reader, raw string) (*http.Response, string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _, _ = io.WriteString(c, raw) }()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func wantError(t *testing.T, what string, resp *http.Response, body, code string) {
	t.Helper()
	wantStatus(t, what, resp, body, http.StatusRequestHeaderFieldsTooLarge, code)
}

func wantStatus(t *testing.T, what string, resp *http.Response, body string, status int, code string) {
	t.Helper()
	var e struct{ Group, Code, Message string }
	if err := json.Unmarshal([]byte(body), &e); err != nil || resp.StatusCode != status ||
		e.Group+"."+e.Code != code || e.Message == "" || resp.Header.Get("X-Rivet-Error") != code {
		t.Errorf("%s: %d %s, want %d %s", what, resp.StatusCode, body, status, code)
	}
}

// The answers net/http writes to heads it cannot parse are JSON errors; a handler's own
// plain-text 400 is left as it is.
func TestMalformedHeads(t *testing.T) {
	addr := serveWith(t, nil, 1024) // net/http's own limit below ours: its 431 is turned too
	for _, tc := range []struct {
		name, raw string
		status    int
		code      string
	}{
		{"a NUL in the path", "GET /a\x00b HTTP/1.1\r\nHost: x\r\n\r\n", 400, "api.bad_request"},
		{"a NUL in a header", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", 400, "api.bad_request"},
		{"no Host", "GET / HTTP/1.1\r\n\r\n", 400, "api.bad_request"},
		{"a bad header name", "GET / HTTP/1.1\r\nHost: x\r\nX A: b\r\n\r\n", 400, "api.bad_request"},
		{"not HTTP", "\x16\x03\x01\x00\x05hello\r\n\r\n", 400, "api.bad_request"},
		{"over net/http's own limit", head(2, strings.Repeat("a", 6<<10)), 431, "guard.request_header_fields_too_large"},
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		resp, body := exchange(t, c, bufio.NewReader(c), tc.raw)
		c.Close()
		wantStatus(t, tc.name, resp, body, tc.status, tc.code)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, body := exchange(t, c, bufio.NewReader(c), "GET /plain400 HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 400 || body != "the handler's own\n" {
		t.Fatalf("a handler's 400: %d %q", resp.StatusCode, body)
	}
}

// Heads over either limit get the JSON 431 of their limit; heads at the limits, bodies of
// any size, and each request of a kept-alive connection afresh pass.
func TestLimits(t *testing.T) {
	addr := serve(t, nil)
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	for _, tc := range []struct {
		name, raw, code string
	}{
		{"one header too many", head(21, "v"), "guard.too_many_request_headers"},
		{"200 headers", head(200, "v"), "guard.too_many_request_headers"},
		{"one header over the size", head(2, strings.Repeat("a", 9<<10)), "guard.request_header_fields_too_large"},
		{"a head one byte over", head(2, strings.Repeat("a", testLimits.MaxBytes-len(head(2, ""))+1)), "guard.request_header_fields_too_large"},
		{"2 MiB of headers", head(20, strings.Repeat("a", 100<<10)), "guard.request_header_fields_too_large"},
		{"a head without its end", "GET / HTTP/1.1\r\nX-A: " + strings.Repeat("a", 1<<20), "guard.request_header_fields_too_large"},
	} {
		c, br := dial()
		resp, body := exchange(t, c, br, tc.raw)
		wantError(t, tc.name, resp, body, tc.code)
	}

	// 20 headers, and a head of exactly 8 KiB, pass; so does a 1 MiB body after a head,
	// and the same again on the kept-alive connection.
	exact := head(2, "")
	exact = head(2, strings.Repeat("a", testLimits.MaxBytes-len(exact)))
	if len(exact) != testLimits.MaxBytes {
		t.Fatalf("the exact head is %d bytes", len(exact))
	}
	body := strings.Repeat("b", 1<<20)
	post := fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	c, br := dial()
	for round := range 2 {
		for _, raw := range []string{head(20, "v"), exact, post} {
			resp, got := exchange(t, c, br, raw)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("round %d: %.40q: %d %s, want 200", round, raw, resp.StatusCode, got)
			}
		}
	}
}

// Over TLS the heads are counted in plaintext, handlers see r.TLS, and plain HTTP to the TLS
// port gets 400 guard.wrong_addr_protocol.
func TestTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "test")
	cert, key := ca.Issue(t, t.TempDir(), "server", "127.0.0.1")
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"http/1.1"}})

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	defer client.CloseIdleConnections()
	resp, err := client.Get("https://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "0 true" {
		t.Fatalf("over TLS: %d %q, want 200 with r.TLS set", resp.StatusCode, b)
	}

	tc, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	resp, body := exchange(t, tc, bufio.NewReader(tc), head(2, strings.Repeat("a", 100<<10)))
	wantError(t, "a 100 KiB header over TLS", resp, body, "guard.request_header_fields_too_large")

	plain, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	resp, body = exchange(t, plain, bufio.NewReader(plain), head(1, "v"))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"wrong_addr_protocol"`) {
		t.Fatalf("plain HTTP to TLS: %d %s, want 400 guard.wrong_addr_protocol", resp.StatusCode, body)
	}
}
