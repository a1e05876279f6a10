package reference

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

func init() {
	register(
		scenario{name: "header_bombs", doc: "90 and 200 header fields, one header of 100 KiB, 2 MiB of headers", run: headerBombs},
		scenario{name: "body_limits", doc: "REST bodies around each endpoint's bound: 60 KiB and 1 MiB of runner-config metadata, a 100 KiB namespace, a 3 MiB actor", run: bodyLimits},
	)
}

// headers is n header fields of value v.
func headers(n int, v string) http.Header {
	h := http.Header{}
	for i := range n {
		h.Set(fmt.Sprintf("X-H%d", i), v)
	}
	return h
}

// headerBombs: heads within and over the engines' bounds. Both take 90 header fields and
// refuse 200 with 431; berth also refuses a 100 KiB header, which the reference takes (its
// heads may reach about 400 KiB). 2 MiB of headers is refused by both, the reference by a
// 431 or a reset connection.
func headerBombs(s *Session) {
	for _, c := range []struct {
		step   string
		header http.Header
		code   string // berth's answer; "" when it takes the request
	}{
		{"90 headers", headers(90, "v"), ""},
		{"200 headers", headers(200, "v"), "guard.too_many_request_headers"},
		{"one 100 KiB header", headers(1, strings.Repeat("a", 100<<10)), "guard.request_header_fields_too_large"},
	} {
		r := s.Do(Request{Method: http.MethodGet, Path: "/health", Header: c.header})
		checkHeaderRefusal(s, c.step, r, c.code)
		s.Record(c.step, errorOf(r))
	}
	r := s.Do(Request{Method: http.MethodGet, Path: "/health", Header: headers(262, strings.Repeat("a", 8000)), Timeout: 30 * time.Second})
	checkHeaderRefusal(s, "2 MiB of headers", r, "guard.request_header_fields_too_large")
	s.Record("2 MiB of headers", map[string]any{"refused": r.Err != nil || r.Status == http.StatusRequestHeaderFieldsTooLarge})
}

// checkHeaderRefusal fails a berth target's session unless r is 200 (code "") or the JSON
// 431 code.
func checkHeaderRefusal(s *Session, step string, r Reply, code string) {
	s.T.Helper()
	if s.Target.Reference {
		return
	}
	got := errorOf(r)["error"]
	switch {
	case code == "" && r.Status != http.StatusOK:
		s.T.Errorf("%s: %s answered %d %v (%v), want 200", s.Target.Name, step, r.Status, got, r.Err)
	case code != "" && (r.Status != http.StatusRequestHeaderFieldsTooLarge || got != code):
		s.T.Errorf("%s: %s answered %d %v (%v), want 431 %s", s.Target.Name, step, r.Status, got, r.Err, code)
	}
}

// bodyLimits: bodies on each side of an endpoint's bound. Both engines take 60 KiB of
// runner-config metadata; the reference takes 1 MiB too, which berth refuses (400
// runner_config.invalid: a config is one value of its store); berth refuses a 100 KiB
// namespace body and a 3 MiB actor body for their size, with 413, where the reference reads
// them and answers 400 for the namespace's name and for the size.
func bodyLimits(s *Session) {
	config := func(size int) map[string]any {
		meta := map[string]any{"x": strings.Repeat("a", size)}
		return map[string]any{"datacenters": map[string]any{"default": map[string]any{"normal": map[string]any{}, "metadata": meta}}}
	}
	r := s.Do(Request{Method: http.MethodPut, Path: "/runner-configs/limits?namespace={ns}", Body: config(60 << 10)})
	s.Record("PUT /runner-configs with 60 KiB of metadata", map[string]any{"status": r.Status})
	r = s.Do(Request{Method: http.MethodPut, Path: "/runner-configs/limits?namespace={ns}", Body: config(1 << 20)})
	checkClientError(s, r)
	s.Record("PUT /runner-configs with 1 MiB of metadata", errorOf(r))
	r = s.Do(Request{Method: http.MethodPost, Path: "/namespaces",
		Body: map[string]any{"name": "limits-big", "display_name": strings.Repeat("a", 100<<10)}})
	checkClientError(s, r)
	s.Record("POST /namespaces with 100 KiB", errorOf(r))
	r = s.Do(Request{Method: http.MethodPost, Path: "/actors?namespace={ns}",
		Body: map[string]any{"name": "a", "runner_name_selector": "p", "crash_policy": "sleep", "input": strings.Repeat("A", 3<<20)}})
	checkClientError(s, r)
	s.Record("POST /actors with 3 MiB", errorOf(r))
}
