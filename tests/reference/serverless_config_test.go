package reference

import (
	"encoding/json"
	"net/http"
	"strings"
)

func init() {
	register(scenario{name: "serverless_config",
		doc: "serverless runner configs: PUT with each validation error, the destination policy on write, GET with variant, refresh-metadata and the health check without an endpoint, DELETE",
		run: serverlessConfig})
}

// serverlessConfig writes serverless configs whose url names no reachable endpoint
// (example.invalid does not resolve; both engines fetch /metadata on the write and carry on),
// so that it needs no app: the config API alone (docs/serverless.md, § 2).
func serverlessConfig(s *Session) {
	put := func(step, name string, cfg map[string]any) {
		body := map[string]any{"datacenters": map[string]any{"default": cfg}}
		r := s.Do(Request{Method: http.MethodPut, Path: "/runner-configs/" + name + "?namespace={ns}", Body: body})
		s.Record(step, answerOf(r))
	}
	sl := func(fields map[string]any) map[string]any {
		base := map[string]any{"url": "http://example.invalid/api/rivet", "request_lifespan": 3600}
		for k, v := range fields {
			base[k] = v
		}
		return map[string]any{"serverless": base}
	}
	put("PUT a serverless config with the defaults", "sl", sl(nil))
	put("PUT it again unchanged", "sl", sl(nil))
	// Limits that want no runner: with min_runners 1 both engines open a GET /start at once
	// (docs/serverless.md § 5.1), and whether its failure at example.invalid shows as the
	// pool's error in the listings below depends only on how fast each engine is.
	put("PUT it with other limits", "sl", sl(map[string]any{"max_runners": 5, "max_concurrent_actors": 7, "slots_per_runner": 2}))
	put("PUT it with headers", "sl", sl(map[string]any{"headers": map[string]any{"X-Upper": "secret"}, "metadata_poll_interval": 7000}))
	many := map[string]any{}
	for i := range 17 {
		many["x-h"+string(rune('a'+i))] = "v"
	}
	for _, tc := range []struct {
		step   string
		fields map[string]any
	}{
		{"url empty", map[string]any{"url": ""}},
		{"url not a url", map[string]any{"url": "not a url"}},
		{"url ftp", map[string]any{"url": "ftp://h/x"}},
		{"url without host", map[string]any{"url": "http://"}},
		{"url with port 70000", map[string]any{"url": "http://h:70000/"}},
		{"url with credentials", map[string]any{"url": "http://u:p@h/"}},
		{"url private", map[string]any{"url": "http://10.0.0.1/api"}},
		{"url link-local", map[string]any{"url": "http://169.254.169.254/"}},
		{"17 headers", map[string]any{"headers": many}},
		{"header name with a space", map[string]any{"headers": map[string]any{"bad name": "v"}}},
		{"header name of 129 bytes", map[string]any{"headers": map[string]any{strings.Repeat("n", 129): "v"}}},
		{"header value with a newline", map[string]any{"headers": map[string]any{"n": "a\nb"}}},
		{"header value of 4097 bytes", map[string]any{"headers": map[string]any{"n": strings.Repeat("v", 4097)}}},
		{"slots_per_runner 0", map[string]any{"slots_per_runner": 0}},
		{"request_lifespan 60 with the default drain", map[string]any{"request_lifespan": 60}},
		{"drain_grace_period 1801", map[string]any{"request_lifespan": 100000, "drain_grace_period": 1801}},
		{"url ftp and slots 0", map[string]any{"url": "ftp://h/", "slots_per_runner": 0}},
	} {
		put("PUT "+tc.step, "bad", sl(tc.fields))
	}
	for _, tc := range []struct {
		step string
		cfg  map[string]any
	}{
		{"no url", map[string]any{"serverless": map[string]any{"request_lifespan": 3600}}},
		{"request_lifespan -1", sl(map[string]any{"request_lifespan": -1})},
		{"neither kind", map[string]any{}},
	} {
		r := s.Do(Request{Method: http.MethodPut, Path: "/runner-configs/bad?namespace={ns}",
			Body: map[string]any{"datacenters": map[string]any{"default": tc.cfg}}})
		s.Record("PUT "+tc.step, errorOf(r))
	}
	for _, q := range []string{"", "&variant=serverless", "&variant=normal", "&runner_name=sl"} {
		r := s.Do(Request{Method: http.MethodGet, Path: "/runner-configs?namespace={ns}" + q})
		s.Record("GET /runner-configs"+q, r.JSON())
	}
	// Loopback: the reference allows it by default, berth does not (an intended difference).
	put("PUT url loopback", "lo", map[string]any{"serverless": map[string]any{"url": "http://127.0.0.1:1/api", "request_lifespan": 3600}})
	s.Do(Request{Method: http.MethodDelete, Path: "/runner-configs/lo?namespace={ns}"})
	r := s.Do(Request{Method: http.MethodPost, Path: "/runner-configs/nope/refresh-metadata?namespace={ns}", Body: map[string]any{}})
	s.Record("refresh-metadata of no pool", errorOf(r))
	for _, tc := range []struct{ step, url string }{
		{"health check of a private address", "http://10.0.0.1/api"},
		{"health check of an empty url", ""},
		{"health check of ftp", "ftp://h/"},
	} {
		r := s.Do(Request{Method: http.MethodPost, Path: "/runner-configs/serverless-health-check?namespace={ns}",
			Body: map[string]any{"url": tc.url}})
		s.Record(tc.step, r.JSON())
	}
	r = s.Do(Request{Method: http.MethodDelete, Path: "/runner-configs/sl?namespace={ns}"})
	s.Record("DELETE", answerOf(r))
	r = s.Do(Request{Method: http.MethodGet, Path: "/runner-configs?namespace={ns}&variant=serverless"})
	s.Record("GET after DELETE", r.JSON())
}

// answerOf is a reply's status and its JSON body, whole.
func answerOf(r Reply) map[string]any {
	if r.Err != nil {
		return map[string]any{"answer": "no answer"}
	}
	var body any
	if json.Unmarshal(r.Body, &body) != nil {
		body = string(r.Body)
	}
	return map[string]any{"status": r.Status, "body": body}
}
