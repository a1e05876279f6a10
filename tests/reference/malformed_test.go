package reference

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/berthhq/berth/pkg/id"
)

func init() {
	register(
		scenario{name: "malformed_bodies", doc: "bodies where none is taken, over 20 MiB, not JSON, not UTF-8, not the JSON an endpoint takes", run: malformedBodies},
		scenario{name: "malformed_requests", doc: "bad paths, ids, queries and methods", run: malformedRequests},
	)
}

// malformedBodies: bodies where none is taken, too large, or not the JSON an endpoint takes.
// Every request gets an answer; on berth always a JSON 4xx.
func malformedBodies(s *Session) {
	oneMiB := bytes.Repeat([]byte("a"), 1<<20)
	big := bytes.Repeat([]byte("a"), 25<<20)
	for _, ep := range []struct{ method, path string }{
		{http.MethodPut, "/health"},
		{http.MethodPost, "/datacenters"},
		{http.MethodPost, "/actors/names?namespace={ns}"},
		{http.MethodPut, "/envoys?namespace={ns}"},
	} {
		r := s.Do(Request{Method: ep.method, Path: ep.path, Body: oneMiB})
		checkClientError(s, r)
		s.Record(ep.method+" "+ep.path+" with 1 MiB", errorOf(r))
		r = s.Do(Request{Method: ep.method, Path: ep.path, Body: big})
		checkClientError(s, r)
		s.Record(ep.method+" "+ep.path+" with 25 MiB", tooLarge(r))
	}
	r := s.Do(Request{Method: http.MethodPost, Path: "/actors?namespace={ns}", Body: big})
	checkClientError(s, r)
	s.Record("POST /actors with 25 MiB", tooLarge(r))
	for _, b := range []struct{ name, body string }{
		{"truncated JSON", `{"name":`},
		{"an array", `[]`},
		{"a string", `"x"`},
		{"invalid UTF-8", "{\"name\":\"\xff\",\"runner_name_selector\":\"p\",\"crash_policy\":\"sleep\"}"},
		{"deep nesting", strings.Repeat("[", 10000) + strings.Repeat("]", 10000)},
		{"a huge number", `{"name":"a","runner_name_selector":"p","crash_policy":"sleep","input":1e999999}`},
		{"an unknown field", `{"name":"a","runner_name_selector":"p","crash_policy":"sleep","nope":1}`},
		{"a bad crash policy", `{"name":"a","runner_name_selector":"p","crash_policy":"never"}`},
		{"no name", `{"runner_name_selector":"p","crash_policy":"sleep"}`},
		{"a null name", `{"name":null,"runner_name_selector":"p","crash_policy":"sleep"}`},
	} {
		r := s.Do(Request{Method: http.MethodPost, Path: "/actors?namespace={ns}", Body: b.body})
		checkClientError(s, r)
		s.Record("POST /actors with "+b.name, errorOf(r))
	}
}

// malformedRequests: bad paths, ids, queries and methods.
func malformedRequests(s *Session) {
	longID := strings.Repeat("a", 31)
	otherDC := id.New(9).String() // a datacenter label the topology does not have
	for _, c := range []struct{ name, method, path string }{
		{"an unknown path", http.MethodGet, "/nope"},
		{"a path under an actor", http.MethodGet, "/actors/x/y/z?namespace={ns}"},
		{"a malformed actor id", http.MethodDelete, "/actors/not-an-id?namespace={ns}"},
		{"a long actor id", http.MethodDelete, "/actors/" + longID + "?namespace={ns}"},
		{"an actor id of another datacenter", http.MethodDelete, "/actors/" + otherDC + "?namespace={ns}"},
		{"an unknown actor id", http.MethodDelete, "/actors/" + id.New(1).String() + "?namespace={ns}"},
		{"no namespace", http.MethodGet, "/actors?name=a"},
		{"an unknown namespace", http.MethodGet, "/actors?namespace=nope-nope&name=a"},
		{"an unknown query parameter", http.MethodGet, "/actors?namespace={ns}&name=a&nope=1"},
		{"a bad percent escape", http.MethodGet, "/actors?namespace={ns}&name=%zz"},
		{"a repeated parameter", http.MethodGet, "/actors?namespace={ns}&name=a&name=b"},
		{"a bad bool", http.MethodGet, "/actors?namespace={ns}&name=a&include_destroyed=yes"},
		{"a bad id in a list", http.MethodGet, "/actors?namespace={ns}&actor_ids=nope"},
		{"a method the path lacks", http.MethodPatch, "/actors?namespace={ns}"},
		{"DELETE /health", http.MethodDelete, "/health"},
		{"a key without a name", http.MethodGet, "/actors?namespace={ns}&key=k"},
	} {
		r := s.Do(Request{Method: c.method, Path: c.path})
		checkClientError(s, r)
		s.Record(c.name, errorOf(r))
	}
}

// tooLarge records the answer to a body over the 20 MiB limit: refused, by a 413 or, as
// the reference does about half the time, by a reset connection (never by berth, whose
// answer checkClientError checks).
func tooLarge(r Reply) map[string]any {
	return map[string]any{"refused": r.Err != nil || r.Status == http.StatusRequestEntityTooLarge}
}

// checkClientError fails a berth target's session unless r is a JSON error with a 4xx
// status: every bad input gets one, never a reset, an empty body or a 5xx.
func checkClientError(s *Session, r Reply) {
	s.T.Helper()
	if s.Target.Reference {
		return
	}
	e := errorOf(r)
	if _, ok := e["error"]; !ok || r.Status < 400 || r.Status >= 500 {
		s.T.Errorf("%s: answered %v (%d %.200s), want a JSON 4xx", s.Target.Name, e, r.Status, r.Body)
	}
}
