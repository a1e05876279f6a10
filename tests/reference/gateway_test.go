package reference

import (
	"net/http"
	"slices"
	"strings"
)

func init() {
	register(
		scenario{name: "gateway_headers", doc: "what an actor receives of a gateway request and what the client receives of its answer, CORS preflight", run: gatewayHeaders},
	)
}

// gatewayHeaders: what the actor receives of a request through the gateway (method, path,
// query, body, headers) and what the client receives of the actor's answer.
func gatewayHeaders(s *Session) {
	s.RunnerConfig("pool")
	s.StartRunner(RunnerOptions{Pool: "pool"})
	aid, _ := runningActor(s, "pool", "sleep")
	h := http.Header{}
	h.Set("X-Custom", "one")
	h.Add("X-Multi", "a")
	h.Add("X-Multi", "b")
	h.Set("Origin", "https://app.example")
	h.Set("Cookie", "session=1")
	h.Set("User-Agent", "diff/1")
	r := s.Do(Request{Method: http.MethodPost, Path: "/gateway/" + aid + "/echo/a%2Fb?q=1&q=2&x=%20y", Body: "hello",
		Header: h, Anonymous: true})
	e := echoOf(r)
	received := map[string]any{}
	for k, v := range e.Headers {
		switch k {
		case "x-rivet-ray-id":
			received[k] = v == r.Header.Get("X-Rivet-Ray-Id")
		case "x-forwarded-for":
			received[k] = v != ""
		case "host", "content-length":
			received[k] = "<set>"
		default:
			received[k] = v
		}
	}
	s.Record("the actor received", map[string]any{"method": e.Method, "path": e.Path, "body": e.Body, "headers": received})
	s.Record("the client received", map[string]any{"status": r.Status, "headers": responseHeaders(r)})

	// An actor's own status and headers pass through.
	r = s.Do(Request{Method: http.MethodGet, Path: "/gateway/" + aid + "/status/418", Anonymous: true})
	s.Record("actor status", map[string]any{"status": r.Status, "body": string(r.Body), "headers": responseHeaders(r)})
	// CORS preflight, answered without the actor.
	ph := http.Header{}
	ph.Set("Origin", "https://app.example")
	ph.Set("Access-Control-Request-Method", "PUT")
	ph.Set("Access-Control-Request-Headers", "x-a, x-b")
	r = s.Do(Request{Method: http.MethodOptions, Path: "/gateway/" + aid + "/x", Header: ph, Anonymous: true})
	s.Record("preflight", map[string]any{"status": r.Status, "headers": responseHeaders(r)})
}

// responseHeaders are an answer's headers but those that vary by engine without meaning
// (date, content-length, the ray id's value: its presence is kept).
func responseHeaders(r Reply) map[string]any {
	out := map[string]any{}
	for k, v := range r.Header {
		k = strings.ToLower(k)
		switch k {
		case "date", "content-length", "server":
			continue
		case "x-rivet-ray-id":
			out[k] = "<ray>"
			continue
		case "vary":
			// Values and order differ in wording; the set is what a cache sees.
			var parts []string
			for _, x := range v {
				for _, p := range strings.Split(x, ",") {
					parts = append(parts, strings.ToLower(strings.TrimSpace(p)))
				}
			}
			slices.Sort(parts)
			out[k] = strings.Join(slices.Compact(parts), ", ")
			continue
		}
		out[k] = strings.Join(v, ", ")
	}
	return out
}
