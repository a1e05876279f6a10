package security

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/id"
)

// request is a raw HTTP/1.1 request with body, said by Content-Length or sent chunked.
func request(method, target, body string, chunked bool) string {
	h := method + " " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
	if !chunked {
		return h + fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body
	}
	var b strings.Builder
	b.WriteString(h + "Transfer-Encoding: chunked\r\n\r\n")
	for len(body) > 0 {
		n := min(len(body), 64<<10)
		fmt.Fprintf(&b, "%x\r\n%s\r\n", n, body[:n])
		body = body[n:]
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}

// jsonOf is a JSON object of exactly size bytes (size ≥ 8): what the endpoint takes or not
// is the handler's to judge, its size the limit's.
func jsonOf(size int) string { return `{"x":"` + strings.Repeat("a", size-8) + `"}` }

// Oversized and malformed bodies on every REST endpoint that takes one: over its bound
// (said, or sent chunked without a length) 413 guard.invalid_request_body, malformed a JSON
// 400, never a 2xx, a reset or a 5xx; many large bodies at once leave the engine's memory
// where it was.
func TestOversizedAndMalformedBodies(t *testing.T) {
	e := startLimited(t, nil)
	addr := hostPort(e)
	aid := id.New(1).String()
	endpoints := []struct {
		method, target string
		limit          int
	}{
		{http.MethodPost, "/namespaces", 64 << 10},
		{http.MethodPut, "/runner-configs/pool?namespace=default", 2 << 20},
		{http.MethodPost, "/actors?namespace=default", 2 << 20},
		{http.MethodPut, "/actors?namespace=default", 2 << 20},
		{http.MethodPost, "/actors/" + aid + "/sleep?namespace=default", 64 << 10},
		{http.MethodPost, "/actors/" + aid + "/reschedule?namespace=default", 64 << 10},
	}
	malformed := []struct{ name, body string }{
		{"empty", ""},
		{"truncated JSON", `{"name":`},
		{"an array", `[]`},
		{"a string", `"x"`},
		{"invalid UTF-8", "{\"name\":\"\xff\"}"},
		{"deep nesting", strings.Repeat("[", 10000) + strings.Repeat("]", 10000)},
		{"a huge number", `{"name":1e999999}`},
		{"an unknown field", `{"nope":1}`},
		{"a NUL", "{\"name\":\"a\x00\"}"},
	}
	attempts, bypasses := 0, 0
	check := func(what string, a answer, status int, key string) {
		attempts++
		ok := a.err == nil && a.errorKey() != "" && a.status >= 400 && a.status < 500
		if status != 0 {
			ok = ok && a.status == status && a.errorKey() == key
		}
		if !ok {
			bypasses++
			want := "a JSON 4xx"
			if status != 0 {
				want = fmt.Sprintf("%d %s", status, key)
			}
			t.Errorf("%s: %v, want %s", what, a, want)
		}
	}
	for _, ep := range endpoints {
		name := ep.method + " " + ep.target
		for _, chunked := range []bool{false, true} {
			check(fmt.Sprintf("%s, one byte over %d (chunked %v)", name, ep.limit, chunked),
				exchange(addr, request(ep.method, ep.target, jsonOf(ep.limit+1), chunked)), 413, "guard.invalid_request_body")
		}
		check(name+", 25 MiB", exchange(addr, request(ep.method, ep.target, jsonOf(25<<20), false)), 413, "guard.invalid_request_body")
		a := exchange(addr, request(ep.method, ep.target, jsonOf(ep.limit), false))
		check(name+", at the limit", a, 0, "")
		if a.errorKey() == "guard.invalid_request_body" {
			t.Errorf("%s: a body at the limit refused for its size", name)
		}
		for _, m := range malformed {
			check(name+", "+m.name, exchange(addr, request(ep.method, ep.target, m.body, false)), 0, "")
		}
	}

	// 40 chunked bodies of 8 MiB, 8 at a time, each refused after its bound: nothing of them
	// stays in the engine.
	const big, rounds, parallel = 8 << 20, 40, 8
	before := rss(e)
	peakRSS := sampleRSS(e)
	raw := request(http.MethodPost, "/actors?namespace=default", jsonOf(big), true)
	results := make(chan answer, rounds)
	sem := make(chan struct{}, parallel)
	for range rounds {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			results <- exchange(addr, raw)
		}()
	}
	for range rounds {
		check("POST /actors, 8 MiB chunked", <-results, 413, "guard.invalid_request_body")
	}
	peak := peakRSS()
	healthy(t, e)
	growth := peak - before
	t.Logf("figure: REST bodies: %d attempts on %d endpoints (over the bound by length and chunked, 25 MiB, at the bound, %d malformed kinds; then %d chunked 8 MiB bodies, %d at a time), %d answered otherwise than a JSON 4xx, 0 crashes; RSS %.1f MiB before the large ones, %.1f MiB at most (+%.1f MiB)",
		attempts, len(endpoints), len(malformed), rounds, parallel, bypasses, mib(before), mib(peak), mib(growth))
	if growth > 64<<20 {
		t.Errorf("the engine grew by %.1f MiB under large bodies; want under 64 MiB", mib(growth))
	}
}
